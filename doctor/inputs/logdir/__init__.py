"""`rldoctor check --from DIR`: diagnose a cluster that is gone, from the logs it left.

DIR is a Ray session directory (`session_*` or its `logs/`) or a folder holding several
nodes' session directories. `read_logs(DIR)` reads only the files Ray writes there (never
writes into DIR), from their end within a byte budget, and builds one snapshot
(rldoctor.snapshot/v1, source.kind "logs") whose sections have the live collectors' shape:
nodes, actors, workers, jobs, events. Sections only a live cluster can fill are absent,
and `collectors` says why, so the checks that need them are skipped with that reason.

Standard library only, and never ray: the client-only install reads logs too.

    files.py          which files of a session directory are what
    scan.py           every file read against the catalogue (rldoctor.raylog: the catalogue of
                      Ray's lines, one line's time, the file kinds, the hits; the probes on a
                      live node read with it too)
    build.py          from the files to one snapshot (source.kind "logs")
    bundle_items.py   the bundle's log items when a bundle is made from logs
"""

from __future__ import annotations

import os
import re
import time
from datetime import datetime, timezone

from rldoctor.inputs.logdir import files as F
from rldoctor.inputs.logdir.build import (DEFAULT_WINDOW_S, LIVE_ONLY, MAX_EVENTS, MAX_FAILED_JOBS,
                                   MAX_WORKERS_PER_JOB, NOT_FROM_LOGS, Facts, read_facts,
                                   worker_tail)

KNOWN_RAY = ((2, 40), (2, 60))
# Sections of facts only a live cluster shows, except where a log line states them (then the
# checks of those codes read the log_lines section: rldoctor.checks._loglines).
LOGGED_FAULTS = {"logged_host_faults": ("RLD107", "RLD305"),
                 "logged_store_faults": ("RLD301", "RLD302"),
                 "logged_version_faults": ("RLD102",)}  # the releases whose log lines the reader knows
_DEATH_CONTEXTS = {"ActorDiedErrorContext": "actor_died_error_context",
                   "CreationTaskFailureContext": "creation_task_failure_context",
                   "RuntimeEnvFailedContext": "runtime_env_failed_context",
                   "OomContext": "oom_context", "OOMContext": "oom_context",
                   "ActorUnschedulableContext": "actor_unschedulable_context"}
_DRIVER_ID = re.compile(r"^[0-9a-f]{8}f{48}$")  # a driver's worker id: its job id, then ff...f


def is_log_dir(path) -> bool:
    return os.path.isdir(path)


def _iso(ms: int | None) -> str:
    moment = datetime.fromtimestamp((ms or time.time() * 1000) / 1000.0, timezone.utc)
    return moment.isoformat(timespec="seconds")


def _version_tuple(text: str | None):
    try:
        return tuple(int(p) for p in (text or "").split(".")[:2])
    except ValueError:
        return None


def read_logs(path: str, window_s: float | None = None, budget: F.Budget | None = None,
              redactor=None, sessions=None, input_kind: str | None = None) -> dict:
    """The snapshot document of the logs under `path` (Undiagnosable when there are none).

    `sessions` (rldoctor.inputs.logdir.files.Session) are given for input that is not a
    directory of files (standard input, a tarball's members); `input_kind` names the input
    in the report (rldoctor.inputs.source decides it)."""
    from rldoctor.snapshot import new_document

    started = time.perf_counter()
    top = os.path.abspath(path) if sessions is None else path
    budget = budget or F.Budget()
    total_budget = budget.left
    facts, sessions = read_facts(top, budget, redactor, sessions=sessions)
    from rldoctor.inputs.logdir.scan import scan
    from rldoctor.redact import Redactor

    session_nodes = {}
    for node_id, node in facts.nodes.items():
        if node.get("session"):
            session_nodes.setdefault(node["session"], node_id)
    log_lines = scan(sessions, facts, redactor or facts.r or Redactor(), session_nodes)
    window = DEFAULT_WINDOW_S if window_s is None else float(window_s)
    now_s = facts.latest_ms / 1000.0 if facts.latest_ms else time.time()
    doc = new_document({"kind": "logs", "path": top, "file": top,
                        "sessions": [F.rel_root(s.root, top) for s in sessions],
                        "read_at": _iso(None)})
    doc["log_lines"] = log_lines
    doc["source"]["input"] = judged(input_kind or _input_kind(sessions), sessions, facts,
                                    log_lines)
    doc["created_at"] = _iso(facts.latest_ms or None)  # the cluster's last moment in its logs
    doc["source"]["created_at"] = doc["created_at"]
    version = sorted(facts.versions)[-1] if facts.versions else None
    nodes = _nodes(facts, top)
    dead_workers = _dead_workers(facts)
    doc["nodes"] = nodes
    doc["actors"] = _actors(facts, {n["node_id"]: n for n in nodes}, dead_workers)
    doc["workers"] = {"dead": list(dead_workers.values()), "truncated": False,
                      "oom_tasks": _oom_tasks(facts), "rldoctor_workers_left_out": 0}
    doc["jobs"] = _jobs(facts, window, now_s, version, budget, dead_workers, doc["actors"]["items"])
    doc["events"] = _events(facts, window, now_s)
    for section in ("nodes", "actors", "workers", "jobs", "events", "log_lines"):
        doc["collectors"][section] = {"status": "ok", "from": "logs"}
    add_log_lines(doc, log_lines)
    if not facts.gcs_sessions:
        for section in ("actors", "workers"):
            doc["collectors"][section]["note"] = "no gcs_server.out: the head's logs are missing"
    for section, why in LIVE_ONLY.items():
        doc["collectors"][section] = {"status": "unavailable",
                                      "reason": NOT_FROM_LOGS.format(why=why)}
    doc["collectors"]["cluster"] = {"status": "unavailable", "reason": NOT_FROM_LOGS.format(
        why="the auth mode and the dashboard are a live cluster's")}
    from rldoctor.snapshot import NOT_FROM_A_LIVE_CLUSTER

    for section, reason in NOT_FROM_A_LIVE_CLUSTER.items():
        doc["collectors"].setdefault(section, {"status": "unavailable", "reason": reason})
    read = total_budget - budget.left
    doc["logs"] = {"ray_version": version, "ray_versions": sorted(facts.versions),
                   "sessions": doc["source"]["sessions"],
                   "session_names": sorted({s.name for s in sessions if s.name}),
                   "files": sum(len(s.files) for s in sessions), "bytes_read": read,
                   "byte_budget": total_budget, "problems": facts.problems[:200],
                   "first_time": (facts.earliest_ms or 0) / 1000.0 or None,
                   "last_time": now_s if facts.latest_ms else None,
                   "clock": "the logs' local times, read as UTC",
                   "read_s": round(time.perf_counter() - started, 3)}
    doc["notes"] = _notes(facts, sessions, version, doc)
    return doc


def add_log_lines(doc: dict, log_lines: dict) -> None:
    """The `log_lines` section, and the host facts the lines state (when they do)."""
    doc["log_lines"] = log_lines
    doc.setdefault("collectors", {})["log_lines"] = {"status": "ok", "from": "logs"}
    for section, codes in LOGGED_FAULTS.items():
        hits = [i for i, h in enumerate(log_lines["items"]) if h["code"] in codes]
        if hits:
            doc[section] = {"hits": hits, "codes": sorted({log_lines["items"][i]["code"]
                                                           for i in hits})}
            doc["collectors"][section] = {"status": "ok", "from": "logs"}
        else:
            doc["collectors"][section] = {"status": "unavailable",
                                          "reason": "no line of the logs read states it"}


# What each kind of file lets a report judge (the report's `source.input`).
_JUDGES = (
    (("gcs",), "node deaths, worker exits, actor failures and jobs (the head's gcs_server.out)",
     "node deaths, worker exits and job states (no gcs_server.out: the head's logs are not "
     "in the input)"),
    (("raylet", "console-raylet"), "the raylet's own crashes, its agents, memory-monitor kills "
     "and runtime_env failures on the node(s) read", "a raylet's crash or its memory-monitor "
     "kills (no raylet.out/.err)"),
    (("worker", "core_worker", "console-worker"), "worker crashes and exceptions in the "
     "workers' own output", "what the workers said (no worker-*.out/.err)"),
    (("events",), "Ray's events (node removals, OOM, worker failures)", None),
    (("job_driver", "supervisor"), "jobs submitted with `ray job submit` and their drivers' "
     "output", None),
)


def _input_kind(sessions) -> str:
    if len(sessions) == 1 and len(sessions[0].files) == 1 and not sessions[0].name:
        return "log file"
    if any(s.name for s in sessions):
        return "session directories" if len(sessions) > 1 else "session directory"
    if all(f.kind in ("other",) for s in sessions for f in s.files):
        return "folder of log files"
    return "logs directory"


def judged(kind: str, sessions, facts: Facts, log_lines: dict) -> dict:
    """What this input let the report judge, and what not: in every format's first lines."""
    kinds = {f.kind for s in sessions for f in s.files}
    files = sum(len(s.files) for s in sessions)
    yes, no = [], []
    for needed, said, missing in _JUDGES:
        if kinds & set(needed):
            yes.append(said)
        elif missing:
            no.append(missing)
    no.append("live state (resources, demands, hosts, network) needs a live cluster")
    names = sorted(os.path.basename(f.rel) for s in sessions for f in s.files)
    return {"kind": kind, "files": files, "bytes": sum(f.size for s in sessions for f in s.files),
            "file_names": names[:20] + ([f"... and {len(names) - 20} more"] if len(names) > 20
                                        else []),
            "ray_lines_known": len(log_lines["items"]),
            "judged": yes or ["only the lines of Ray's catalogue (the files are none Ray names)"],
            "not_judged": no}


def _notes(facts: Facts, sessions, version, doc) -> list[str]:
    notes = [f"read from the logs in {doc['source']['path']} ({len(sessions)} session "
             f"director{'y' if len(sessions) == 1 else 'ies'}"
             + (f", Ray {version}" if version else "") + "): the cluster as its logs left it "
             f"at {doc['created_at']}; checks that need a live cluster are skipped"]
    if not facts.gcs_sessions:
        notes.append("no gcs_server.out in the directory (the head's logs are missing): node "
                     "deaths, worker exits and actor failures are not known")
    if version is None:
        notes.append("no `Ray cluster metadata ray_version=` line: the Ray version is unknown")
    else:
        vt = _version_tuple(version)
        if vt and not (KNOWN_RAY[0] <= vt <= KNOWN_RAY[1]):
            notes.append(f"Ray {version} is outside the releases whose GCS and raylet lines "
                         f"rldoctor joins into nodes, actors and jobs (2.40 to 2.60): what it "
                         f"did not recognize is not reported; its catalogue of Ray's crash, "
                         f"kill and error lines (2.0 to 2.60) was read all the same")
    names = sorted({s.name for s in sessions if s.name})
    if len(names) > 1:
        notes.append(f"{len(names)} different sessions ({', '.join(names[:4])}): logs of more "
                     "than one cluster run, read together")
    heads = {s.root for s in facts.gcs_sessions}
    seen_nodes = {n.get("session") for n in facts.nodes.values() if n.get("session")}
    missing = [n for n in doc["nodes"] if n["node_id"] not in
               {nid for nid, f in facts.nodes.items() if f.get("session")}]
    if heads and missing:
        notes.append(f"no logs of {len(missing)} node(s) in the directory ("
                     + ", ".join(f"{n['node_id'][:12]} ({n.get('ip')})" for n in missing[:5])
                     + "): their workers' last lines are not known")
    del seen_nodes
    problems = facts.problems
    if problems:
        shown = "; ".join(f"{p['file']}: {p['problem']}" for p in problems[:6])
        notes.append(f"{len(problems)} file(s) not read whole: {shown}"
                     + (f"; and {len(problems) - 6} more (logs.problems in the snapshot)"
                        if len(problems) > 6 else ""))
    return notes


def _nodes(facts: Facts, top: str) -> list[dict]:
    out = []
    for node_id, n in facts.nodes.items():
        if not re.fullmatch(r"[0-9a-f]{56}", node_id or ""):
            continue
        dead = bool(n.get("dead"))
        resources = dict(n.get("resources_total") or {})
        out.append({
            "node_id": node_id, "ip": n.get("ip"), "node_name": n.get("node_name"),
            "is_head": bool(n.get("is_head") or node_id == facts.head_node),
            "alive": not dead, "state": "DEAD" if dead else "ALIVE",
            "death_reason": (n.get("death_reason") or "UNSPECIFIED") if dead else None,
            "death_message": (n.get("death_message") or "") if dead else None,
            "labels": {}, "resources_total": resources, "resources_available": {},
            "metrics_export_port": None, "ports": {},
            "start_time": n.get("start_time"), "end_time": n.get("end_time") if dead else None,
            "log_dir": F.rel_root(n["session"], top) if n.get("session") else None,
        })
        if n.get("shutdown") and not dead:
            out[-1]["shutdown"] = n["shutdown"]  # the raylet said it was stopped, at the end
        if n.get("raylet_crash"):
            out[-1]["raylet_crash"] = n["raylet_crash"]  # its raylet.err: a signal, a check
    out.sort(key=lambda node: (not node["is_head"], not node["alive"], node["node_id"]))
    return out


def _dead_workers(facts: Facts) -> dict[str, dict]:
    out = {}
    for wid, w in facts.workers.items():
        w = dict(w)
        pid, _node = facts.pids.get(wid, (None, None))
        w["pid"] = pid
        if _DRIVER_ID.match(wid):  # the GCS's exit line does not say DRIVER: its id does
            job = facts.jobs_registered.get(wid[:8]) or {}
            w.update({"worker_type": "DRIVER", "job_id": wid[:8], "pid": pid or job.get("driver_pid")})
            out[wid] = w
            continue
        files = facts.worker_files.get(wid) or []
        if files:
            job = files[0].meta.get("job")
            w["job_id"] = job if job and job != "ffffffff" else None
        out[wid] = w
    return out


def _death_cause(actor: dict, worker: dict | None, node: dict | None) -> dict | None:
    context = actor.get("death_context")
    if not context:
        return None
    kind = _DEATH_CONTEXTS.get(context, context)
    if kind != "actor_died_error_context":  # Ray's message for these is the worker's exit detail
        return {"kind": kind, "reason": None, "never_started": False,
                "message": (worker or {}).get("exit_detail") or ""}
    if node and not node.get("alive") and (not worker or (node.get("end_time") or 0) <=
                                           (actor.get("end_time") or 0) + 60):
        message = (f"The actor died because its node has died. Node Id: {node['node_id']} "
                   f"the actor's node was terminated unexpectedly: {node.get('death_message') or ''}")
        return {"kind": kind, "reason": "NODE_DIED", "message": message.strip(),
                "never_started": False}
    if worker:
        return {"kind": kind, "reason": "WORKER_DIED",
                "message": ("The actor is dead because its worker process has died. Worker exit "
                            f"type: {worker['exit_type']} Worker exit detail: "
                            f"{worker['exit_detail']}"), "never_started": False}
    return {"kind": kind, "reason": None, "message": "", "never_started": False}


def _after_job(actor: dict, node: dict | None, job_end: float) -> dict:
    """The death of an actor that never failed but whose job ended: with its node when that
    node died around then (the job's end may come first), else with the job."""
    if node and not node.get("alive") and node.get("end_time") and \
            node["end_time"] >= (actor.get("start_time") or 0) and node["end_time"] <= job_end + 120:
        return {"kind": "actor_died_error_context", "reason": "NODE_DIED", "never_started": False,
                "message": (f"The actor died because its node has died. Node Id: {node['node_id']} "
                            "the actor's node was terminated unexpectedly: "
                            f"{node.get('death_message') or ''}").strip()}
    return {"kind": "actor_died_error_context", "reason": "OUT_OF_SCOPE", "never_started": False,
            "message": "The actor is dead because its job ended (the GCS marked the job finished)."}


def _actors(facts: Facts, nodes: dict, dead_workers: dict) -> dict:
    items = []
    for aid, a in facts.actors.items():
        wid = a.get("worker_id") or a.get("running_worker_id")
        if wid is None:  # never failed: the worker that runs it, from its files
            wid = next((w for w, x in facts.worker_actor.items() if x == aid), None)
        node_id = a.get("node_id") or a.get("leased_node_id")
        pid = facts.pids.get(wid, (None, None))[0] if wid else None
        class_name = facts.worker_class.get(wid) if wid else None
        for inc in a.get("incarnations") or []:
            class_name = class_name or facts.worker_class.get(inc["worker_id"])
        if class_name is None:  # killed before it said: the memory monitor named its task
            task = next((k.get("task_name") for k in facts.oom if k.get("worker_id") == wid
                         and k.get("task_name")), None)
            if task and task.endswith(".__init__"):
                class_name = task[:-len(".__init__")]
        worker = dead_workers.get(wid) if wid else None
        state = a.get("state") or "ALIVE"
        cause = _death_cause(a, worker, nodes.get(node_id)) if state == "DEAD" else None
        job = facts.jobs_registered.get(a.get("job_id") or "") or {}
        end_time = a.get("end_time")
        if state == "ALIVE" and job.get("end_ms"):  # its job ended: so did the actor
            state, cause = "DEAD", _after_job(a, nodes.get(node_id), job["end_ms"] / 1000.0)
            end_time = ((nodes.get(node_id) or {}).get("end_time") if cause["reason"] == "NODE_DIED"
                        else None) or job["end_ms"] / 1000.0
        items.append({
            "actor_id": aid, "class_name": class_name, "name": "",
            "state": state, "node_id": node_id, "pid": pid,
            "job_id": a.get("job_id"), "ray_namespace": None, "is_detached": None,
            "repr_name": "", "placement_group_id": None,
            "num_restarts": int(a.get("num_restarts") or 0),
            "num_restarts_due_to_node_preemption": 0,
            "death_cause": cause,
            "required_resources": {}, "worker_id": wid, "end_time": end_time,
            "start_time": a.get("start_time"),
        })
        if len(a.get("incarnations") or []) > 1:
            items[-1]["pids"] = sorted([inc["node_id"], facts.pids.get(inc["worker_id"], (None,))[0]]
                                       for inc in a["incarnations"])
    items.sort(key=lambda x: (x.get("start_time") or 0, x["actor_id"]))
    return {"items": items, "listed": len(items), "total": len(items), "truncated": False,
            "other_rldoctor_runs": [], "rldoctor_workers": [], "from_logs": True}


def _oom_tasks(facts: Facts) -> list[dict]:
    return [{"task_id": None, "name": k.get("task_name"), "func_or_class_name": None,
             "node_id": k.get("node_id"), "worker_pid": k.get("pid"), "actor_id": k.get("actor_id"),
             "error_message": k.get("line"),
             "end_time_ms": int(k["time"] * 1000) if k.get("time") else None}
            for k in facts.oom]


def _job_id_of(facts: Facts, sub: dict, taken: set[str]) -> str | None:
    """Which GCS job the submission's entrypoint ran as: the job of an actor its driver's
    log names, else the job the GCS registered while the supervisor ran the entrypoint."""
    actors = {a: x for a, x in facts.actors.items()}
    for aid in sub.get("actor_ids_in_log") or []:
        job = (actors.get(aid) or {}).get("job_id") or (aid[-8:] if len(aid) == 32 else None)
        if job and job != sub.get("supervisor_job_id"):
            return job
    begin = sub.get("submitted_ms") or sub.get("log_start_ms") or (
        sub["start_time"] * 1000 if sub.get("start_time") else None)
    end = sub.get("exited_ms") or (sub["end_time"] * 1000 if sub.get("end_time") else None)
    if begin is None:
        return None
    candidates = sorted((j.get("start_ms") or 0, jid) for jid, j in facts.jobs_registered.items()
                        if jid not in taken and jid != sub.get("supervisor_job_id")
                        and (j.get("start_ms") or 0) >= begin - 1000
                        and (end is None or (j.get("start_ms") or 0) <= end))
    return candidates[0][1] if candidates else None


def _jobs(facts: Facts, window: float, now_s: float, version, budget, dead_workers,
          actor_items) -> dict:
    jobs, taken, notes = [], set(), []
    for sid, sub in facts.submissions.items():
        if not sid:
            continue
        status = sub.get("status")
        if status is None:
            if sub.get("stopped"):
                status = "STOPPED"
            elif sub.get("driver_exit_code") is not None:
                status = "SUCCEEDED" if sub["driver_exit_code"] == 0 else "FAILED"
            else:
                status = "RUNNING"  # no end in the logs: it was running when they stop
        job_id = _job_id_of(facts, sub, taken)
        if job_id:
            taken.add(job_id)
        registered = facts.jobs_registered.get(job_id or "") or {}
        code = sub.get("driver_exit_code")
        error_type = None
        message = sub.get("message")
        if status == "FAILED" and code is not None:
            error_type = "JOB_ENTRYPOINT_COMMAND_ERROR"
            if not message:
                tail = "\n".join(sub.get("driver_log_tail") or [])
                message = (f"Job entrypoint command failed with exit code {code}, last available "
                           f"logs (truncated to 20,000 chars):\n" + tail[-3800:])
        elif status == "SUCCEEDED":
            message = message or "Job finished successfully."
        elif status == "STOPPED":
            message = message or "Job was intentionally stopped."
        end = sub.get("end_time") or (sub["exited_ms"] / 1000.0 if sub.get("exited_ms") else None)
        start = sub.get("start_time") or (sub["submitted_ms"] / 1000.0
                                          if sub.get("submitted_ms") else None)
        node = facts.nodes.get(sub.get("driver_node_id") or "") or {}
        jobs.append({
            "submission_id": sid, "job_id": job_id, "type": "SUBMISSION",
            "entrypoint": sub.get("entrypoint"), "status": status, "error_type": error_type,
            "driver_exit_code": code, "message": (message or "")[-4000:] or None,
            "start_time": start, "end_time": end,
            "driver": {"node_id": sub.get("driver_node_id"), "ip": node.get("ip"),
                       "pid": registered.get("driver_pid")},
            "driver_log_file": sub.get("driver_log_file"),
            "driver_log_tail": sub.get("driver_log_tail") or [],
            "driver_log_note": sub.get("driver_log_note") if sub.get("driver_log_file") else
            "no job-driver log of this job in the directory",
            "worker_logs": [],
        })
    in_window = [j for j in jobs if j["end_time"] is None or now_s - j["end_time"] <= window]
    if len(in_window) < len(jobs):
        notes.append(f"{len(jobs) - len(in_window)} job(s) ended more than {window:.0f}s before "
                     "the end of the logs (--since)")
    in_window.sort(key=lambda j: -(j["end_time"] or j["start_time"] or now_s))
    failed = [j for j in in_window if j["status"] == "FAILED"][:MAX_FAILED_JOBS]
    for job in failed:
        named = (facts.submissions.get(job["submission_id"]) or {}).get("actor_ids_in_log") or []
        job["worker_logs"] = _worker_logs(facts, job, budget, dead_workers, actor_items, named)
    for j in in_window:
        if j not in failed:
            j["driver_log_tail"] = []
    limit = 50
    cut = {"limit": limit, "total": len(in_window)} if len(in_window) > limit else None
    return {"window_s": window, "now": now_s, "ray_version": version, "cut": cut,
            "notes": notes, "jobs": in_window[:limit]}


def _worker_logs(facts: Facts, job: dict, budget, dead_workers: dict, actor_items,
                 named=()) -> list[dict]:
    """The workers of the job's chain: its dead workers, its actors that died with their
    node, and the actors its driver's traceback names (a task error from a live runner)."""
    job_id = job.get("job_id")
    if not job_id:
        return []
    by_worker = {a["worker_id"]: a for a in actor_items if a.get("worker_id")}
    by_actor = {a["actor_id"]: a for a in actor_items}
    chosen = [w for w in dead_workers.values() if w.get("job_id") == job_id]
    chosen += [dead_workers[a["worker_id"]] for a in actor_items
               if a.get("job_id") == job_id and a.get("worker_id") in dead_workers
               and dead_workers[a["worker_id"]] not in chosen]
    for a in actor_items:  # actors of the job that died with their node: no exit line
        if a.get("job_id") == job_id and a.get("state") == "DEAD" and a.get("worker_id") and \
                a["worker_id"] not in dead_workers and \
                (a.get("death_cause") or {}).get("reason") != "OUT_OF_SCOPE":
            chosen.append({"worker_id": a["worker_id"], "pid": a.get("pid"),
                           "node_id": a.get("node_id"), "end_time_ms": None})
    seen = {w["worker_id"] for w in chosen}
    named_only = []
    for aid in named:
        a = by_actor.get(aid) or {}
        if a.get("job_id") != job_id:
            continue
        if a.get("worker_id") and a["worker_id"] not in seen:
            seen.add(a["worker_id"])
            chosen.append({"worker_id": a["worker_id"], "pid": a.get("pid"),
                           "node_id": a.get("node_id"), "end_time_ms": None})
        elif not a.get("worker_id"):  # its worker is unknown: its node's logs are missing
            named_only.append(a)
    chosen.sort(key=lambda w: w.get("end_time_ms") or 0)
    out = []
    for w in chosen[:MAX_WORKERS_PER_JOB]:
        wid = w["worker_id"]
        actor = by_worker.get(wid) or {}
        file, lines, note = worker_tail(facts, wid, budget)
        out.append({"worker_id": wid, "pid": w.get("pid"), "node_id": w.get("node_id"),
                    "actor_id": actor.get("actor_id"),
                    "class_name": actor.get("class_name") or facts.worker_class.get(wid),
                    "file": file, "lines": lines, "note": note})
    for a in named_only[:max(0, MAX_WORKERS_PER_JOB - len(out))]:
        out.append({"worker_id": None, "pid": a.get("pid"), "node_id": a.get("node_id"),
                    "actor_id": a["actor_id"], "class_name": a.get("class_name"), "file": None,
                    "lines": [], "note": "no log of this worker in the directory (its node's "
                                         "logs are missing)"})
    return out


def _events(facts: Facts, window: float, now_s: float) -> dict:
    rows = [e for e in facts.events if e.get("time") is None or now_s - e["time"] <= window]
    for kill in facts.oom:
        rows.append({"time": kill.get("time"), "severity": "ERROR", "label": "Out of Memory",
                     "source_type": "RAYLET", "node_id": kill.get("node_id"), "job_id": None,
                     "submission_id": None, "worker_id": kill.get("worker_id"),
                     "message": (kill.get("line") or "")[:1000]})
    rows.sort(key=lambda e: e.get("time") or 0)
    cut = {"limit": MAX_EVENTS, "total": len(rows)} if len(rows) > MAX_EVENTS else None
    return {"window_s": window, "cut": cut, "items": rows[-MAX_EVENTS:]}
