"""Code that runs on the cluster's nodes.

These functions are shipped to the workers by value (see `register`), so a
production cluster needs nothing of rldoctor installed. They import only the
standard library and ray, read package versions from metadata instead of
importing torch, and read host facts from /proc and /sys.
"""

from __future__ import annotations

PROBED_PACKAGES = ("torch", "gymnasium")
# Settings of Ray's memory monitor, read from the environment the raylet gave its workers.
MEMORY_MONITOR_ENV = ("RAY_memory_usage_threshold", "RAY_memory_monitor_refresh_ms",
                      "RAY_min_memory_free_bytes")


def versions_here() -> dict:
    """Ray, Python, RLlib, torch and gymnasium versions of this process's environment."""
    import importlib.metadata as metadata
    import importlib.util
    import platform

    def version_of(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    ray_version = version_of("ray")
    try:
        has_rllib = importlib.util.find_spec("ray.rllib") is not None
    except (ImportError, ValueError):
        has_rllib = False
    found = {"ray": ray_version, "python": platform.python_version(),
             "rllib": ray_version if has_rllib else None}
    for dist in PROBED_PACKAGES:
        found[dist] = version_of(dist)
    return found


def host_here() -> dict:
    """Memory and OOM-killer facts of the host (or container) this runs on."""
    import os
    import socket

    def read_keyed(path, sep=None):
        out = {}
        try:
            with open(path) as f:
                for line in f:
                    parts = line.replace(":", " ").split() if sep is None else line.split(sep)
                    if len(parts) >= 2:
                        out[parts[0]] = parts[1]
        except OSError:
            pass
        return out

    meminfo = read_keyed("/proc/meminfo")
    vmstat = read_keyed("/proc/vmstat")
    cgroup_events = read_keyed("/sys/fs/cgroup/memory.events")
    host = {
        "hostname": socket.gethostname(),
        "mem_total_bytes": int(meminfo["MemTotal"]) * 1024 if "MemTotal" in meminfo else None,
        "mem_available_bytes": (int(meminfo["MemAvailable"]) * 1024
                                if "MemAvailable" in meminfo else None),
        "kernel_oom_kills": int(vmstat["oom_kill"]) if "oom_kill" in vmstat else None,
        "cgroup_oom_kills": (int(cgroup_events["oom_kill"])
                             if "oom_kill" in cgroup_events else None),
        "memory_monitor": {k: os.environ.get(k) for k in MEMORY_MONITOR_ENV},
    }
    host["shm_total_bytes"], host["shm_free_bytes"] = disk_of("/dev/shm")
    host["raylet"] = raylet_settings()
    for key in ("plasma_directory", "fallback_directory", "spill_directory"):
        path = host["raylet"].get(key)
        if path:
            total, free = disk_of(path)
            host["raylet"][f"{key}_total_bytes"] = total
            host["raylet"][f"{key}_free_bytes"] = free
    return host


def disk_of(path: str):
    """(total, free) bytes of the filesystem holding `path`, or (None, None)."""
    import os

    try:
        st = os.statvfs(path)
    except OSError:
        return None, None
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def raylet_settings() -> dict:
    """The object store flags of this node's raylet, read from its command line.

    A worker is a child of its node's raylet; the raylet's flags say where the
    object store lives (`--plasma_directory`: /dev/shm, or a disk when /dev/shm was
    too small) and how big it is.
    """
    import json
    import os

    settings: dict = {}
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            args = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return settings
    if not args or not args[0].endswith("raylet"):
        return settings
    for arg in args[1:]:
        key, _, value = arg.lstrip("-").partition("=")
        if key in ("plasma_directory", "fallback_directory", "session_dir"):
            settings[key] = value
        elif key == "object_store_memory":
            settings[key] = int(value)
        elif key == "huge_pages":
            settings[key] = True
    spill = os.environ.get("RAY_object_spilling_directory")
    if not spill and os.environ.get("RAY_object_spilling_config"):
        try:
            spill = json.loads(os.environ["RAY_object_spilling_config"])["params"]["directory_path"]
        except (ValueError, KeyError, TypeError):
            spill = None
    settings["spill_directory"] = spill or settings.get("session_dir")
    settings["spill_directory_is_default"] = not spill
    return settings


def node_facts() -> dict:
    """Everything one probe learns about the node it runs on."""
    import ray

    return {"node_id": ray.get_runtime_context().get_node_id(),
            "versions": versions_here(), "host": host_here()}


PY_SPY_MAX_BYTES = 512 * 1024  # a dump of a process with hundreds of threads stays bounded


def py_spy_path() -> str | None:
    """py-spy beside this worker's Python (it is a dependency of rldoctor), else on PATH."""
    import os
    import shutil
    import sys

    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("py-spy")


def _py_spy_failure(pid: int, stderr: str) -> str:
    """Why py-spy could not dump `pid`, in words an on-call engineer can act on."""
    text = stderr.strip()
    if "Permission denied" in text or "Operation not permitted" in text:
        return (f"permission denied: py-spy may not attach to pid {pid} (run the workers and Ray "
                "as one user, or allow ptrace: kernel.yama.ptrace_scope=0 or CAP_SYS_PTRACE)")
    if "No such process" in text or "Check that the process is running" in text:
        return f"no such process: pid {pid} exited"
    if "Failed to find python version" in text:
        return f"pid {pid} is not a Python process (or has not started Python yet)"
    first = next((line for line in text.splitlines() if line.strip()), "no output")
    return f"py-spy failed: {first[:300]}"


def py_spy_dump(pid: int, timeout_s: float) -> dict:
    """`py-spy dump --pid PID` of a process on this node; never raises.

    {"status": "ok", "text", "duration_s"} or {"status": "failed", "error", "duration_s"}.
    py-spy pauses the process for the few milliseconds of the dump.
    """
    import os
    import subprocess
    import sys
    import time

    started = time.perf_counter()

    def failed(why: str) -> dict:
        return {"status": "failed", "error": why,
                "duration_s": round(time.perf_counter() - started, 3)}

    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return failed(f"no such process: {pid!r} is not a pid")
    try:
        with open(f"/proc/{pid}/stat") as f:
            if pid <= 0 or f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return failed(f"no such process: pid {pid} exited")
    except (OSError, IndexError):
        return failed(f"no such process: pid {pid} is not running on this node")
    exe = py_spy_path()
    if not exe:
        return failed(f"py-spy missing on the node (not beside {sys.executable}, not on PATH)")
    try:
        proc = subprocess.run([exe, "dump", "--pid", str(pid), "--full-filenames"],
                              capture_output=True, timeout=max(0.1, float(timeout_s)),
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return failed(f"timed out after {float(timeout_s):g}s (the process may be stopped, "
                      "or stuck in the kernel)")
    except OSError as exc:
        return failed(f"py-spy could not run: {exc.strerror or exc}")
    out = proc.stdout[:PY_SPY_MAX_BYTES].decode("utf-8", errors="replace")
    if proc.returncode != 0 or not out.strip():
        return failed(_py_spy_failure(pid, proc.stderr.decode("utf-8", errors="replace")))
    return {"status": "ok", "text": out, "truncated": len(proc.stdout) > PY_SPY_MAX_BYTES,
            "duration_s": round(time.perf_counter() - started, 3)}


def register() -> None:
    """Pickle this module's functions by value, so nodes need not have rldoctor."""
    import sys

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class NodeProbe:
    """A zero-CPU actor pinned to one node: its facts, round trips, object pulls."""

    def facts(self) -> dict:
        return node_facts()

    def ping(self) -> int:
        return 0

    def make(self, nbytes: int):
        """An object of `nbytes` that lives in this node's object store."""
        return b"\x01" * nbytes

    def pull(self, refs: list) -> float:
        """Seconds to fetch the object behind refs[0] onto this node."""
        import time

        import ray

        started = time.perf_counter()
        ray.get(refs[0])
        return time.perf_counter() - started

    def stack(self, pid: int, timeout_s: float) -> dict:
        """The Python stacks of process `pid` on this node (py-spy dump); never raises."""
        return py_spy_dump(pid, timeout_s)

    def call_here(self, func, *args):
        """Run `func(*args)` on this node: a function of another by-value module of rldoctor
        (the incident bundle reads host facts and Tune result files with it)."""
        return func(*args)
