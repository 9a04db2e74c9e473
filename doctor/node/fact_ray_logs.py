"""The node-side fact `ray_logs` (RLD106, RLD107, RLD305, RLD404 and every code a line of Ray's
proves): what Ray's own logs on the node say, read from the tails of the logs its raylet, GCS
and runtime env agent hold open, against the catalogue of Ray's lines that `check --from`
reads a dead cluster's logs with (rldoctor.raylog): the same lines give the same hits
(`log_lines`, which the live snapshot gathers into its own `log_lines` section) and the
counts the live checks read (`signals`: the catalogue's entries that name one). Standard
library only; the catalogue travels by value with the probes.
"""

from __future__ import annotations

from rldoctor.node.fact_open_files import OPEN_FILES_DEADLINE_S
from rldoctor.node.facts import fact
from rldoctor.node.processes import _cmdline, _flags, _raylet_above, node_processes, open_files_of
from rldoctor.raylog import catalogue as C
from rldoctor.raylog.hits import AsIs, Hits, NodeFacts, Source, section
from rldoctor.raylog.kinds import kind_of

# The tails of the log files a node's raylet, GCS and runtime env agent hold open: as much
# as `check --from` reads line by line of a file (rldoctor.inputs.logdir.scan.SMALL_BYTES).
LOG_TAIL_BYTES = 256 * 1024
LOG_LINES_KEPT = 3
# The runtime env agent's line that starts a failure's story (its catalogue entry's words).
RUNTIME_ENV_FAILED = C.BY_ID["runtime-env-agent"].marker


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


def log_signals(text: str, kind: str = "raylet") -> dict:
    """{signal: {"count", "lines": the last LOG_LINES_KEPT lines}} of the catalogue's entries
    that name a signal (workers_not_registered, no_available_ports, too_many_open_files,
    disk_over_capacity), in `text` of a file of `kind`."""
    found: dict = {}
    markers = {e.marker for e in C.ENTRIES if e.signal}
    for line in text.splitlines():
        if not any(marker in line for marker in markers):
            continue
        for key in dict.fromkeys(e.signal for e, _ in C.match(line, kind) if e.signal):
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


def read_logs(files: list, node_id: str | None = None, ip: str | None = None) -> dict:
    """What Ray's lines in `files` ([(role, path)], role None for a file of no known process)
    say: {"signals", "runtime_env_failures", "files", "errors", "log_lines"}. `log_lines` is
    the snapshot section `check --from` builds of the same files (its `items`: the hits)."""
    import os

    hits = Hits(NodeFacts(node_id, ip), AsIs())
    out: dict = {"signals": {}, "runtime_env_failures": [], "files": [], "errors": []}
    kinds: dict = {}
    read = []
    for role, path in files:
        name = os.path.basename(path)
        text, error = tail_of(path)
        if error:
            out["errors"].append(error)
            continue
        out["files"].append({"role": role, "file": name})
        kind, meta = kind_of(name)
        kinds[kind] = kinds.get(kind, 0) + 1
        read.append((role, Source(name, kind, meta), text, text.splitlines()))
        hits.learn(read[-1][3], read[-1][1])
    for role, source, text, lines in read:
        hits.lines(lines, source, node_id)
        if role == "runtime_env_agent":
            out["runtime_env_failures"] += runtime_env_failures(text)
        else:
            for key, found in log_signals(text, source.kind).items():
                found["file"] = source.rel
                out["signals"].setdefault(key, found)
    out["log_lines"] = section(hits.hits, len(out["files"]), kinds)
    return out


def _node_id() -> str | None:
    try:
        import ray

        return ray.get_runtime_context().get_node_id()
    except Exception:  # not in a Ray worker: the lines name their node themselves, or not
        return None


@fact("ray_logs")
def ray_logs_here() -> dict:
    """Ray's own words on this node: the catalogue's lines in the tails of the logs its raylet
    and (on the head) GCS hold open, and the runtime env agent's failures. Never raises."""
    import os
    import time

    started = time.monotonic()
    out = {"status": "ok", "signals": {}, "runtime_env_failures": [], "files": [], "errors": []}
    raylet = _raylet_above(os.getpid())
    if not raylet:
        return {**out, "status": "unavailable", "why": "this probe is not a descendant of a raylet"}
    args = _cmdline(raylet)
    roles, _, order = node_processes(raylet, args, started + OPEN_FILES_DEADLINE_S)
    files = []
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
            files.append((role, path))
    out.update(read_logs(files, _node_id(), _flags(args).get("node_ip_address")))
    out["duration_s"] = round(time.monotonic() - started, 3)
    return out
