"""From the files of a dead cluster's session directories to one snapshot (source.kind "logs").

The sections have the shape the live collectors give them (nodes, actors, workers, cluster)
and the post-mortem sections (jobs, events) the shape /work's schema sets: the checks and
the report cannot tell a snapshot read from logs from one of a live cluster, except by the
sections that only a live cluster fills (absent here, and `collectors` says why).

What each Ray process writes, and what is taken from it:
- gcs_server.out (head): the Ray version, every node that registered (id, address) and
  died (why, when), every worker that exited unintentionally (exit type and detail), every
  actor that failed on a worker, the jobs the GCS registered (job id, driver pid).
- raylet.out (each node): the node's id and resources (head or not), the workers it
  started (pid <-> worker id), the memory monitor's kills, its own shutdown.
- events/*.log: job status changes (event_JOBS.log), node removals, worker failures,
  Out of Memory events.
- job-driver-<id>.log, jobs/supervisor-<id>.log: the job's entrypoint, exit code, the
  driver's traceback.
- worker-<wid>-<job>-<pid>.out/.err: which actor class a worker ran, its last lines.
Every quoted line goes through the redactor (rldoctor.redact) before it is stored.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime, timezone

from rldoctor.inputs.logdir import files as F
from rldoctor.raylog.lines import GCS_TEXTS, RAYLET_TEXTS, parse

WORKER_TAIL_LINES = 200
WORKER_TAIL_BYTES = 64 * 1024
DRIVER_TAIL_LINES = 400
DRIVER_TAIL_BYTES = 256 * 1024
MAX_FAILED_JOBS = 10
MAX_WORKERS_PER_JOB = 8
MAX_EVENTS = 500
MAX_WORKER_HEADS = 5000  # worker files whose first lines are read (16 KiB each)
DEFAULT_WINDOW_S = 86400.0

# The sections only a live cluster fills, and why a logs snapshot has none.
LIVE_ONLY = {
    "demands": "pending demands are a live cluster's state",
    "object_store": "object store figures are read from live raylets",
    "versions": "versions are read by probes on live nodes",
    "hosts": "host facts are read by probes on live nodes",
    "network": "round trips are measured between live nodes",
    "reach": "ports are tried on live nodes",
    "control_plane": "the GCS and raylets answer only while they run",
    "training": "the trainings' live state (calls, stacks) needs a live cluster",
    "runtime_envs": "runtime_env agents answer only while they run",
}
NOT_FROM_LOGS = "not in a cluster's logs: {why}; give --address for a live cluster"

_REGISTER_NODE = re.compile(r"Registering new node\. node_id=(\w+) node_name=(\S+) node_address=(\S+)")
_REGISTER_NODE_240 = re.compile(r"Registering node info, address = (\S+), node name = (\S+) node_id=(\w+)")
_HEAD_240 = re.compile(r"is_head_node = 1 node_id=(\w+)")
_REGISTER_JOB_240 = re.compile(r"Adding job, job id = (\w+), driver pid = (\d+)")
_JOB_FINISHED_240 = re.compile(r"Finished marking job state, job id = (\w+)")
_CREATING_ON_240 = re.compile(r"Start creating actor (\w+) on worker (\w+) at node (\w+), job id = (\w+)")
_LEASING_240 = re.compile(r"Start leasing worker from node (\w+) for actor (\w+), job id = (\w+)")
_NODE_DEAD_HEALTH = re.compile(r"Node is dead because the health check failed\. node_id=(\w+)")
_DEATH_REASON = re.compile(r"death reason = (\w+), death message = (.*?)(?: node_id=(\w+))?"
                           r"(?: node_name=(\S+))?$")
_REMOVING_240 = re.compile(r"Removing node, node name = (\S+), death reason = (\w+), "
                           r"death message = (.*)")
_MARKED_DEAD = re.compile(r"node id: (\w+) and address: (\S+) and node name: \S+ has been marked dead")
_WORKER_EXIT = re.compile(r"Reporting worker exit, worker id = (\w+), node id = (\w+), address = "
                          r"(\S+), exit_type = (\w+), exit_detail = (.*?)(?:\. Unintentional worker "
                          r"failures have been reported.*)?$")
_ACTOR_FAILED = re.compile(r"Actor is failed on worker (\w+) at node (\w+), need_reschedule = (\d), "
                           r"death context type = (\w+), remaining_restarts = (-?\d+), "
                           r"num_restarts = (\d+)")
_LEASED = re.compile(r"Finished leasing worker from (\w+) for actor (\w+), job id = (\w+)")
_REGISTER_JOB = re.compile(r"Registering job\. job_id=(\w+) driver_pid=(\d+)")
_JOB_FINISHED = re.compile(r"Marking job as finished\. job_id=(\w+)")
_VERSION = re.compile(r"ray_version=([\w.]+)")
_STARTED_WORKER = re.compile(r"Started worker process with pid (\d+) worker_id=(\w+)")
_STARTED_WORKER_240 = re.compile(r"Started worker process (?:of \d+ worker\(s\) )?with pid (\d+)")
_SETTING_NODE = re.compile(r"(?:Setting node ID|Initializing NodeManager).*?node_id=(\w+)")
_NODE_ID_240 = re.compile(r"Initializing NodeManager with ID (\w+)|node id: (\w+)")
_RESOURCES = re.compile(r"InitialConfigResources: \{(.*?)\}")
_OOM_260 = re.compile(r"Killing (\d+) worker\(s\), kill details: (.*)")
_OOM_240 = re.compile(r"Killing worker with task (.*)")
_OOM_PICK = re.compile(r"pid=(\d+), actual memory used=([\d.]+)GB, worker ID=(\w+)")
_OOM_PICK_240 = re.compile(r"pid=(\d+), memory used=([\d.]+)GB\).*?Ray killed this worker \(ID: (\w+)\)")
_SUPERVISOR_EXIT = re.compile(r"Job (\S+) entrypoint command exited with code (-?\d+)")
_SUPERVISOR_STOP = re.compile(r"Job (\S+) has been terminated gracefully")
_ENTRYPOINT = re.compile(r"Running entrypoint for job (\S+): (.*)")
_JOB_EVENT = re.compile(r"Completed a ray job (\S+) with a status (\w+)\.(?: (.*))?", re.DOTALL)
_JOB_STARTED = re.compile(r"Started a ray job (\S+)\.")
_ACTOR_IN_TEXT = re.compile(r"(?:actor_id[:=] ?|The actor )([0-9a-f]{32})")
_GRACEFUL = re.compile(r"Raylet graceful shutdown triggered with death info: (.*)")

GCS_MARKERS = tuple(m.encode() for m in GCS_TEXTS)
RAYLET_MARKERS = tuple(m.encode() for m in RAYLET_TEXTS)
# A raylet's own death in its .err: a signal, a failed check, a fatal timeout.
CRASH_MARKERS = (b"*** SIG", b"Check failed", b"[Timeout] Exiting because", b"The raylet exited")


class Facts:
    """What the files said, joined across nodes; turned into sections by `sections()`."""

    def __init__(self, redactor):
        self.r = redactor
        self.versions: set[str] = set()
        self.nodes: dict[str, dict] = {}
        self.workers: dict[str, dict] = {}  # dead workers, by worker id
        self.pids: dict[str, tuple[int, str | None]] = {}  # worker id -> (pid, node id)
        self.worker_files: dict[str, list] = {}  # worker id -> [LogFile]
        self.core_files: dict[str, list] = {}  # worker id -> [python-core-worker-*.log]
        self.worker_class: dict[str, str] = {}
        self.worker_actor: dict[str, str] = {}  # worker id -> actor id
        self.actors: dict[str, dict] = {}
        self.jobs_registered: dict[str, dict] = {}  # job hex -> driver pid, times
        self.submissions: dict[str, dict] = {}
        self.events: list[dict] = []
        self.oom: list[dict] = []
        self.notes: list[str] = []
        self.problems: list[dict] = []  # files that could not be read whole
        self.latest_ms = 0
        self.earliest_ms = None
        self.gcs_sessions: list = []
        self.head_node: str | None = None

    def saw(self, ts_ms):
        if ts_ms:
            self.latest_ms = max(self.latest_ms, ts_ms)
            self.earliest_ms = ts_ms if self.earliest_ms is None else min(self.earliest_ms, ts_ms)

    def node(self, node_id: str) -> dict:
        return self.nodes.setdefault(node_id, {"node_id": node_id})

    def text(self, value: str, limit: int = 1000) -> str:
        value = self.r.text(value or "")
        return value if len(value) <= limit else value[:limit - 3] + "..."


def _seconds(ms):
    return None if ms is None else round(ms / 1000.0, 3)


def _note_problem(facts: Facts, log: F.LogFile, done: F.Read) -> None:
    if done.problem == "empty" and not (log.kind in ("gcs", "raylet", "job_driver")
                                        and ".out" in os.path.basename(log.path)
                                        or log.kind == "job_driver"):
        return  # an empty .err or events file is what a healthy process leaves
    if done.problem:
        facts.problems.append({"file": log.rel, "problem": done.problem})
    elif done.skipped:
        facts.problems.append({"file": log.rel, "problem": (
            f"read {len(done.head) + len(done.tail)} of {log.size} bytes (its start and its "
            f"end; the byte budget left {done.skipped} bytes in between unread)")})
    if done.partial_last_line and not done.problem:
        facts.problems.append({"file": log.rel, "problem": "its last line has no end (the file "
                                                           "was being written or was cut)"})


# -- per kind of file -------------------------------------------------------------------------

def _gcs(facts: Facts, lines: list[str]) -> None:
    last_exit = None  # a multi-line exit detail goes on, unprefixed, after its line
    for raw in lines:
        line = parse(raw)
        text = line.text
        facts.saw(line.ts_ms)
        if line.ts_ms is None:
            if last_exit is not None and text.startswith(("OOM kill reason:", "Selected to kill:")):
                last_exit["exit_detail"] = facts.text(last_exit["exit_detail"] + " " + text, 2000)
            continue
        last_exit = None
        if "ray_version=" in text:
            m = _VERSION.search(text)
            if m:
                facts.versions.add(m.group(1))
        m = _REGISTER_NODE.search(text)
        if m:
            node = facts.node(m.group(1))
            node.update({"node_name": m.group(2), "ip": m.group(3),
                         "start_time": _seconds(line.ts_ms)})
            node.setdefault("order", len(facts.nodes))
            continue
        m = _REGISTER_NODE_240.search(text)
        if m:
            node = facts.node(m.group(3))
            node.update({"node_name": m.group(2), "ip": m.group(1),
                         "start_time": _seconds(line.ts_ms)})
            node.setdefault("order", len(facts.nodes))
            continue
        m = _HEAD_240.search(text)
        if m:
            facts.node(m.group(1))["is_head"] = True
            continue
        m = _NODE_DEAD_HEALTH.search(text)
        if m:
            node = facts.node(m.group(1))
            node.setdefault("end_time", _seconds(line.ts_ms))
            node.setdefault("death_reason", "UNEXPECTED_TERMINATION")
            node.setdefault("death_message", "health check failed due to missing too many heartbeats")
            node["dead"] = True
            continue
        if "death reason = " in text:
            m = _REMOVING_240.search(text)
            if m:  # 2.10-2.49: by node name (its address), not id; the id when a field says it
                name, reason, message = m.group(1), m.group(2), m.group(3).strip()
                by_id = re.search(r"\s+node_id=([0-9a-f]{56})", message)
                message = re.sub(r"\s+node_(?:id|name)=\S+", "", message).strip()
                nodes = [facts.node(by_id.group(1))] if by_id else [
                    n for n in facts.nodes.values() if n.get("node_name") == name]
                for node in nodes:
                    if node.get("dead_by_reason"):
                        continue
                    node.update({"death_reason": reason,
                                 "death_message": facts.text(message, 500),
                                 "dead": True, "dead_by_reason": True})
                    node.setdefault("node_name", name)
                    if not node.get("ip") and re.fullmatch(r"\d+\.\d+\.\d+\.\d+", name):
                        node["ip"] = name  # Ray names a node by its address
                    node.setdefault("end_time", _seconds(line.ts_ms))
                continue
            m = _DEATH_REASON.search(text)
            node_id = (m.group(3) if m else None) or line.fields.get("node_id")
            if m and node_id:
                node = facts.node(node_id)
                node.update({"death_reason": m.group(1),
                             "death_message": facts.text(m.group(2).strip(), 500), "dead": True,
                             "dead_by_reason": True})
                name = m.group(4) or ""
                if not node.get("ip") and re.fullmatch(r"\d+\.\d+\.\d+\.\d+", name):
                    node["ip"] = name  # Ray names a node by its address
                node.setdefault("end_time", _seconds(line.ts_ms))
            continue
        m = _MARKED_DEAD.search(text)
        if m:
            node = facts.node(m.group(1))
            node["dead"] = True
            node.setdefault("end_time", _seconds(line.ts_ms))
            node.setdefault("death_reason", "UNEXPECTED_TERMINATION")
            continue
        m = _WORKER_EXIT.search(text)
        if m:
            wid, nid, ip, exit_type, detail = m.groups()
            facts.workers[wid] = last_exit = {
                "worker_id": wid, "worker_type": "WORKER", "exit_type": exit_type,
                "exit_detail": facts.text(" ".join(detail.split()), 2000), "node_id": nid, "ip": ip,
                "pid": None, "end_time_ms": line.ts_ms, "job_id": None, "start_time_ms": None}
            continue
        m = _ACTOR_FAILED.search(text)
        if m:
            wid, nid, resched, context, remaining, restarts = m.groups()
            aid = line.fields.get("actor_id")
            if not aid:
                continue
            actor = facts.actors.setdefault(aid, {"actor_id": aid})
            actor.update({"job_id": line.fields.get("job_id"), "node_id": nid, "worker_id": wid,
                          "num_restarts": int(restarts), "death_context": context,
                          "remaining_restarts": int(remaining), "end_time": _seconds(line.ts_ms),
                          "state": "RESTARTING" if resched == "1" and int(remaining) != 0 else "DEAD"})
            actor.setdefault("incarnations", []).append({"worker_id": wid, "node_id": nid,
                                                         "time": _seconds(line.ts_ms)})
            facts.worker_actor.setdefault(wid, aid)
            continue
        m = _LEASED.search(text)
        if m:
            actor = facts.actors.setdefault(m.group(2), {"actor_id": m.group(2)})
            actor.setdefault("job_id", m.group(3))
            actor["leased_node_id"] = m.group(1)
            actor.setdefault("start_time", _seconds(line.ts_ms))
            continue
        m = _CREATING_ON_240.search(text)
        if m:
            aid, wid, nid, job = m.groups()
            actor = facts.actors.setdefault(aid, {"actor_id": aid})
            actor.setdefault("job_id", job)
            actor["leased_node_id"] = nid
            actor["running_worker_id"] = wid
            actor.setdefault("start_time", _seconds(line.ts_ms))
            facts.worker_actor.setdefault(wid, aid)
            continue
        m = _LEASING_240.search(text)
        if m:
            actor = facts.actors.setdefault(m.group(2), {"actor_id": m.group(2)})
            actor.setdefault("job_id", m.group(3))
            actor["leased_node_id"] = m.group(1)
            actor.setdefault("start_time", _seconds(line.ts_ms))
            continue
        m = _REGISTER_JOB.search(text) or _REGISTER_JOB_240.search(text)
        if m:
            facts.jobs_registered[m.group(1)] = {"job_id": m.group(1), "driver_pid": int(m.group(2)),
                                                 "start_ms": line.ts_ms}
            continue
        m = _JOB_FINISHED.search(text) or _JOB_FINISHED_240.search(text)
        if m:
            facts.jobs_registered.setdefault(m.group(1), {"job_id": m.group(1)})["end_ms"] = line.ts_ms


def _parse_resources(body: str) -> dict:
    """`{CPU: 1, memory: 2.3e+10, node:10.0.0.1: 1}`; older raylets print fixed-point
    values (x10000: `CPU: 10000`), told by the node:<ip> resource, which is always 1."""
    out = {}
    for item in body.split(", "):
        key, sep, value = item.rpartition(": ")
        if not sep:
            continue
        try:
            out[key.strip()] = float(value)
        except ValueError:
            continue
    scale = next((v for k, v in out.items() if k.startswith("node:") and k != "node:__internal_head__"
                  and v > 1), None)
    if scale:
        out = {k: round(v / scale, 4) for k, v in out.items()}
    return out


def _raylet(facts: Facts, lines: list[str], session, default: str | None = None) -> str | None:
    """The facts of one raylet file; returns the node id it declares. A rotated file that
    does not say which node it is gets `default` (the session's only node, when known)."""
    node_id = default
    pending = None  # a memory monitor kill whose victims are on the next lines
    for raw in lines:
        line = parse(raw)
        text = line.text
        facts.saw(line.ts_ms)
        m = _SETTING_NODE.search(text)
        if m:
            node_id = m.group(1)
            facts.node(node_id).setdefault("session", session.root)
            continue
        if node_id is None and "NodeManager with ID" in text:
            m = _NODE_ID_240.search(text)
            if m and m.group(1):
                node_id = m.group(1)
                facts.node(node_id).setdefault("session", session.root)
                continue
        if "InitialConfigResources" in raw:
            m = _RESOURCES.search(raw)
            if m and node_id:
                resources = _parse_resources(m.group(1))
                node = facts.node(node_id)
                node["resources_total"] = resources
                if "node:__internal_head__" in resources:
                    node["is_head"] = True
            continue
        m = _STARTED_WORKER.search(text)
        if m:
            facts.pids[m.group(2)] = (int(m.group(1)), node_id)
            continue
        m = _OOM_260.search(text)
        if m:  # the kill's details follow on lines of their own, without a prefix
            pending = {"node_id": node_id, "time": _seconds(line.ts_ms), "line": text,
                       "count": int(m.group(1))}
            picks = list(_OOM_PICK.finditer(m.group(2)))
            for pick in picks:
                _oom_kill(facts, pending, pick)
            if picks:
                pending = None
            continue
        if pending is not None and line.ts_ms is None:
            if text.startswith("OOM kill reason:"):
                pending["line"] += "; " + text
            elif text.startswith("Selected to kill:"):
                for pick in _OOM_PICK.finditer(text):
                    _oom_kill(facts, pending, pick, text)
                pending = None
            continue
        m = _OOM_240.search(text)
        if m:
            pick = _OOM_PICK_240.search(text)
            facts.oom.append({"pid": int(pick.group(1)) if pick else None,
                              "used_gb": float(pick.group(2)) if pick else None,
                              "worker_id": pick.group(3) if pick else None, "node_id": node_id,
                              "time": _seconds(line.ts_ms), "line": facts.text(text, 2000)})
            continue
        m = _GRACEFUL.search(text)
        if m and node_id:
            facts.node(node_id)["shutdown"] = {"time": _seconds(line.ts_ms),
                                               "death_info": facts.text(m.group(1), 300)}
    return node_id


def _oom_kill(facts: Facts, pending: dict, pick, selected: str = "") -> None:
    task = re.search(r"task name=([^,]+)", selected)
    job = re.search(r"job ID=(\w+)", selected)
    actor = re.search(r"\(Actor\((\w+)\)", selected)
    facts.oom.append({"pid": int(pick.group(1)), "used_gb": float(pick.group(2)),
                      "worker_id": pick.group(3), "node_id": pending["node_id"],
                      "time": pending["time"], "task_name": task.group(1) if task else None,
                      "job_id": job.group(1) if job else None,
                      "actor_id": actor.group(1) if actor else None,
                      "line": facts.text(pending["line"] + ("; " + selected if selected else ""), 2000)})


def _event_rows(facts: Facts, lines: list[str], node_hint: str | None) -> None:
    for raw in lines:
        raw = raw.strip()
        if not raw.startswith("{"):
            continue
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(data, dict) or "message" not in data:
            continue
        try:
            ts = float(data.get("timestamp"))
        except (TypeError, ValueError):
            ts = None
        custom = data.get("custom_fields") or {}
        if not isinstance(custom, dict):
            custom = {}
        message = str(data.get("message") or "")
        row = {"time": ts, "severity": data.get("severity"), "label": data.get("label") or "",
               "source_type": data.get("source_type"),
               "node_id": custom.get("node_id") or node_hint,
               "job_id": custom.get("job_id"), "submission_id": custom.get("submission_id"),
               "worker_id": custom.get("worker_id"), "message": facts.text(message, 1000)}
        if ts:
            facts.saw(int(ts * 1000))
        m = _JOB_STARTED.search(message)
        if m:
            facts.submissions.setdefault(m.group(1), {})["start_time"] = ts
        m = _JOB_EVENT.search(message)
        if m:
            sub = facts.submissions.setdefault(m.group(1), {})
            sub["status"] = m.group(2)
            sub["end_time"] = ts
            if m.group(3):
                sub["message"] = message
        facts.events.append(row)


def _supervisor(facts: Facts, log: F.LogFile, lines: list[str]) -> None:
    sub_id = log.meta.get("sub")
    sub = facts.submissions.setdefault(sub_id, {})
    for raw in lines:
        line = parse(raw)
        facts.saw(line.ts_ms)
        m = _SUPERVISOR_EXIT.search(line.text)
        if m:
            sub["driver_exit_code"] = int(m.group(2))
            sub["exited_ms"] = line.ts_ms
        if "Submitting job with RAY_ADDRESS" in line.text:
            sub["submitted_ms"] = line.ts_ms
            sub["supervisor_job_id"] = line.fields.get("job_id")
            if line.fields.get("node_id"):
                sub["driver_node_id"] = line.fields["node_id"]
        if _SUPERVISOR_STOP.search(line.text):
            sub["stopped"] = True


def _driver_log(facts: Facts, log: F.LogFile, done: F.Read, session_node: str | None) -> None:
    sub = facts.submissions.setdefault(log.meta.get("sub"), {})
    lines = F.lines_of(done)
    for raw in lines[:50]:
        m = _ENTRYPOINT.search(raw)
        if m:
            sub["entrypoint"] = facts.text(m.group(2), 500)
            break
    for raw in lines[:20]:
        line = parse(raw)
        if line.ts_ms:
            sub.setdefault("log_start_ms", line.ts_ms)
            break
    tail = lines[-DRIVER_TAIL_LINES:]
    earlier = _traceback_blocks(lines[:-DRIVER_TAIL_LINES]) if len(lines) > DRIVER_TAIL_LINES else []
    kept = (earlier + ["..."] if earlier else []) + tail
    size = 0
    out = []
    for raw in reversed(kept):
        size += len(raw) + 1
        if size > DRIVER_TAIL_BYTES:
            break
        out.append(facts.text(_strip_ansi(raw), 4000))
    sub["driver_log_tail"] = list(reversed(out))
    sub["driver_log_file"] = os.path.basename(log.path)
    sub["driver_log_rel"] = log.rel
    sub.setdefault("driver_node_id", session_node)
    note = None
    if done.problem:
        note = f"{log.rel}: {done.problem}"
    elif done.skipped:
        note = f"{log.rel}: only its start and its last {len(done.tail)} bytes were read"
    sub["driver_log_note"] = note
    sub["actor_ids_in_log"] = sorted(set(_ACTOR_IN_TEXT.findall("\n".join(tail))))


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def _traceback_blocks(lines: list[str], limit: int = 120) -> list[str]:
    """Earlier `Traceback` blocks (up to the exception line) found before the tail."""
    out: list[str] = []
    i = 0
    while i < len(lines) and len(out) < limit:
        if lines[i].startswith("Traceback (most recent call last)"):
            j = i + 1
            while j < len(lines) and (lines[j].startswith((" ", "\t")) or not lines[j].strip()):
                j += 1
            out.extend(lines[i:j + 1])
            i = j + 1
        else:
            i += 1
    return out[:limit]


def _worker_head(facts: Facts, log: F.LogFile, done: F.Read) -> None:
    """`:actor_name:` and `Creating actor` in the first lines of a worker's .out/.err."""
    wid = log.meta.get("wid")
    text = done.head[:65536].decode("utf-8", "replace")
    m = re.search(r"^:actor_name:(\S+)", text, re.M)
    if m:
        facts.worker_class.setdefault(wid, m.group(1))
    m = re.search(r"Creating actor actor_id=(\w+)", text)
    if m:
        facts.worker_actor.setdefault(wid, m.group(1))


# -- the whole directory ----------------------------------------------------------------------

def read_facts(path: str, budget: F.Budget | None = None, redactor=None,
               sessions=None) -> tuple[Facts, list]:
    from rldoctor.redact import Redactor

    sessions = F.find_sessions(path) if sessions is None else sessions
    budget = budget or F.Budget()
    facts = Facts(redactor or Redactor())
    drivers = []
    for session in sessions:
        session_node = _session_node_id(session)
        by_kind: dict[str, list] = {}
        for log in session.files:
            by_kind.setdefault(log.kind, []).append(log)
        if by_kind.get("gcs"):
            facts.gcs_sessions.append(session)
        declared, errs = [], []
        for log in sorted(by_kind.get("raylet", []), key=lambda f: f.rel):
            if not log.rel.endswith(".out") and ".out." not in log.rel:  # raylet.err
                done = F.read(log, budget, tail_bytes=256 * 1024)
                _note_problem(facts, log, done)
                if not done.problem:
                    errs.append((log, F.marked_lines(done, CRASH_MARKERS)))
                continue
            done = F.read(log, budget)
            _note_problem(facts, log, done)
            if done.problem:
                continue
            node_id = _raylet(facts, F.marked_lines(done, RAYLET_MARKERS), session,
                              session_node) or None
            declared.append(node_id)
        known = [n for n in declared if n] or ([session_node] if session_node else [])
        if len(set(known)) == 1:
            facts.node(known[0]).setdefault("session", session.root)
            session_node = known[0]
            for log, lines in errs:  # a crashed raylet's last words: its node's
                if lines:
                    facts.node(session_node)["raylet_crash"] = facts.text(lines[0], 500)
        for log in by_kind.get("gcs", []):
            done = F.read(log, budget)
            _note_problem(facts, log, done)
            if not done.problem and (log.rel.endswith(".out") or ".out." in log.rel):
                _gcs(facts, F.marked_lines(done, GCS_MARKERS))
            if by_kind.get("gcs") and session_node:
                facts.head_node = facts.head_node or session_node
        for log in by_kind.get("events", []):
            done = F.read(log, budget)
            _note_problem(facts, log, done)
            if not done.problem:
                _event_rows(facts, F.lines_of(done), session_node)
        for log in by_kind.get("supervisor", []):
            done = F.read(log, budget, tail_bytes=256 * 1024)
            _note_problem(facts, log, done)
            if not done.problem:
                _supervisor(facts, log, F.lines_of(done))
        for log in by_kind.get("job_driver", []):
            drivers.append((log, session_node))
        for log in by_kind.get("worker", []):
            wid = log.meta.get("wid")
            facts.worker_files.setdefault(wid, []).append(log)
            facts.pids.setdefault(wid, (int(log.meta["pid"]), session_node))
        for log in by_kind.get("core_worker", []):
            facts.pids.setdefault(log.meta.get("wid"), (int(log.meta["pid"]), session_node))
            facts.core_files.setdefault(log.meta.get("wid"), []).append(log)
    for log, session_node in drivers:
        done = F.read(log, budget, tail_bytes=2 * DRIVER_TAIL_BYTES)
        _note_problem(facts, log, done)
        _driver_log(facts, log, done, session_node)
    # the first lines of the workers: which actor each ran (the dead ones first)
    order = sorted(set(facts.worker_files) | set(facts.core_files),
                   key=lambda w: (w not in facts.workers, w))
    for wid in order[:MAX_WORKER_HEADS]:
        for log in facts.worker_files.get(wid, []) + facts.core_files.get(wid, []):
            if wid in facts.worker_class and wid in facts.worker_actor:
                break
            done = F.read(log, budget, tail_bytes=0, head_bytes=16 * 1024)
            if not done.problem:
                _worker_head(facts, log, done)
    return facts, sessions


def _session_node_id(session) -> str | None:
    """A 2.60 session root holds `<port name>_<node id>` files: the node it belongs to."""
    if not session.name:
        return None
    try:
        names = os.listdir(session.root)
    except OSError:
        return None
    ids = {m.group(1) for n in names
           for m in [re.match(r"^(?:gcs_server|metrics_agent|metrics_export|runtime_env_agent|"
                              r"dashboard_agent_listen)_port_([0-9a-f]{56})$", n)] if m}
    return ids.pop() if len(ids) == 1 else None


def worker_tail(facts: Facts, wid: str, budget: F.Budget) -> tuple[str | None, list[str], str | None]:
    """(file, last lines, note) of a worker's .err (its .out when it has no .err)."""
    logs = sorted(facts.worker_files.get(wid, []), key=lambda f: (not f.rel.endswith(".err"), f.rel))
    if not logs:
        return None, [], "no log file of this worker in the directory (its node's logs are missing)"
    log = logs[0]
    done = F.read(log, budget, tail_bytes=WORKER_TAIL_BYTES, head_bytes=0)
    if done.problem:
        return os.path.basename(log.path), [], f"{log.rel}: {done.problem}"
    lines = F.lines_of(done)[-WORKER_TAIL_LINES:]
    return (os.path.basename(log.path), [facts.text(_strip_ansi(x), 4000) for x in lines],
            f"{log.rel}: cut to its last {WORKER_TAIL_BYTES} bytes" if done.skipped else None)
