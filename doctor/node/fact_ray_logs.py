"""The node-side fact `ray_logs` (RLD106, RLD107, RLD305, RLD404): what Ray's own logs on the
node say, read from the tails of the logs its raylet, GCS and runtime env agent hold open.
Standard library only.
"""

from __future__ import annotations

from rldoctor.node.fact_open_files import OPEN_FILES_DEADLINE_S
from rldoctor.node.facts import fact
from rldoctor.node.processes import _cmdline, _raylet_above, node_processes, open_files_of

# What Ray's own logs on this node say (RLD106, RLD107, RLD404): the tails of the log files
# its raylet, GCS and runtime env agent hold open, matched against Ray's own words.
LOG_TAIL_BYTES = 256 * 1024
RAY_LOG_PATTERNS = {
    "workers_not_registered": "have not registered within the timeout",
    "no_available_ports": "No available ports",
    "too_many_open_files": "Too many open files",
    "disk_over_capacity": "Object creation will fail if spilling is required",
}
RUNTIME_ENV_FAILED = "Failed to create runtime env"
LOG_LINES_KEPT = 3


def _open_logs_of(pid: int) -> list:
    """The .out/.log/.err files process `pid` holds open (its own logs)."""
    return [path for path in open_files_of(pid) if path.endswith((".out", ".log", ".err"))]


def tail_of(path: str, max_bytes: int = LOG_TAIL_BYTES) -> tuple:
    """(the last `max_bytes` of a file as text, None) or ("", why it could not be read).
    A file that rotates or shrinks while read gives what was there."""
    import os

    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - max_bytes))
            data = f.read(max_bytes)
    except OSError as exc:
        return "", f"{os.path.basename(path)}: {exc.strerror or exc}"
    text = data.decode("utf-8", errors="replace")
    if size > max_bytes:  # the first line was cut
        text = text.partition("\n")[2]
    return text, None


def log_signals(text: str) -> dict:
    """{signal: {"count", "lines": the last LOG_LINES_KEPT lines}} of RAY_LOG_PATTERNS in `text`."""
    found: dict = {}
    for line in text.splitlines():
        for key, words in RAY_LOG_PATTERNS.items():
            if words in line:
                entry = found.setdefault(key, {"count": 0, "lines": []})
                entry["count"] += 1
                entry["lines"] = (entry["lines"] + [line.strip()[:400]])[-LOG_LINES_KEPT:]
    return found


def runtime_env_failures(text: str) -> list:
    """Each "Failed to create runtime env" of a runtime env agent's log, with what it was
    asked to build (pip packages, conda, working_dir, never env_vars) and pip's (or conda's)
    last error line. The newest last."""
    import json
    import re

    stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
    failures, current = [], None
    for line in text.splitlines():
        if RUNTIME_ENV_FAILED in line:
            current = {"at": line[:19] if stamp.match(line) else None, "what": {}, "reason": None}
            raw = line.split(RUNTIME_ENV_FAILED, 1)[1].strip().rstrip(".")
            try:
                env = json.loads(raw)
            except ValueError:
                env = {}
            current["what"] = runtime_env_summary(env)
            failures.append(current)
        elif current is not None and stamp.match(line) and "giving up" in line:
            current["gave_up"] = True
            current = None
        elif current is not None and line.strip().startswith(("ERROR:", "error:")):
            current["reason"] = line.strip()[:400]
        elif current is not None and not current["reason"] and (
                "Exception" in line or "Error" in line) and not line.startswith(" "):
            current["error"] = line.strip()[:400]
    return failures[-20:]


def runtime_env_summary(env) -> dict:
    """What a runtime_env asks to build, safe to print: pip and conda packages, working_dir
    and py_modules locations, the keys present. Never env_vars values."""
    if not isinstance(env, dict):
        return {}
    out: dict = {"keys": sorted(k for k in env if not k.startswith("_"))}
    pip = env.get("pip")
    if isinstance(pip, dict):
        pip = pip.get("packages")
    if isinstance(pip, list):
        out["pip"] = [str(p)[:200] for p in pip[:50]]
    elif isinstance(pip, str):
        out["pip"] = [pip[:200]]
    conda = env.get("conda")
    if isinstance(conda, (str, dict)):
        out["conda"] = conda[:200] if isinstance(conda, str) else sorted(conda)[:10]
    for key in ("working_dir", "py_modules"):
        if isinstance(env.get(key), str):
            out[key] = env[key][:300]
    return out


@fact("ray_logs")
def ray_logs_here() -> dict:
    """Ray's own words on this node: RAY_LOG_PATTERNS in the tails of the logs its raylet and
    (on the head) GCS hold open, and the runtime env agent's failures. Never raises."""
    import os
    import time

    started = time.monotonic()
    out = {"status": "ok", "signals": {}, "runtime_env_failures": [], "files": [], "errors": []}
    raylet = _raylet_above(os.getpid())
    if not raylet:
        return {**out, "status": "unavailable", "why": "this probe is not a descendant of a raylet"}
    roles, _, order = node_processes(raylet, _cmdline(raylet), started + OPEN_FILES_DEADLINE_S)
    for pid in order:
        role = roles[pid]
        if role not in ("raylet", "gcs", "runtime_env_agent"):
            continue
        for path in _open_logs_of(pid):
            name = os.path.basename(path)
            if role == "runtime_env_agent" and not name.startswith("runtime_env_agent"):
                continue  # the agent's inherited stdout and stderr are the raylet's files
            if name.endswith(".log") and role != "runtime_env_agent":
                continue
            text, error = tail_of(path)
            if error:
                out["errors"].append(error)
                continue
            out["files"].append({"role": role, "file": name})
            if role == "runtime_env_agent":
                out["runtime_env_failures"] += runtime_env_failures(text)
            else:
                for key, found in log_signals(text).items():
                    found["file"] = name
                    out["signals"].setdefault(key, found)
    out["duration_s"] = round(time.monotonic() - started, 3)
    return out
