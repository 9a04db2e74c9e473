"""The jobs that ended (or run) within the window, and the last words of the failed ones (RLD405).

Raw facts only (the chain is built by rldoctor.failure_chains, on a live cluster and on logs
alike): Ray's job table (status, message, times, driver), the tail of each failed job's driver
log (`job-driver-<submission id>.log`, through the dashboard's log route on the driver's node)
and the `.err` tails of the workers in its chain (the job's dead actors, and the one the
driver's traceback names), dead ones included. Every read is bounded: at most JOB_LIMIT jobs,
FAILED_LIMIT failed jobs read closer, WORKERS_PER_JOB workers each, a tail of lines and bytes
per log, and each call has its own timeout; the section says what it cut (`cut`, `notes`).
Every line is redacted before it is stored. Shape: `jobs` in rldoctor.snapshot_shape.
"""

from __future__ import annotations

import re
import time

from rldoctor.cluster import bounded, nodes
from rldoctor.cluster.actors import _require_state_api
from rldoctor.cluster.sections import section
from rldoctor.errors import first_line

WINDOW_S = 24 * 3600.0
JOB_LIMIT = 50
FAILED_LIMIT = 10
WORKERS_PER_JOB = 8
DRIVER_READ_LINES = 3000     # read this far back in the driver's log ...
DRIVER_TAIL_LINES = 400      # ... keep its end, and the earlier tracebacks
DRIVER_MAX_BYTES = 256 * 1024
EARLIER_TRACEBACKS = 6
WORKER_TAIL_LINES = 200
WORKER_MAX_BYTES = 64 * 1024
LOG_TIMEOUT_S = 5
MESSAGE_CHARS = 4000
ENTRYPOINT_CHARS = 500
_ACTOR_ID = re.compile(r"actor_id[:=]\s*([0-9a-f]{32})|The actor ([0-9a-f]{32}) is unavailable")
_QUIET_REASONS = ("RAY_KILL", "OUT_OF_SCOPE", "REF_DELETED")
# rldoctor's own jobs (its collector job through the dashboard, its drivers): not the patient
_OWN = re.compile(r"rldoctor(\.collect\.job_main|\s+(check|collect|watch|smoke-train)\b)|bin/rldoctor\b")

_window_s = WINDOW_S


def set_window(window_s: float) -> None:
    """`check --since`: how far back ended jobs count (the collectors read no further)."""
    global _window_s
    _window_s = float(window_s)


def window() -> float:
    return _window_s


def _get(job, key):
    value = job.get(key) if isinstance(job, dict) else getattr(job, key, None)
    return getattr(value, "value", value)


def _seconds(ms) -> float | None:
    try:
        ms = float(ms)
    except (TypeError, ValueError):
        return None
    return ms / 1000.0 if ms > 0 else None


def _status(value) -> str:
    return str(value or "").rsplit(".", 1)[-1]


def collect(conn, budget, cluster: dict | None, table, actors=lambda: None) -> dict:
    """The `jobs` section from the job table (rldoctor.cluster.job_table.JobTable).
    `actors()` gives the actors section (read side by side)."""
    from rldoctor.redact import redact

    _require_state_api(cluster)
    now = time.time()
    window_s = _window_s
    rows = table.rows("jobs")
    kept = []
    import ray

    own_job = ray.get_runtime_context().get_job_id() if ray.is_initialized() else None
    for row in rows:
        if _is_own(row, own_job):
            continue
        status = _status(_get(row, "status"))
        end = _seconds(_get(row, "end_time"))
        if status in ("FAILED", "SUCCEEDED", "STOPPED"):
            if end is None or end < now - window_s:
                continue
        kept.append((row, status, end))
    kept.sort(key=lambda item: -(item[2] or now + 1))  # running ones first, then newest ended
    cut = {"limit": JOB_LIMIT, "total": len(kept)} if len(kept) > JOB_LIMIT else None
    jobs = []
    for row, status, end in kept[:JOB_LIMIT]:
        driver = _get(row, "driver_info")
        driver = driver if isinstance(driver, dict) else (getattr(driver, "__dict__", None) or {})
        pid = driver.get("pid")
        jobs.append({
            "submission_id": _get(row, "submission_id"),
            "job_id": _get(row, "job_id"),
            "type": _status(_get(row, "type")) or None,
            "entrypoint": redact(str(_get(row, "entrypoint") or ""))[:ENTRYPOINT_CHARS],
            "status": status,
            "error_type": _status(_get(row, "error_type")) or None,
            "driver_exit_code": _get(row, "driver_exit_code"),
            "message": redact(_tail_chars(_get(row, "message"), MESSAGE_CHARS)),
            "start_time": _seconds(_get(row, "start_time")),
            "end_time": end,
            "driver": {"node_id": _get(row, "driver_node_id"),
                       "ip": driver.get("node_ip_address"),
                       "pid": int(pid) if str(pid or "").isdigit() else None},
            "driver_log_file": None, "driver_log_tail": [], "driver_log_note": None,
            "worker_logs": [],
        })
    notes = []
    actor_items = ((actors() or {}).get("items") or []) if callable(actors) else []
    failed = [j for j in jobs if j["status"] == "FAILED" or _hand_run_training_died(j, actor_items)]
    if len(failed) > FAILED_LIMIT:
        notes.append(f"{len(failed)} failed jobs in the window: the logs of the newest "
                     f"{FAILED_LIMIT} were read")
    route = _route(cluster, budget)
    for job in failed[:FAILED_LIMIT]:
        _read_driver_log(route, job)
        _read_worker_logs(route, job, actor_items)
    return {"window_s": window_s, "now": round(now, 3), "ray_version": (cluster or {}).get("ray_version"),
            "cut": cut, "notes": notes, "jobs": jobs}


_RLLIB_ACTOR = re.compile(r"EnvRunner|Learner|_WrappedExecutable")


def _hand_run_training_died(job: dict, actors: list[dict]) -> bool:
    """A driver run by hand that Ray calls SUCCEEDED (it keeps no exit code) whose RLlib actors
    died of something else than their owner's end or ray.kill: its runners' logs are read too
    (the analysis, rldoctor.failure_chains.training_died_under, decides)."""
    if job.get("type") != "DRIVER" or job.get("status") != "SUCCEEDED":
        return False
    return any(a.get("job_id") == job.get("job_id") and a.get("state") == "DEAD"
               and _RLLIB_ACTOR.search(a.get("class_name") or "")
               and (a.get("death_cause") or {}).get("reason") not in _QUIET_REASONS + ("OWNER_DIED",)
               for a in actors)


def _is_own(row, own_job) -> bool:
    metadata = _get(row, "metadata") or {}
    if isinstance(metadata, dict) and "rldoctor" in metadata:
        return True
    if own_job and _get(row, "job_id") == own_job:
        return True
    return bool(_OWN.search(str(_get(row, "entrypoint") or "")[:400]))


def _tail_chars(text, limit: int) -> str:
    text = str(text or "")
    return text if len(text) <= limit else "... " + text[-limit:]


def _route(cluster: dict | None, budget):
    """The dashboard's log route (rldoctor.cluster.logs: our own timeouts and byte caps)."""
    from rldoctor.cluster.logs import LogRoute
    from rldoctor.cluster.private import http_auth_headers

    return LogRoute((cluster or {}).get("dashboard_url") or "", http_auth_headers(),
                    timeout_s=min(float(LOG_TIMEOUT_S), budget.left(LOG_TIMEOUT_S)))


def _tail_lines(route, node_id: str, filename: str, lines: int, max_bytes: int) -> list[str]:
    data, _dropped = route.tail(node_id, filename, lines, max_bytes)
    return data.decode("utf-8", errors="replace").splitlines()


def _worker_err_file(route, node_id: str, pid: int) -> str:
    """`worker-<worker id>-<job id>-<pid>.err` of that pid on that node."""
    data, _ = route._get("/api/v0/logs", {"node_id": node_id, "glob": f"*worker-*-{pid}.err"},
                         1 << 20)
    import json

    groups = ((json.loads(data or b"{}").get("data") or {}).get("result")) or {}
    names = sorted({n for names in groups.values() for n in names or []
                    if n.endswith(f"-{pid}.err") and "worker-" in n})
    if not names:
        raise LookupError(f"no worker-*-{pid}.err on the node")
    return names[-1]


def select_lines(lines: list[str], tail: int = DRIVER_TAIL_LINES, max_bytes: int = DRIVER_MAX_BYTES,
                 earlier: int = EARLIER_TRACEBACKS) -> tuple[list[str], bool]:
    """The end of a log plus the tracebacks found earlier in what was read ("..." between):
    the user's exception is often far above the wrapper the driver raised last."""
    head, end = lines[:-tail] if len(lines) > tail else [], lines[-tail:]
    blocks: list[list[str]] = []
    i = 0
    while i < len(head):
        if "Traceback (most recent call last):" in head[i]:
            j = i + 1
            while j < len(head) and j - i < 80 and "Traceback (most recent call last):" not in head[j]:
                j += 1
                if re.search(r"(^|\) )[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", head[j - 1]) \
                        and not head[j - 1].lstrip().startswith(("File ", "raise ")):
                    break
            blocks.append(head[i:j])
            i = j
        else:
            i += 1
    out: list[str] = []
    for block in blocks[-earlier:]:
        out.extend(block + ["..."])
    out.extend(end)
    cut = bool(head)
    while out and sum(len(line) + 1 for line in out) > max_bytes:
        out.pop(0)
        cut = True
    return out, cut


def _read_driver_log(route, job: dict) -> None:
    from rldoctor.redact import redact

    sid, node_id = job.get("submission_id"), (job.get("driver") or {}).get("node_id")
    if not sid:
        job["driver_log_note"] = ("a driver started by hand (not `ray job submit`) keeps its "
                                  "output where its terminal went: Ray has no copy")
        return
    name = f"job-driver-{sid}.log"
    job["driver_log_file"] = name
    if not node_id:
        job["driver_log_note"] = "Ray did not record the driver's node"
        return
    try:
        lines = _tail_lines(route, node_id, name, DRIVER_READ_LINES, 4 * DRIVER_MAX_BYTES)
    except Exception as exc:  # the driver's node is gone, or the log route failed
        job["driver_log_note"] = f"{name} on node {node_id[:12]} not readable: {first_line(exc)}"
        return
    kept, cut = select_lines(lines)
    job["driver_log_tail"] = [redact(line) for line in kept]
    if cut:
        job["driver_log_note"] = (f"the last {DRIVER_TAIL_LINES} lines of {name} and the tracebacks "
                                  f"above them (of the last {DRIVER_READ_LINES} lines)")


def _named_actor_ids(lines: list[str]) -> list[str]:
    found = []
    for line in reversed(lines):
        for m in _ACTOR_ID.finditer(line):
            aid = m.group(1) or m.group(2)
            if aid not in found:
                found.append(aid)
    return found


def _read_worker_logs(route, job: dict, actors: list[dict]) -> None:
    """The `.err` tails of the workers in the job's chain: the actors its driver names and its
    actors that died of something else than their owner's end or ray.kill."""
    from rldoctor.redact import redact

    by_id = {a.get("actor_id"): a for a in actors}
    named = [by_id[aid] for aid in _named_actor_ids(job["driver_log_tail"] or
                                                     str(job.get("message") or "").splitlines())
             if aid in by_id]
    dead = [a for a in actors if job.get("job_id") and a.get("job_id") == job["job_id"]
            and a.get("state") == "DEAD"
            and (a.get("death_cause") or {}).get("reason") not in _QUIET_REASONS + ("OWNER_DIED",)]
    chosen, seen = [], set()
    for actor in named + dead:
        if actor["actor_id"] not in seen:
            seen.add(actor["actor_id"])
            chosen.append(actor)
    for actor in chosen[:WORKERS_PER_JOB]:
        entry = {"worker_id": actor.get("worker_id"), "pid": actor.get("pid"),
                 "node_id": actor.get("node_id"), "actor_id": actor.get("actor_id"),
                 "class_name": actor.get("class_name"), "file": None, "lines": [], "note": None}
        try:
            if not (actor.get("node_id") and actor.get("pid")):
                raise LookupError("Ray recorded no node or pid for it")
            name = _worker_err_file(route, actor["node_id"], actor["pid"])
            entry["file"] = name
            lines = _tail_lines(route, actor["node_id"], name, WORKER_TAIL_LINES, WORKER_MAX_BYTES)
        except Exception as exc:  # its node is gone, or the log route failed
            entry["note"] = (f"the log of pid {actor.get('pid')} on node "
                             f"{str(actor.get('node_id') or '?')[:12]} is not readable: "
                             f"{first_line(exc)}")
            job["worker_logs"].append(entry)
            continue
        kept = lines[-WORKER_TAIL_LINES:]
        while kept and sum(len(line) + 1 for line in kept) > WORKER_MAX_BYTES:
            kept.pop(0)
        entry["lines"] = [redact(line) for line in kept]
        job["worker_logs"].append(entry)


def add_node_times(doc: dict, times: dict[str, tuple]) -> None:
    for node in doc.get("nodes") or []:
        found = times.get(node.get("node_id"))
        if found:
            node["start_time"] = _seconds(found[0])
            node["end_time"] = None if node.get("alive") else _seconds(found[1])


def add_actor_end_times(doc: dict) -> None:
    """A dead actor's end: its worker's end time, matched by (node, pid)."""
    dead = {(w.get("node_id"), w.get("pid")): w for w in (doc.get("workers") or {}).get("dead") or []}
    for actor in (doc.get("actors") or {}).get("items") or []:
        if actor.get("state") == "DEAD" and "end_time" not in actor:
            w = dead.get((actor.get("node_id"), actor.get("pid")))
            actor["end_time"] = _seconds((w or {}).get("end_time_ms"))


@section("jobs", needs=("cluster", "job_table", "actors"))
def jobs_section(ctx) -> dict:
    """The jobs of the window (RLD405, the timeline), and when each dead node died."""
    cluster = ctx.doc.get("cluster")
    section = collect(ctx.conn, ctx.budget, cluster, ctx.value("job_table"),
                      lambda: ctx.doc.get("actors"))
    try:
        add_node_times(ctx.doc, nodes.times(ctx.budget, _require_state_api(cluster)))
    except Exception as exc:  # the times are a bonus to the timeline
        section.setdefault("notes", []).append(f"node times not read: {first_line(exc)}")
    return section


@section("actor_end_times", needs=("actors", "workers"), keep=False)
def actor_end_times_step(ctx) -> None:
    add_actor_end_times(ctx.doc)
