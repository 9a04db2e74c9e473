"""What the incident bundle reads on the nodes themselves, through the probe actors.

Run with `NodeProbe.call_here(func, ...)`; this module is pickled by value (see
`register`), and so are the node-side readers it shares (memory and its cgroup limit, disks:
rldoctor.node.fact_memory, .fact_disks, .processes), so the nodes need nothing of rldoctor and
host.json states the same memory limit as snapshot.json. Standard library only; every read is
bounded and a missing file is an empty answer, never an exception.
"""

from __future__ import annotations

# The node-side reads the probes make, shared: pickled by value with them (facts.register).
from rldoctor.node.fact_disks import disk_of
from rldoctor.node.fact_memory import memory_here
from rldoctor.node.processes import open_files_of


def _read(path: str, limit: int = 4096) -> str | None:
    try:
        with open(path, errors="replace") as f:
            return f.read(limit).strip()
    except OSError:
        return None


def _disk(path: str | None) -> dict | None:
    if not path:
        return None
    total, free = disk_of(path)
    if total is None:
        return {"path": path, "error": "not found"}
    return {"path": path, "total_bytes": total, "free_bytes": free}


def host_details(session_dir: str | None) -> dict:
    """Kernel, CPUs, load, cgroup limits, disks of the temp dirs, Python of this node."""
    import os
    import sys
    import tempfile

    uname = os.uname()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    uptime = _read("/proc/uptime")
    cgroup = {  # memory: the raylet's own cgroup, read by the probes' code (as in snapshot.json)
        "memory": memory_here(),
        "cpu_max": _read("/sys/fs/cgroup/cpu.max") or _read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
        "pids_max": _read("/sys/fs/cgroup/pids.max"),
    }
    ray_temp = os.path.dirname(session_dir.rstrip("/")) if session_dir else None
    return {
        "kernel": f"{uname.sysname} {uname.release}",
        "kernel_build": uname.version,
        "machine": uname.machine,
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "load_avg": list(os.getloadavg()),
        "uptime_s": float(uptime.split()[0]) if uptime else None,
        "cgroup": cgroup,
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "disks": {"ray_temp_dir": _disk(ray_temp), "session_dir": _disk(session_dir),
                  "system_temp_dir": _disk(tempfile.gettempdir()), "dev_shm": _disk("/dev/shm")},
    }


def tune_result_tails(pid: int, max_rows: int, max_bytes: int) -> list[dict]:
    """The last rows of every Tune result.json the process `pid` has open for writing.

    Tune's driver keeps each running trial's result.json open, so its open files say
    where the results are without being told the experiment's folder.
    """
    import os

    found = []
    for target in open_files_of(pid):
        if os.path.basename(target) != "result.json":
            continue
        try:
            with open(target, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - max_bytes))
                data = f.read(max_bytes)
        except OSError:
            continue
        lines = data.split(b"\n")
        if size > max_bytes:
            lines = lines[1:]  # started mid-row
        rows = [line for line in lines if line.strip()][-max_rows:]
        found.append({"path": target, "trial": os.path.basename(os.path.dirname(target)),
                      "size": size, "rows": [r.decode("utf-8", errors="replace") for r in rows]})
        if len(found) >= 16:
            break
    return found


def register() -> None:
    """Pickle this module's functions by value, with the node-side readers they share (every
    module of this folder: rldoctor.node.facts.register), so nodes need not have rldoctor."""
    from rldoctor.node import facts

    facts.register()
