"""The RLlib trainings running on the cluster, seen from outside.

Nothing here calls a method on a training's actors: a call queues behind the very
hang being diagnosed, and the doctor would hang with it. What rldoctor reads instead:

- the state API: RLlib's actors (algorithm, env runners, learners; found by class
  name, grouped by placement group, or by job for a bare `algo.train()` loop in a
  driver), the calls running on them now and how long they have run (RLlib routes
  sample, weight sync and metrics through `EnvRunner.apply`, so the call's name does
  not tell which; the stack does), the calls queued behind them, their jobs, and the
  worker processes (pid, start time);
- every node's Prometheus endpoint (`MetricsExportPort`), one scrape: each env
  runner's `rllib_env_runner_num_env_steps_sampled` counter. Ray exports it every
  10 s, so two scrapes a few seconds apart mostly see the same value; the rate
  rldoctor reports is the counter over the runner's age (its mean since it started);
- py-spy stacks (rldoctor.cluster.stacks) of the runners and learners whose current
  call has run long, taken by the probe on their node.

`fetch_sources` runs while the other sections are collected; `assemble` puts the
trainings together once the actors are known; `look_closer` adds call histories of
the peers and the stacks of the calls that run long.
"""

from __future__ import annotations

import re
import statistics
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from rldoctor.cluster import bounded
from rldoctor.cluster.sections import Unavailable
from rldoctor.errors import first_line
from rldoctor.cluster.cluster_facts import state_api_address
from rldoctor import words
from rldoctor.cluster.sections import section
from rldoctor.cluster.task_table import TaskTable, by_job, jobs_with_live_actors

MAX_ROWS = 10_000
METRICS_TIMEOUT_S = 2.0
STEPS_METRIC = "ray_rllib_env_runner_num_env_steps_sampled_counter_total"
_SAMPLE = re.compile(r'^' + STEPS_METRIC + r'\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)', re.M)
_WORKER_LABEL = re.compile(r'WorkerId="([0-9a-f]+)"')
# A call that has run this long gets a closer look (peers' history, a stack); the check
# (RLD605) decides, with its own floor, whether it is hung.
MAX_CLOSER_LOOKS = 8
PEER_HISTORY_ROWS = 200
MAX_PEERS_LOOKED_AT = 4
STACK_TEXT_KEPT = 16_000
_ENDED_ON_PURPOSE = {"RAY_KILL", "OUT_OF_SCOPE", "REF_DELETED"}


def _role(class_name: str | None) -> str | None:
    from rldoctor.rllib_roles import rllib_role

    name = (class_name or "").split(".")[-1]
    if name == "_WrappedExecutable":  # RLlib's remote learners run in Ray Train's wrapper
        return "learner?"
    return rllib_role(class_name)


# -- sources, fetched side by side with the rest of the snapshot ------------------------

def _scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=METRICS_TIMEOUT_S) as reply:
        text = reply.read().decode("utf-8", errors="replace")
    counts: dict[str, float] = {}
    for match in _SAMPLE.finditer(text):
        worker = _WORKER_LABEL.search(match.group("labels"))
        if worker:
            try:
                counts[worker.group(1)] = counts.get(worker.group(1), 0.0) + float(match.group("value"))
            except ValueError:
                continue
    return counts


def scrape_env_steps(nodes: list[dict]) -> dict:
    """{worker id: env steps sampled} from every alive node's metrics endpoint, in parallel."""
    targets = {n["node_id"]: f"http://{n['ip']}:{n['metrics_export_port']}/metrics"
               for n in nodes if n.get("alive") and n.get("metrics_export_port")}
    out: dict = {"steps": {}, "failed": {}, "scraped_at_ms": int(time.time() * 1000)}
    if not targets:
        return out
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(16, len(targets))) as pool:
        futures = {node_id: pool.submit(_scrape, url) for node_id, url in targets.items()}
        for node_id, future in futures.items():
            try:
                out["steps"].update(future.result())
            except Exception as exc:
                out["failed"][node_id] = first_line(exc, 200)
    out["duration_s"] = round(time.perf_counter() - started, 3)
    return out


def _in_flight_on_an_actor(task) -> bool:
    return task.type == "ACTOR_TASK" and task.state not in ("FINISHED", "FAILED")


def fetch_sources(conn, budget, cluster: dict | None, nodes: list[dict] | None, table,
                  tasks: TaskTable | None = None, actors: dict | None = None) -> dict:
    """Calls in flight on the actors of the jobs that have live ones (job by job), jobs (from
    the job table, rldoctor.cluster.job_table), live workers and RLlib's step counters.
    Without the actor list, the calls are a slice of the snapshot's one task read
    (rldoctor.cluster.task_table), or a read of their own."""
    from ray.util.state import list_tasks, list_workers

    address = state_api_address(cluster)
    if not address:
        raise Unavailable((cluster or {}).get("state_api_error") or "Ray's state API is not reachable")
    started = time.perf_counter()
    timeout = int(budget.left(10))
    with ThreadPoolExecutor(max_workers=4) as pool:
        def own_read(job_id: str | None = None) -> list:
            scope = [("job_id", "=", job_id)] if job_id else []
            return bounded.listed("training", list_tasks, address=address, detail=True,
                                  limit=MAX_ROWS, timeout=timeout, raise_on_missing_output=False,
                                  filters=scope + [("type", "=", "ACTOR_TASK"),
                                                   ("state", "!=", "FINISHED"),
                                                   ("state", "!=", "FAILED")])

        def read_all() -> list:
            return tasks.select(_in_flight_on_an_actor, own_read) if tasks else own_read()

        calls = pool.submit(by_job, jobs_with_live_actors(actors), own_read, read_all)
        jobs = pool.submit(table.rows, "training")
        workers = pool.submit(bounded.listed, "training", list_workers, address=address,
                              detail=True, limit=MAX_ROWS,
                              timeout=timeout, raise_on_missing_output=False,
                              filters=[("is_alive", "=", "True"), ("worker_type", "=", "WORKER")])
        steps = pool.submit(scrape_env_steps, nodes or [])
        return {
            "calls": [{"task_id": t.task_id, "name": t.name, "state": t.state,
                       "actor_id": t.actor_id, "node_id": t.node_id, "worker_pid": t.worker_pid,
                       "start_time_ms": t.start_time_ms, "creation_time_ms": t.creation_time_ms}
                      for t in calls.result() if t.actor_id],
            "jobs": {j["job_id"]: _job(j) for j in jobs.result() if j["job_id"]},
            "workers": {(w.node_id, w.pid): {"worker_id": w.worker_id,
                                             "start_time_ms": w.start_time_ms or
                                             w.worker_launched_time_ms}
                        for w in workers.result()},
            "metrics": steps.result(),
            "fetched_at_ms": int(time.time() * 1000),
            "fetch_s": round(time.perf_counter() - started, 3),
        }


def _job(job: dict) -> dict:
    """What an on-call engineer needs of a job (a job_table row); never its runtime_env
    (secrets live there)."""
    driver = job["driver_info"]
    pid = driver.get("pid")
    return {"job_id": job["job_id"], "status": job["status"], "type": job["type"],
            "submission_id": job["submission_id"],
            "entrypoint": " ".join(str(job["entrypoint"] or "").split())[:200],
            "driver_pid": int(pid) if str(pid or "").isdigit() else None,
            "driver_ip": driver.get("node_ip_address")}


# -- assembling the trainings ----------------------------------------------------------------

_REPR = re.compile(r"^(?P<algo>\w+)\(env=(?P<env>.*?); env-runners=(?P<runners>\d+); "
                   r"learners=(?P<learners>\d+)")


def _group_key(actor: dict) -> str:
    return f"pg:{actor['placement_group_id']}" if actor.get("placement_group_id") else \
        f"job:{actor.get('job_id')}"


def _member(actor: dict, role: str, sources: dict, node_ips: dict, now_ms: int) -> dict:
    calls = [c for c in sources["calls"] if c["actor_id"] == actor["actor_id"]]
    running = [c for c in calls if str(c["state"]).startswith("RUNNING") and c.get("start_time_ms")]
    current = min(running, key=lambda c: c["start_time_ms"]) if running else None
    worker = sources["workers"].get((actor.get("node_id"), actor.get("pid"))) or {}
    entry = {"actor_id": actor["actor_id"], "class_name": actor["class_name"], "role": role,
             "node_id": actor.get("node_id"), "node_ip": node_ips.get(actor.get("node_id")),
             "pid": actor.get("pid"), "state": actor.get("state"),
             "num_restarts": actor.get("num_restarts", 0), "death_cause": actor.get("death_cause"),
             "worker_id": worker.get("worker_id"),
             "call": None, "queued_calls": len(calls) - len(running)}
    if current:
        entry["call"] = {"name": current["name"], "task_id": current["task_id"],
                         "state": current["state"], "started_ms": current["start_time_ms"],
                         "age_s": round(max(0.0, now_ms - current["start_time_ms"]) / 1000, 3)}
    started = worker.get("start_time_ms")
    if started:
        entry["worker_age_s"] = round(max(0.001, (now_ms - started) / 1000), 1)
    if role == "env runner" and worker.get("worker_id"):
        steps = (sources["metrics"].get("steps") or {}).get(worker["worker_id"])
        if steps is not None:
            entry["steps_sampled"] = steps
            if started:
                entry["steps_per_s"] = round(steps / entry["worker_age_s"], 2)
    return entry


def assemble(actors: dict | None, sources: dict, nodes: list[dict] | None) -> dict:
    """Group RLlib's actors into trainings, with their calls, workers and step counts."""
    now_ms = sources.get("fetched_at_ms") or int(time.time() * 1000)
    node_ips = {n["node_id"]: n.get("ip") for n in nodes or []}
    by_ip = {n.get("ip"): n["node_id"] for n in nodes or [] if n.get("alive")}
    groups: dict[str, list[tuple[dict, str]]] = {}
    for actor in (actors or {}).get("items") or []:
        role = _role(actor.get("class_name"))
        if role:
            groups.setdefault(_group_key(actor), []).append((actor, role))
    jobs = sources.get("jobs") or {}
    trainings = []
    for key, members in sorted(groups.items()):
        roles = {role for _, role in members}
        if not roles & {"env runner", "algorithm", "learner"}:
            continue  # a lone Ray Train worker, not RLlib
        job_id = members[0][0].get("job_id")
        job = jobs.get(job_id)
        live = any(a.get("state") != "DEAD" for a, _ in members) or \
            (job or {}).get("status") == "RUNNING"
        if not live:
            continue  # a training that ended: its actors are history
        algo = next((a for a, role in members if role == "algorithm"), None)
        parsed = _REPR.match((algo or {}).get("repr_name") or "")
        runners = [_member(a, "env runner", sources, node_ips, now_ms)
                   for a, role in members if role == "env runner"]
        learners = [_member(a, "learner", sources, node_ips, now_ms)
                    for a, role in members if role in ("learner", "learner?")]
        algorithm_actor = _member(algo, "algorithm", sources, node_ips, now_ms) if algo else None
        training = {
            "id": key, "subject": f"training:{key.split(':', 1)[1]}",
            "job_id": job_id, "placement_group_id": members[0][0].get("placement_group_id"),
            "job": job, "algorithm": parsed.group("algo") if parsed else
            (algo["class_name"] if algo else None),
            "env": parsed.group("env") if parsed else None,
            "runs_in": "actor" if algo else "driver",
            "algorithm_actor": algorithm_actor,
            "runners_configured": int(parsed.group("runners")) if parsed else len(runners),
            "configured_from": "the algorithm's own repr" if parsed else
            "the env runner actors the job created",
            "runners_alive": sum(1 for r in runners if r["state"] == "ALIVE"),
            "runners_restarting": sum(1 for r in runners if r["state"] in ("RESTARTING",
                                                                             "PENDING_CREATION")),
            "runners_dead": sum(1 for r in runners if r["state"] == "DEAD"),
            "runners_ended_on_purpose": sum(1 for r in runners if _ended_on_purpose(r)),
            "runners": runners, "learners": learners,
        }
        if not algo and job and job.get("driver_ip"):
            training["driver"] = {"pid": job.get("driver_pid"), "ip": job.get("driver_ip"),
                                  "node_id": by_ip.get(job.get("driver_ip"))}
        trainings.append(training)
    return {"trainings": trainings, "collected_at_ms": now_ms, "sources_fetch_s": sources.get("fetch_s"),
            "metrics": {k: v for k, v in (sources.get("metrics") or {}).items() if k != "steps"},
            "long_call_s": words.LONG_CALL_S}


def _ended_on_purpose(runner: dict) -> bool:
    cause = runner.get("death_cause") or {}
    return runner.get("state") == "DEAD" and cause.get("reason") in _ENDED_ON_PURPOSE


# -- a closer look at the calls that run long -------------------------------------------------

def _finished_durations(address: str, actor_id: str, timeout: int) -> list[float]:
    from ray.util.state import list_tasks

    # A sample of a peer's finished calls, full by design on any training past its first
    # minutes: not a cut read (bounded.listed would note one on every training check).
    rows = list_tasks(address=address, detail=True, limit=PEER_HISTORY_ROWS, timeout=timeout,
                      raise_on_missing_output=False,
                      filters=[("actor_id", "=", actor_id), ("state", "=", "FINISHED")])
    return [(t.end_time_ms - t.start_time_ms) / 1000 for t in rows
            if t.end_time_ms and t.start_time_ms and t.end_time_ms >= t.start_time_ms]


def look_closer(section: dict, cluster: dict | None, fleet, budget) -> None:
    """Peers' call history and a stack for each runner or learner whose call runs long."""
    from rldoctor.cluster import stacks

    address = state_api_address(cluster)
    long_calls = []
    for training in section["trainings"]:
        for group in ("runners", "learners"):
            members = training[group]
            slow = [m for m in members if (m.get("call") or {}).get("age_s", 0) >= words.LONG_CALL_S]
            if not slow:
                continue
            long_calls += slow
            peers = [m for m in members if m not in slow and m["state"] == "ALIVE"]
            durations: list[float] = []
            if address:
                for peer in peers[:MAX_PEERS_LOOKED_AT]:
                    try:
                        durations += _finished_durations(address, peer["actor_id"],
                                                         int(budget.left(5)))
                    except Exception as exc:  # history is a bonus
                        training.setdefault("history_errors", []).append(first_line(exc, 200))
            if durations:
                training.setdefault("peer_calls", {})[group] = {
                    "count": len(durations), "median_s": round(statistics.median(durations), 3),
                    "p95_s": round(sorted(durations)[int(0.95 * (len(durations) - 1))], 3),
                    "max_s": round(max(durations), 3)}
    long_calls.sort(key=lambda m: -m["call"]["age_s"])
    wanted = [{"node_id": m["node_id"], "pid": m["pid"],
               "label": f"{m['role']} {m['actor_id']}"} for m in long_calls[:MAX_CLOSER_LOOKS]
              if m.get("node_id") and m.get("pid")]
    if not wanted:
        section["stacks"] = {}
        return
    section["stacks"] = stacks.capture(fleet, wanted, budget)
    for entry in section["stacks"].values():  # the snapshot keeps the start of a long dump
        if len(entry.get("text") or "") > STACK_TEXT_KEPT:
            entry["text"] = entry["text"][:STACK_TEXT_KEPT] + "\n[... cut by rldoctor]\n"
    for member in long_calls:
        key = f"{member.get('node_id')}:{member.get('pid')}"
        if key in section["stacks"]:
            member["stack_id"] = key


@section("training_sources", needs=("cluster", "nodes", "job_table", "task_table", "actors"),
         keep=False)
def training_sources_step(ctx) -> dict:
    """What the trainings are made of besides their actors: jobs, metrics, Tune's state."""
    return fetch_sources(ctx.conn, ctx.budget, ctx.doc.get("cluster"), ctx.doc.get("nodes"),
                         ctx.value("job_table"), ctx.value("task_table"), ctx.doc.get("actors"))


@section("training", needs=("actors", "actor_end_times", "training_sources", "nodes", "cluster",
                            "autoscaler"))  # after the autoscaler: its probes answer one call at a time
def training_section(ctx) -> dict:
    """The RLlib trainings on the cluster, then a closer look at their long calls."""
    from rldoctor.cluster import identity

    collectors = ctx.doc["collectors"]
    if ctx.doc.get("actors") is None:
        raise Unavailable("no actor list: " + (collectors.get("actors") or {}).get(
            "reason", (collectors.get("actors") or {}).get("error", "not collected")))
    sources = ctx.record("training_sources")
    if sources.get("status") != "ok":
        raise RuntimeError(sources.get("error") or sources.get("reason") or "no training sources")
    section = assemble(ctx.doc["actors"], ctx.value("training_sources"), ctx.doc.get("nodes"))
    look_closer(section, ctx.doc.get("cluster"), ctx.fleet, ctx.budget)
    identity.identify(section, ctx.fleet, ctx.budget)  # a bare algo.train() loop: which algorithm, env
    return section
