"""Which processes the bundle takes stacks of: a pure function of what was collected.

Every RLlib algorithm, learner and env runner (from the snapshot's actors and, when
present, its trainings), every worker in a call that has been running long, and the
driver of a job whose RLlib actors have no algorithm actor (then the algorithm runs in
the driver: a bare `algo.train()` loop).
"""

from __future__ import annotations

from rldoctor.rllib_roles import rllib_role
from rldoctor import words

MAX_STACKS = 48
_ROLE_ORDER = {"algorithm": 0, "learner": 1, "env runner": 2}


def _add(found: dict, node_id, pid, label: str, rank: int) -> None:
    if not node_id or not pid:
        return
    key = (node_id, int(pid))
    if key in found:
        if label not in found[key]["label"]:
            found[key]["label"] += f"; {label}"
        found[key]["rank"] = min(found[key]["rank"], rank)
    else:
        found[key] = {"node_id": node_id, "pid": int(pid), "label": label, "rank": rank}


def stack_targets(doc: dict, running_tasks: list[dict], jobs: list[dict], now_ms: float,
                  long_call_s: float | None = None, limit: int = MAX_STACKS) -> list[dict]:
    """[{"node_id", "pid", "label"}], the RLlib processes first, at most `limit`."""
    if long_call_s is None:  # the collector's bar, as the snapshot records it
        long_call_s = (doc.get("training") or {}).get("long_call_s") or words.LONG_CALL_S
    found: dict = {}
    rllib_jobs, algorithm_jobs = set(), set()
    for actor in (doc.get("actors") or {}).get("items") or []:
        role = rllib_role(actor.get("class_name"))
        if not role or actor.get("state") != "ALIVE":
            continue
        rllib_jobs.add(actor.get("job_id"))
        if role == "algorithm":
            algorithm_jobs.add(actor.get("job_id"))
        _add(found, actor.get("node_id"), actor.get("pid"),
             f"RLlib {role} {actor.get('class_name')} (actor {str(actor.get('actor_id'))[:12]})",
             _ROLE_ORDER[role])
    by_id = {a.get("actor_id"): a for a in (doc.get("actors") or {}).get("items") or []}
    for training in (doc.get("training") or {}).get("trainings") or []:
        name = training.get("name") or training.get("id") or "training"
        algorithm = training.get("algorithm_actor")
        if isinstance(algorithm, str):  # an actor id
            algorithm = by_id.get(algorithm)
        groups = [("env runner", training.get("runners")), ("learner", training.get("learners")),
                  ("algorithm", [algorithm] if isinstance(algorithm, dict) else [])]
        for role, members in groups:
            for m in members or []:
                if isinstance(m, dict) and m.get("state", "ALIVE") == "ALIVE":
                    _add(found, m.get("node_id"), m.get("pid"), f"RLlib {role} of {name}",
                         _ROLE_ORDER[role])
    for task in running_tasks:
        started = task.get("start_time_ms")
        age = (now_ms - started) / 1000 if started else None
        if age is not None and age >= long_call_s:
            _add(found, task.get("node_id"), task.get("worker_pid"),
                 f"call {task.get('name') or task.get('func_or_class_name')} running for {age:.0f}s", 3)
    for job in jobs:
        driver = job.get("driver") or {}
        if job.get("status") == "RUNNING" and job.get("job_id") in rllib_jobs - algorithm_jobs:
            _add(found, driver.get("node_id"), driver.get("pid"),
                 f"driver of job {job.get('job_id')} (its RLlib algorithm runs in it)", 0)
    ordered = sorted(found.values(), key=lambda t: (t["rank"], t["label"], t["pid"]))
    return [{k: t[k] for k in ("node_id", "pid", "label")} for t in ordered[:limit]]
