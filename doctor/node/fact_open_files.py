"""The node-side fact `open_files` (RLD107): each Ray process of the node, its open-files limit
and how many files it holds open. Standard library only, read from /proc.
"""

from __future__ import annotations

from rldoctor.node.facts import fact
from rldoctor.node.processes import _cmdline, _raylet_above, node_processes, process_name

# Open files of a node's Ray processes (RLD107): /proc/PID/limits against /proc/PID/fd.
OPEN_FILES_DEADLINE_S = 0.3
OPEN_FILES_WORKERS_KEPT = 10
CONTROL_PLANE_ROLES = ("gcs", "raylet")


def nofile_limit_of(pid: int) -> tuple:
    """(soft, hard) "Max open files" of `pid` (None for unlimited), or (None, None)."""
    try:
        with open(f"/proc/{pid}/limits") as f:
            for line in f:
                if line.startswith("Max open files"):
                    soft, hard = line.split()[3:5]
                    return (None if soft == "unlimited" else int(soft),
                            None if hard == "unlimited" else int(hard))
    except (OSError, ValueError):
        pass
    return None, None


@fact("open_files")
def open_files_here() -> dict:
    """Each Ray process of this node (GCS on the head, raylet, agents, workers): its open-files
    limit and how many files it has open now. Never raises; a process that ends while read
    is counted as gone.

    {"status", "processes": [{"pid", "role", "name", "soft", "hard", "open"}], "workers_total",
    "workers_left_out", "gone", "duration_s"}: every control-plane process, and the
    OPEN_FILES_WORKERS_KEPT other processes nearest their limit.
    """
    import os
    import time

    started = time.monotonic()
    deadline = started + OPEN_FILES_DEADLINE_S
    raylet = _raylet_above(os.getpid())
    if not raylet:
        return {"status": "unavailable", "why": "this probe is not a descendant of a raylet",
                "processes": []}
    roles, commands, order = node_processes(raylet, _cmdline(raylet), deadline)
    rows, gone, status = [], 0, "ok"
    for pid in order:
        if time.monotonic() > deadline and roles[pid] not in CONTROL_PLANE_ROLES:
            status = "partial"
            continue
        soft, hard = nofile_limit_of(pid)
        try:
            count = len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            gone += 1  # it ended while read, or is not ours to read
            continue
        rows.append({"pid": pid, "role": roles[pid], "name": process_name(commands.get(pid) or []),
                     "soft": soft, "hard": hard, "open": count})
    control = [r for r in rows if r["role"] in CONTROL_PLANE_ROLES]
    others = sorted((r for r in rows if r["role"] not in CONTROL_PLANE_ROLES),
                    key=lambda r: -(r["open"] / r["soft"] if r["soft"] else 0))
    out = {"status": status, "processes": control + others[:OPEN_FILES_WORKERS_KEPT],
           "workers_total": sum(1 for r in rows if r["role"] == "worker"),
           "processes_total": len(rows),
           "left_out": max(0, len(others) - OPEN_FILES_WORKERS_KEPT), "gone": gone,
           "duration_s": round(time.monotonic() - started, 3)}
    if status == "partial":
        out["why"] = f"stopped reading workers after {OPEN_FILES_DEADLINE_S:g}s"
    return out
