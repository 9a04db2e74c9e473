"""Jobs and tasks whose runtime_env could not be set up, from Ray's state API (RLD404).

Actors that died of it are in the actor list (their death cause); the reason each node
gave is in its runtime env agent's log, read by the probes (rldoctor.node.fact_ray_logs). Only a
summary of each runtime_env is kept (pip and conda packages, working_dir): never its
env_vars.
"""

from __future__ import annotations

import json
import time

from rldoctor.cluster import bounded
from rldoctor.node.fact_ray_logs import runtime_env_summary
from rldoctor.cluster.actors import MAX_ROWS, _require_state_api
from rldoctor.cluster.sections import section
from rldoctor.cluster.task_table import TaskTable, failed_with

JOB_ERROR = "RUNTIME_ENV_SETUP_FAILURE"
TASK_ERROR = "RUNTIME_ENV_SETUP_FAILED"
# Ray 2.60's message of a PENDING job with a runtime_env: "Job has not started yet. ... It may
# be waiting for the runtime environment to be set up." (older Ray: "... the runtime_env ...")
PENDING_WORDS = ("runtime environment", "runtime_env")
MESSAGE_CHARS = 4000


def _message(text) -> str:
    text = str(text or "")
    return text if len(text) <= MESSAGE_CHARS else "... " + text[-MESSAGE_CHARS:]


def _summary(env) -> dict:
    if isinstance(env, str):
        try:
            env = json.loads(env)
        except ValueError:
            env = {}
    return runtime_env_summary(env)


def agents_logged_a_failure(fleet, node_ids: list[str]) -> bool:
    """Did the runtime env agent of an alive node log "Failed to create runtime env", or is
    a node's agent log unread (its probe did not answer)? Only then are failed tasks read:
    every task read scans the GCS's whole task history, and a task's runtime_env is always
    built, and its failure logged, by the agent of the node it was to run on."""
    facts = getattr(fleet, "facts", None) or {}
    for node_id in node_ids:
        logs = ((facts.get(node_id) or {}).get("host") or {}).get("ray_logs") or {}
        if logs.get("status") != "ok" or logs.get("runtime_env_failures"):
            return True
    return False


def collect(conn, budget, cluster: dict | None, table, task_table: TaskTable | None = None,
            read_tasks: bool = True) -> dict:
    """The runtime_envs section; jobs from the job table (rldoctor.cluster.job_table), tasks
    (when `read_tasks`) from the snapshot's one task read (rldoctor.cluster.task_table) or a
    read of their own."""
    from ray.util.state import list_tasks

    address = _require_state_api(cluster)
    timeout = int(budget.left(10))
    jobs = []
    for job in table.rows("runtime_envs"):
        get = job.get
        status = str(get("status") or "").rsplit(".", 1)[-1]
        error = str(get("error_type") or "")
        message = str(get("message") or "")
        if error != JOB_ERROR and not (status == "PENDING"
                                       and any(w in message for w in PENDING_WORDS)):
            continue
        started = get("start_time")
        jobs.append({"job_id": get("job_id"), "submission_id": get("submission_id"),
                     "status": status, "error_type": error or None,
                     "message": _message(message), "runtime_env": _summary(get("runtime_env")),
                     "start_time": started, "end_time": get("end_time"),
                     "pending_s": round(time.time() - started / 1000, 1)
                     if status == "PENDING" and started else None})

    def own_read() -> list:
        return bounded.listed("runtime_envs", list_tasks, address=address, detail=True,
                              limit=MAX_ROWS, timeout=timeout, raise_on_missing_output=False,
                              filters=[("state", "=", "FAILED"), ("error_type", "=", TASK_ERROR)])

    if not read_tasks:
        failed = []
    elif task_table:
        failed = task_table.select(failed_with(TASK_ERROR), own_read)
    else:
        failed = own_read()
    tasks = []
    for t in failed:
        if t.actor_id:  # an actor's calls fail with it; the actor itself is named (actors)
            continue
        info = t.runtime_env_info or {}
        tasks.append({"task_id": t.task_id, "name": t.name, "job_id": t.job_id,
                      "func_or_class_name": t.func_or_class_name, "node_id": t.node_id,
                      "message": _message(t.error_message),
                      "runtime_env": _summary(info.get("serialized_runtime_env")),
                      "end_time_ms": t.end_time_ms})
    return {"jobs": jobs, "tasks": tasks, "tasks_read": read_tasks}


@section("runtime_envs", needs=("cluster", "job_table", "task_table", "probes"))
def runtime_envs_section(ctx) -> dict:
    from rldoctor.cluster.nodes import alive_ids

    logged = agents_logged_a_failure(ctx.fleet, alive_ids(ctx.doc.get("nodes")))
    return collect(ctx.conn, ctx.budget, ctx.doc.get("cluster"), ctx.value("job_table"),
                   ctx.value("task_table"), read_tasks=logged)
