"""Actors, tasks and jobs whose runtime_env could not be set up: RLD404."""

from __future__ import annotations

import re

from rldoctor.checks import _loglines
from rldoctor.registry import check, fail, warn
from rldoctor.snapshot import dig

JOB_ACTOR = "JobSupervisor"  # Ray's actor that runs a submitted job's entrypoint
_SIZE_LIMIT = re.compile(r"Package size \([^)]*\) exceeds the maximum size of \S+")
_ERROR_WORDS = ("ERROR:", "CondaError", "CondaHTTPError", "ResolvePackageNotFound")


def reason_in(message: str) -> str | None:
    """pip's (or conda's) last error line in a RuntimeEnvSetupError message, else its last line."""
    text = message or ""
    size = _SIZE_LIMIT.search(text)
    if size:
        return size.group(0)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if any(word in line for word in _ERROR_WORDS)]
    chosen = errors[-1] if errors else (lines[-1] if lines else None)
    return chosen[:300] if chosen else None


def _asked(env: dict | None) -> str:
    env = env or {}
    parts = []
    if env.get("pip"):
        parts.append("pip " + " ".join(env["pip"][:5]))
    if env.get("conda"):
        parts.append(f"conda {env['conda']}")
    if env.get("working_dir"):
        parts.append(f"working_dir {env['working_dir']}")
    return ", ".join(parts) or "its runtime_env"


def _nodes_that_failed(snap, env: dict | None) -> list[tuple[str, dict]]:
    """[(node id, the agent's failure)] of the nodes whose runtime env agent failed to build
    what `env` asks for (same pip packages, conda env or working_dir), newest first."""
    env = env or {}
    key = {k: env.get(k) for k in ("pip", "conda", "working_dir") if env.get(k)}
    found = []
    for node_id, host in sorted((snap.get("hosts") or {}).items()):
        for failure in reversed(dig(host, "ray_logs", "runtime_env_failures", default=[])):
            what = failure.get("what") or {}
            if key and all(what.get(k) == v for k, v in key.items()):
                found.append((node_id, failure))
                break
    return found


def _where(snap, node_ids: list[str]) -> str:
    return ", ".join(snap.label(node_id) for node_id in node_ids)


SETUP_FIXES = {"a runtime_env could not be set up": (
    "Read the node's runtime env agent log for the whole story (`ray logs "
    "runtime_env_setup-<job id>.log --node-id <node>` and `runtime_env_agent.log`). Then, by "
    "case: a package that does not exist or a version pip cannot find: fix the name or pin "
    "(`pip download <pkg>` on the node shows what its index offers); no internet or a private "
    "index on the nodes: bake the dependencies into the image, or point pip at a reachable "
    "index (`{{\"pip\": {{\"packages\": [...], \"pip_install_options\": [\"--index-url\", ...]}}}}`); a "
    "slow build: `RuntimeEnvConfig(setup_timeout_seconds=...)`; a working_dir over the size "
    "limit (512 MiB): `\"excludes\": [\".git\", \"data/\"]` or ship data another way. Ray builds "
    "the env on each node when the first task or actor needs it, so one bad node can fail "
    "while the others succeed. Resubmit the job or recreate the actor afterwards: Ray does not "
    "retry."
)}


def _fix() -> str:
    return SETUP_FIXES["a runtime_env could not be set up"].format()


@check("RLD404", "runtime-env-failed", area="workers", requires=("actors|runtime_envs",),
       params={"pending_warn_s": 60.0}, fixes=SETUP_FIXES)
@_loglines.also("RLD404", needs=("actors|runtime_envs",))
def runtime_env_failed(snap, params):
    """Actors, tasks or jobs whose runtime_env could not be set up, with the node's reason.

    Symptom:
        `ray.exceptions.RuntimeEnvSetupError: Failed to set up runtime environment.` from an
        actor or task; `ray job status` says FAILED with "runtime_env setup failed", or the
        job stays PENDING: "Job has not started yet. It may be waiting for the runtime
        environment to be set up." (reported after a minute).

    Cause:
        Ray builds a `runtime_env` (pip or conda packages, a working_dir, py_modules) on each
        node the first time a task, actor or job needs it, in that node's runtime env agent.
        pip cannot find a package (a typo, no internet or no index on the node), conda fails,
        the build outlasts its timeout, or a working_dir exceeds the size limit.
    """
    yield from _actors(snap)
    yield from _jobs(snap, params)
    yield from _tasks(snap)


# RLD404's messages, as data: who, what it asked for, where the build failed, and the reason.
_ACTOR = "actor {cls} ({id}{name}) never started: its runtime_env ({asked}) could not be set up{where}: {reason}"
_JOB_PENDING = "job {name} has waited {pending:.0f}s for its runtime_env ({asked}) to be set up{where}: {reason}"
_JOB_FAILED = "job {name} failed: its runtime_env ({asked}) could not be set up{where}: {reason}"
_TASK = "task {name} failed: its runtime_env ({asked}) could not be set up{where}: {reason}"
_NO_REASON = "no reason recorded"


def _setup_failure(snap, env: dict | None, message: str | None) -> dict:
    """What the nodes' agents said of building `env`: the reason (the agent's, else the error
    message's), where ("" or " on <nodes>"), the node ids and the agent log entries."""
    nodes = _nodes_that_failed(snap, env)
    reason = next((f.get("reason") for _, f in nodes if f.get("reason")), None) or reason_in(
        message or "")
    return {"reason": reason, "where": f" on {_where(snap, [n for n, _ in nodes])}" if nodes else "",
            "nodes": [n for n, _ in nodes], "agent_log": [f for _, f in nodes]}


def _actors(snap):
    for actor in snap.field("actors", "items") or []:
        cause = actor.get("death_cause") or {}
        if cause.get("kind") != "runtime_env_failed_context" or actor.get("class_name") == JOB_ACTOR:
            continue  # a job's supervisor dies of its job's env: the job is named instead
        env = actor.get("runtime_env")
        got = _setup_failure(snap, env, cause.get("message"))
        yield fail(f"actor:{actor['actor_id']}", _ACTOR.format(
            cls=actor.get("class_name"), id=actor["actor_id"][:12], asked=_asked(env),
            name=f", name '{actor['name']}'" if actor.get("name") else "", where=got["where"],
            reason=got["reason"] or _NO_REASON),
                   {"actor_id": actor["actor_id"], "class_name": actor.get("class_name"),
                    "job_id": actor.get("job_id"), "runtime_env": env, "reason": got["reason"],
                    "nodes": got["nodes"], "agent_log": got["agent_log"]}, _fix())


def _jobs(snap, params):
    for job in snap.field("runtime_envs", "jobs") or []:
        env = job.get("runtime_env")
        got = _setup_failure(snap, env, job.get("message"))
        name = job.get("submission_id") or job.get("job_id")
        pending = job.get("status") == "PENDING"
        if pending and (job.get("pending_s") or 0) < params["pending_warn_s"]:
            continue  # every job with a runtime_env waits a little while it is built
        yield (warn if pending else fail)(f"job:{name}", (_JOB_PENDING if pending else _JOB_FAILED).format(
            name=name, pending=job.get("pending_s") or 0, asked=_asked(env), where=got["where"],
            reason=got["reason"] or job.get("message") or _NO_REASON),
            {"submission_id": job.get("submission_id"), "job_id": job.get("job_id"),
             "status": job.get("status"), "runtime_env": env, "reason": got["reason"],
             "nodes": got["nodes"], "agent_log": got["agent_log"]}, _fix())


def _tasks(snap):
    for task in snap.field("runtime_envs", "tasks") or []:
        env = task.get("runtime_env")
        got = _setup_failure(snap, env, task.get("message"))
        yield fail(f"task:{task['task_id']}", _TASK.format(
            name=task.get("name") or task.get("func_or_class_name"), asked=_asked(env),
            where=got["where"], reason=got["reason"] or _NO_REASON),
                   {"task_id": task["task_id"], "job_id": task.get("job_id"), "runtime_env": env,
                    "reason": got["reason"], "nodes": got["nodes"], "agent_log": got["agent_log"]},
                   _fix())
