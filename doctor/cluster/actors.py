"""Actors and dead workers from Ray's state API, for the restart and crash checks.

The state API returns at most 100 rows unless asked; rldoctor asks for the
server's maximum and compares with Ray's own count, so a truncated list is said
out loud in the snapshot instead of silently undercounting.
"""

from __future__ import annotations

from typing import Callable

from rldoctor.cluster import bounded
from rldoctor.cluster.sections import Unavailable
from rldoctor.cluster.cluster_facts import state_api_address
from rldoctor.cluster.sections import section
from rldoctor.cluster.task_table import TaskTable, failed_with

MAX_ROWS = 10_000  # the state API server's cap (RAY_MAX_LIMIT_FROM_API_SERVER)
# Dead actors are history (the GCS keeps up to 100,000): read apart from the live ones, and
# at most this many, so a cluster with a long past costs what a fresh one does.
DEAD_ACTORS_LIMIT = 1000
OWN_NAMESPACE_PREFIX = "rldoctor-"
# Dead workers worth a look; intended exits (idle workers reaped, ray.kill) are not.
BAD_EXITS = ("SYSTEM_ERROR", "NODE_OUT_OF_MEMORY", "USER_ERROR")


RUNTIME_ENV_FAILED = "runtime_env_failed_context"


def _runtime_env_summary(serialized) -> dict:
    """What an actor's runtime_env asked to build (never its env_vars values)."""
    import json

    from rldoctor.node.fact_ray_logs import runtime_env_summary

    try:
        return runtime_env_summary(json.loads(serialized or "{}"))
    except ValueError:
        return {}


def _require_state_api(cluster: dict | None) -> str:
    address = state_api_address(cluster)
    if not address:
        reason = (cluster or {}).get("state_api_error") or "Ray's state API is not reachable"
        raise Unavailable(reason)
    return address


def _death_cause(cause: dict | None) -> dict | None:
    """Ray's ActorDeathCause (one of several contexts) flattened to kind/reason/message."""
    if not cause:
        return None
    kind, context = next(iter(cause.items()))
    context = context or {}
    return {
        "kind": kind,  # oom_context, actor_died_error_context, creation_task_failure_context, ...
        "reason": context.get("reason"),
        "message": " ".join(str(context.get("error_message") or "").split())[:1000],
        "never_started": context.get("never_started"),
    }


def collect_actors(conn, budget, cluster: dict | None, table) -> dict:
    from ray.util.state import list_actors, summarize_actors

    address = _require_state_api(cluster)
    timeout = int(budget.left(10))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=3) as pool:
        live = pool.submit(bounded.listed, "actors", list_actors, address=address, detail=True,
                           limit=MAX_ROWS, timeout=timeout, raise_on_missing_output=False,
                           filters=[("state", "!=", "DEAD")])
        dead = pool.submit(bounded.listed, "actors", list_actors, address=address, detail=True,
                           limit=DEAD_ACTORS_LIMIT, timeout=timeout, raise_on_missing_output=False,
                           filters=[("state", "=", "DEAD")])
        summary = pool.submit(summarize_actors, address=address, timeout=timeout,
                              raise_on_missing_output=False)
        live_rows, rows = live.result(), live.result() + dead.result()
        summary = summary.result()
    total = int(((summary or {}).get("cluster") or {}).get("total_actors") or len(rows))
    items, other_runs, own_workers = [], set(), set()
    for a in rows:
        if (a.ray_namespace or "").startswith(OWN_NAMESPACE_PREFIX):
            if a.ray_namespace != conn.namespace and a.state == "ALIVE":
                other_runs.add(a.ray_namespace)  # another rldoctor probing at the same time
            if a.node_id and a.pid:
                own_workers.add((a.node_id, a.pid))
            continue  # rldoctor's own probes are not the patient
        items.append({
            "actor_id": a.actor_id,
            "class_name": a.class_name,
            "name": a.name or "",
            "state": a.state,
            "node_id": a.node_id,
            "pid": a.pid,
            "job_id": a.job_id,
            "ray_namespace": a.ray_namespace,
            "is_detached": a.is_detached,
            "repr_name": a.repr_name or "",
            "placement_group_id": a.placement_group_id or None,
            "num_restarts": int(getattr(a, "num_restarts", 0) or 0),
            # the field is newer than 2.40: read it where the cluster's Ray has it
            "num_restarts_due_to_node_preemption": int(
                getattr(a, "num_restarts_due_to_node_preemption", 0) or 0),
            "death_cause": _death_cause(a.death_cause),
            "required_resources": dict(a.required_resources or {}),
        })
        if items[-1]["death_cause"] and items[-1]["death_cause"]["kind"] == RUNTIME_ENV_FAILED:
            items[-1]["death_cause"]["message"] = str(  # pip's own error is at its end
                (a.death_cause or {}).get(RUNTIME_ENV_FAILED, {}).get("error_message") or "")[-3000:]
            items[-1]["runtime_env"] = _runtime_env_summary(a.serialized_runtime_env)
    _add_pid_history(address, budget, items)
    out = {"items": items, "listed": len(rows), "total": total,
            "truncated": len(rows) < total or len(live_rows) >= bounded.limit_of(MAX_ROWS),
            "live_truncated": len(live_rows) >= bounded.limit_of(MAX_ROWS),
            "other_rldoctor_runs": sorted(other_runs),
            # (node, pid) of every probe of this and earlier rldoctor runs, alive or dead
            "rldoctor_workers": sorted([node, pid] for node, pid in own_workers)}
    if any(a["state"] == "DEAD" for a in items):  # RLD401: a dead actor of an ended job is over
        ended = ended_jobs(table)
        if ended is not None:
            out["ended_jobs"] = ended
    return out


ENDED_JOB_STATES = ("SUCCEEDED", "FAILED", "STOPPED")


def ended_jobs(table) -> dict | None:
    """{job id: end time in ms (None when Ray has none)} of the jobs whose driver has ended,
    from Ray's job table (rldoctor.cluster.job_table); None when it could not be read
    (nothing is then known to be over)."""
    try:
        rows = table.rows("actors")
    except Exception:
        return None
    return {job["job_id"]: job["end_time"] or None for job in rows
            if job["job_id"] and str(job["status"]).rsplit(".", 1)[-1] in ENDED_JOB_STATES}


MAX_HISTORIES = 20
# Each actor's read scans every task event the GCS keeps (about 0.6 s after 100,000 tasks on
# the test cluster): past this much time, the other actors go without (matched by node).
HISTORIES_S = 2.0


def _add_pid_history(address: str, budget, items: list[dict]) -> None:
    """For restarted actors, every worker pid that ever ran one of their tasks.

    Ray keeps no death cause for an actor that restarted and is alive again; the
    dead workers that hosted it do have one. Their pids come from the actor's tasks.
    The most restarted first, for at most HISTORIES_S; the ones left are recorded as cut.
    """
    import time

    from ray.util.state import list_tasks

    restarted = sorted((a for a in items if a["num_restarts"] > 0),
                       key=lambda a: -a["num_restarts"])[:MAX_HISTORIES]
    stop_at = time.monotonic() + HISTORIES_S
    for done, actor in enumerate(restarted):
        if time.monotonic() > stop_at:
            bounded.record("actors", "list_tasks", None, done, [("actor_id", "=", "each")],
                           note=f"worker pids read for {done} of {len(restarted)} restarted actors "
                                f"(the most restarted) in the {HISTORIES_S:g}s allowed; the "
                                "others' dead workers are matched by node")
            break
        tasks = bounded.listed("actors", list_tasks, address=address, detail=True, limit=1000,
                               timeout=int(budget.left(5)), raise_on_missing_output=False,
                               filters=[("actor_id", "=", actor["actor_id"])])
        actor["pids"] = sorted({(t.node_id, t.worker_pid) for t in tasks
                                if t.worker_pid and t.node_id} | {(actor["node_id"], actor["pid"])},
                               key=str)


def collect_workers(conn, budget, cluster: dict | None,
                    own_workers: Callable[[], list | None] = lambda: None,
                    tasks: TaskTable | None = None) -> dict:
    """Workers that died of a bad exit, without rldoctor's own probes.

    A probe worker that Ray stops while the rldoctor run that started it ends may die
    with SIGTERM (SYSTEM_ERROR); it is no patient. `own_workers` gives the (node, pid)
    pairs of rldoctor's probes (from the actor list, read side by side with this one).
    """
    from ray.util.state import list_workers

    address = _require_state_api(cluster)
    items, truncated = [], False
    for exit_type in BAD_EXITS:
        rows = bounded.listed("workers", list_workers, address=address, detail=True,
                              limit=MAX_ROWS, timeout=int(budget.left(10)),
                              raise_on_missing_output=False,
                              filters=[("is_alive", "=", "False"), ("exit_type", "=", exit_type)])
        truncated = truncated or len(rows) >= bounded.limit_of(MAX_ROWS)
        for w in rows:
            items.append({
                "worker_id": w.worker_id,
                "worker_type": w.worker_type,
                "exit_type": w.exit_type,
                "exit_detail": " ".join(str(w.exit_detail or "").split())[:2000],
                "node_id": w.node_id,
                "ip": w.ip,
                "pid": w.pid,
                "end_time_ms": w.end_time_ms,
            })
    # Ray's memory monitor fails a task with OUT_OF_MEMORY by killing its worker, which then
    # exits NODE_OUT_OF_MEMORY: no such worker, no such task (a task read scans the whole history)
    killed = truncated or any(w["exit_type"] == "NODE_OUT_OF_MEMORY" for w in items)
    oom_tasks = _oom_tasks(address, budget, tasks) if killed else []
    own = {(node, pid) for node, pid in own_workers() or ()}
    kept = [w for w in items if (w["node_id"], w["pid"]) not in own]
    return {"dead": kept, "truncated": truncated, "oom_tasks": oom_tasks,
            "rldoctor_workers_left_out": len(items) - len(kept)}


def _oom_tasks(address: str, budget, tasks: TaskTable | None = None) -> list[dict]:
    """Tasks and actor tasks that Ray's memory monitor failed with OUT_OF_MEMORY: a slice of
    the snapshot's one task read (rldoctor.cluster.task_table), or a read of their own."""
    from ray.util.state import list_tasks

    def own_read() -> list:
        # the GCS filters on state (error_type is filtered after it has sent up to 10,000 tasks)
        return bounded.listed("workers", list_tasks, address=address, detail=True, limit=1000,
                              timeout=int(budget.left(10)), raise_on_missing_output=False,
                              filters=[("state", "=", "FAILED"),
                                       ("error_type", "=", "OUT_OF_MEMORY")])

    rows = tasks.select(failed_with("OUT_OF_MEMORY"), own_read) if tasks else own_read()
    return [{
        "task_id": t.task_id,
        "name": t.name,
        "func_or_class_name": t.func_or_class_name,
        "node_id": t.node_id,
        "worker_pid": t.worker_pid,
        "actor_id": t.actor_id,
        "error_message": " ".join(str(t.error_message or "").split())[:2000],
        "end_time_ms": t.end_time_ms,
    } for t in rows]


@section("actors", needs=("cluster", "job_table"))
def actors_section(ctx) -> dict:
    return collect_actors(ctx.conn, ctx.budget, ctx.doc.get("cluster"), ctx.value("job_table"))


@section("workers", needs=("cluster", "actors", "task_table"))
def workers_section(ctx) -> dict:
    """The dead workers, without rldoctor's own probes (listed by the actors section)."""
    return collect_workers(ctx.conn, ctx.budget, ctx.doc.get("cluster"),
                           lambda: (ctx.doc.get("actors") or {}).get("rldoctor_workers"),
                           ctx.value("task_table"))
