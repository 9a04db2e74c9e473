"""`py-spy dump` of a process on the probe's node (the bundle's and `stacks`' Python stacks),
bounded in time and size, never raising. Standard library only.
"""

from __future__ import annotations

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
