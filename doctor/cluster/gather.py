"""What the bundle collects beyond the snapshot, through Ray alone: no SSH.

`Gatherer` is an extra of `collect_snapshot`: it runs once the snapshot is taken, while
the probe fleet is still up, and gathers
- from the state API: jobs (with their drivers), calls running now, and the runtime envs
  (never written: their env_vars values are what the redactor must mask everywhere);
- per node, over the dashboard's HTTP log route: log tails and the logs of workers that
  died recently, one thread per node;
- per node, through its probe: host facts, py-spy stacks of the processes that matter
  (rldoctor.cluster.stacks), and the tail of each running Tune trial's result.json.
Every item has its own deadline; a dead or silent node's items fail with the reason,
and the rest is still collected. It only gathers: redaction happens before writing.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from rldoctor.bundle import node_dir
from rldoctor.node import onnode
from rldoctor.cluster.logs import LogError, LogRoute, LogTimeout
from rldoctor.bundle.manifest import Item
from rldoctor.cluster.stack_targets import stack_targets
from rldoctor.cluster.session import Budget
from rldoctor.errors import first_line
from rldoctor.cluster.task_table import by_job, jobs_with_live_actors
from rldoctor import words

ITEMS_BUDGET_S = 20.0  # everything after the snapshot
STATE_TIMEOUT_S = 5
PROBE_CALL_TIMEOUT_S = 3.0
STACK_TIMEOUT_S = 2.0
LOG_LINES, LOG_MAX_BYTES = 1000, 256 * 1024
WORKER_LOG_LINES, WORKER_LOG_MAX_BYTES = 300, 128 * 1024
NODE_LOGS = ("raylet.out", "raylet.err", "dashboard_agent.log", "runtime_env_agent.log")
HEAD_LOGS = ("gcs_server.out", "gcs_server.err", "dashboard.log", "monitor.log")
DEAD_WORKERS_PER_NODE, DEAD_WORKERS_TOTAL = 4, 16
TUNE_ROWS, TUNE_MAX_BYTES = 10, 512 * 1024
MAX_RUNNING_ROWS = 2000  # the oldest calls: the ones that matter
MAX_DEAD_NODES = 32


class Gatherer:
    """Called as `gatherer(conn, budget, fleet, doc)` by collect_snapshot; fills `items`."""

    __name__ = "bundle"

    def __init__(self, progress=None, items_budget_s: float = ITEMS_BUDGET_S):
        self.progress = progress or (lambda text: None)
        self.items_budget_s = items_budget_s
        self.items: list[Item] = []
        self.secret_sources: list = []  # runtime envs and the like: learned by the redactor, never written
        self.stacks: dict = {}
        self.ran = False
        self._lock = threading.Lock()
        self._ips: dict[str, str] = {}

    # -- bookkeeping --------------------------------------------------------------------------
    def _where(self, node_id: str | None) -> str:
        return words.node_label(node_id, self._ips.get(node_id)) if node_id else "cluster"

    def _done(self, item: Item) -> Item:
        with self._lock:
            self.items.append(item)
        state = "ok" if item.status == "ok" else f"FAILED: {item.error}"
        took = f" in {item.duration_s:.2f}s" if item.duration_s is not None else ""
        self.progress(f"{self._where(item.node_id)}: {item.name} {state}{took}")
        return item

    # -- the extra ----------------------------------------------------------------------------
    def __call__(self, conn, budget, fleet, doc) -> None:
        from rldoctor.cluster.cluster_facts import state_api_address

        self.ran = True
        onnode.register()
        deadline = Budget(self.items_budget_s)
        nodes = doc.get("nodes") or []
        self._ips = {n["node_id"]: n.get("ip") or "?" for n in nodes}
        alive = [n for n in nodes if n.get("alive")]
        dead = [n for n in nodes if not n.get("alive")]
        for node in dead[:MAX_DEAD_NODES]:
            self._dead_node(node)
        if len(dead) > MAX_DEAD_NODES:
            self._done(Item("node", f"{len(dead) - MAX_DEAD_NODES} more dead node(s)").fail(
                "dead: Ray serves nothing from a dead node (listed in snapshot.json)"))
        state_api = state_api_address(doc.get("cluster"))
        route = None
        if state_api and (doc.get("cluster") or {}).get("dashboard_url"):
            from rldoctor.cluster.private import http_auth_headers

            route = LogRoute(doc["cluster"]["dashboard_url"], http_auth_headers())
        dead_workers = _recent_dead_workers(doc)
        with ThreadPoolExecutor(max_workers=min(16, len(alive) + 4)) as pool:
            futures = {}
            own_job = _own_job_id()
            if state_api:
                futures = {name: pool.submit(func, state_api) for name, func in (
                    ("jobs", _list_jobs), ("envs", _list_runtime_envs))}
                futures["running"] = pool.submit(
                    lambda: _list_running(state_api, own_job,
                                          _jobs_running_calls(futures["jobs"], doc.get("actors"))))
            logs = [pool.submit(self._node_logs, route, node, dead_workers.get(node["node_id"], []),
                                deadline, _own_logs(doc, node["node_id"])) for node in alive]
            hosts = self._ask_nodes(fleet, alive,
                                    lambda n: (onnode.host_details, _session_dir(doc, n["node_id"])))
            jobs = self._state_result(futures.get("jobs"), "jobs", "cluster/jobs.json", state_api)
            running = self._state_result(futures.get("running"), "running calls",
                                         "cluster/running_tasks.json", state_api)
            self._resolve_drivers(jobs or [], nodes)
            tune = self._start_tune(fleet, jobs or [])
            targets = stack_targets(doc, running or [], jobs or [], time.time() * 1000)
            self._take_stacks(fleet, targets, deadline)
            self._finish_host_facts(hosts, doc, deadline)
            self._finish_tune(tune, deadline)
            try:
                self.secret_sources.append(futures["envs"].result(timeout=deadline.left(STATE_TIMEOUT_S)))
            except Exception:
                pass  # only what the redactor learns beforehand; the patterns still mask env_vars
            for future in logs:
                future.result()

    # -- nodes that are gone ------------------------------------------------------------------
    def _dead_node(self, node: dict) -> None:
        reason = node.get("death_reason") or "dead"
        message = (node.get("death_message") or "").strip()
        item = Item("node", "logs, host facts and stacks", node_id=node["node_id"])
        self._done(item.fail(f"the node is dead ({reason}{': ' + message[:200] if message else ''}); "
                             "Ray serves nothing from a dead node"))

    # -- state API ----------------------------------------------------------------------------
    def _state_result(self, future, name: str, file: str, state_api):
        item = Item("cluster", name, file=file)
        started = time.perf_counter()
        if future is None:
            self._done(item.fail("Ray's state API is not reachable (no dashboard)"))
            return None
        try:
            rows = future.result(timeout=STATE_TIMEOUT_S + 1)
        except FutureTimeout:
            self._done(item.fail(f"Ray's state API did not answer within {STATE_TIMEOUT_S + 1}s",
                                 time.perf_counter() - started))
            return None
        except Exception as exc:
            self._done(item.fail(first_line(exc), time.perf_counter() - started))
            return None
        item.payload, item.duration_s = rows, round(time.perf_counter() - started, 3)
        item.details["rows"] = len(rows)
        if name == "jobs":
            self.secret_sources.append(rows)
        self._done(item)
        return rows

    def _resolve_drivers(self, jobs: list[dict], nodes: list[dict]) -> None:
        """A driver's node id, from its IP when Ray gives none (and only when unambiguous)."""
        by_ip: dict[str, list[str]] = {}
        for node in nodes:
            if node.get("alive"):
                by_ip.setdefault(node.get("ip"), []).append(node["node_id"])
        for job in jobs:
            driver = job.get("driver") or {}
            if not driver.get("node_id") and len(by_ip.get(driver.get("ip"), [])) == 1:
                driver["node_id"] = by_ip[driver["ip"]][0]

    # -- logs, one thread per node ------------------------------------------------------------
    def _node_logs(self, route, node: dict, dead_workers: list[dict], deadline,
                   own: tuple[str, ...] = ()) -> None:
        """The node's Ray logs and the logs of its recently dead workers (those first: a
        crashed worker's last lines are the most specific evidence there is). `own` names the
        files the node's own raylet, GCS and runtime env agent hold open (raylet.2.out where
        several nodes share one log folder), read too."""
        node_id = node["node_id"]
        base = f"{node_dir(node_id)}/logs"
        if route is None:
            self._done(Item("log", "logs", node_id=node_id).fail(
                "Ray's state API is not reachable (no dashboard), so no logs"))
            return
        started = time.perf_counter()
        try:
            present = set(route.list_files(node_id))
        except LogError as exc:
            self._done(Item("log", "log listing", node_id=node_id).fail(
                f"{exc}", time.perf_counter() - started))
            return
        wanted = []
        for worker in dead_workers:
            for name in sorted(present):
                if worker["worker_id"] in name and name.endswith((".err", ".out", ".log")):
                    wanted.append((name, f"{base}/workers/{name.rsplit('/', 1)[-1]}",
                                   WORKER_LOG_LINES, WORKER_LOG_MAX_BYTES,
                                   {"worker_id": worker["worker_id"], "pid": worker.get("pid"),
                                    "exit_type": worker.get("exit_type")}))
        names = NODE_LOGS + (HEAD_LOGS if node.get("is_head") else ())
        wanted += [(name, f"{base}/{name}", LOG_LINES, LOG_MAX_BYTES, {})
                   for name in names + tuple(n for n in own if n not in names) if name in present]
        silent = None
        for name, file, lines, max_bytes, details in wanted:
            item = Item("log", name, node_id=node_id, file=file, details=dict(details))
            if silent:
                self._done(item.fail(f"not tried: the node did not answer for {silent}"))
                continue
            if deadline.deadline - time.monotonic() < 0.5:
                self._done(item.fail("not tried: the bundle's time for items ran out"))
                continue
            started = time.perf_counter()
            try:
                data, dropped = route.tail(node_id, name, lines, max_bytes)
            except LogTimeout as exc:
                silent = name
                self._done(item.fail(str(exc), time.perf_counter() - started))
                continue
            except LogError as exc:
                self._done(item.fail(str(exc), time.perf_counter() - started))
                continue
            item.payload = data
            item.duration_s = round(time.perf_counter() - started, 3)
            item.details.update(lines=lines, truncated_bytes=dropped)
            self._done(item)

    # -- through the probes -------------------------------------------------------------------
    def _ask_nodes(self, fleet, nodes: list[dict], call):
        """Host facts asked of every node's probe at once (rldoctor.cluster.fleet.send)."""
        from rldoctor.cluster.fleet import send

        calls = {}
        for node in nodes:
            func, *args = call(node)
            calls[node["node_id"]] = (node["node_id"], "call_here", func, *args)
        return send(fleet, calls)

    def _finish_host_facts(self, asked, doc: dict, deadline) -> None:
        for node_id, answer in asked.wait(deadline.left(PROBE_CALL_TIMEOUT_S)).items():
            item = Item("host", "host facts", node_id=node_id, file=f"{node_dir(node_id)}/host.json")
            took = answer.took_s
            if answer.kind == "no_probe":
                self._done(Item("host", "host facts", node_id=node_id).fail(
                    f"no probe on the node: {answer.error}"))
                continue
            if answer.kind == "timeout":
                self._done(item.fail(f"the node's probe did not answer within "
                                     f"{PROBE_CALL_TIMEOUT_S:g}s", took))
                continue
            if not answer.ok:
                self._done(item.fail(f"probe failed: {answer.error}", took))
                continue
            details = answer.value
            item.payload = {
                "node_id": node_id, "ip": self._ips.get(node_id),
                "host": (doc.get("hosts") or {}).get(node_id),
                "versions": ((doc.get("versions") or {}).get("nodes") or {}).get(node_id),
                "details": details,
            }
            item.duration_s = round(took, 3)
            self._done(item)

    def _take_stacks(self, fleet, targets: list[dict], deadline) -> None:
        from rldoctor.cluster import stacks

        if not targets:
            self.progress("no RLlib process or long call found: no stacks to take")
            return
        self.progress(f"taking {len(targets)} stack(s) with py-spy")
        self.stacks = stacks.capture(fleet, targets, deadline, per_stack_timeout_s=STACK_TIMEOUT_S)
        for key, entry in self.stacks.items():
            node_id, pid = entry["node_id"], entry["pid"]
            item = Item("stack", f"stack of pid {pid} ({entry['label']})", node_id=node_id,
                        file=f"{node_dir(node_id)}/stacks/{pid}.txt",
                        duration_s=entry.get("duration_s"),
                        details={"pid": pid, "label": entry["label"], "where": entry.get("where")})
            if entry["status"] == "ok":
                item.payload = entry.get("text", "").encode("utf-8")
                self._done(item)
            else:
                self._done(item.fail(entry.get("error") or "py-spy failed"))
        by_node: dict[str, list[dict]] = {}
        for entry in self.stacks.values():
            shown = {k: v for k, v in entry.items() if k != "text"}
            shown["file"] = (f"{node_dir(entry['node_id'])}/stacks/{entry['pid']}.txt"
                             if entry["status"] == "ok" else None)
            by_node.setdefault(entry["node_id"], []).append(shown)
        for node_id, entries in sorted(by_node.items()):
            if any(e["status"] == "ok" for e in entries):
                with self._lock:  # an index of the node's stacks, not an item of its own
                    self.items.append(Item("stacks", "stacks, parsed", node_id=node_id,
                                           file=f"{node_dir(node_id)}/stacks.json", payload=entries))

    def _start_tune(self, fleet, jobs: list[dict]):
        """Tune's result tails asked of each running job's driver node (fleet.send)."""
        from rldoctor.cluster.fleet import send

        calls = {}
        for job in jobs:
            driver = job.get("driver") or {}
            node_id, pid = driver.get("node_id"), driver.get("pid")
            if job.get("status") != "RUNNING" or not pid or not node_id:
                continue
            calls[job.get("job_id")] = (node_id, "call_here", onnode.tune_result_tails, int(pid),
                                        TUNE_ROWS, TUNE_MAX_BYTES)
        return send(fleet, calls)

    def _finish_tune(self, asked, deadline) -> None:
        for job_id, answer in asked.wait(deadline.left(PROBE_CALL_TIMEOUT_S)).items():
            node_id, took = answer.node_id, answer.took_s
            if answer.kind == "no_probe":
                self._done(Item("tune", f"Tune results of job {job_id}", node_id=node_id)
                           .fail("no probe on the driver's node"))
                continue
            if answer.kind == "timeout":
                self._done(Item("tune", f"Tune results of job {job_id}", node_id=node_id).fail(
                    f"the driver's node did not answer within {PROBE_CALL_TIMEOUT_S:g}s", took))
                continue
            if not answer.ok:
                self._done(Item("tune", f"Tune results of job {job_id}", node_id=node_id)
                           .fail(f"probe failed: {answer.error}", took))
                continue
            found = answer.value
            for trial in found:
                name = trial["trial"] or "trial"
                self._done(Item("tune", f"result.json of trial {name}", node_id=node_id,
                                file=f"tune/{name}/result.json", duration_s=round(took, 3),
                                payload=trial["rows"],
                                details={"job_id": job_id, "rows": len(trial["rows"]),
                                         "file_bytes": trial["size"]}))


def _session_dir(doc: dict, node_id: str) -> str | None:
    return (((doc.get("hosts") or {}).get(node_id) or {}).get("raylet") or {}).get("session_dir")


def _own_logs(doc: dict, node_id: str) -> tuple[str, ...]:
    """The log files a node's own Ray processes hold open, as its probe saw them (or, for a
    node whose probe could not start, as its raylet log was found from outside)."""
    seen = ((doc.get("hosts") or {}).get(node_id) or {}).get("ray_logs") or {}
    names = [f.get("file") for f in seen.get("files") or [] if isinstance(f, dict)]
    failed = ((doc.get("versions") or {}).get("failed") or {}).get(node_id) or {}
    names += list((failed.get("ray_logs") or {}).get("files") or [])
    return tuple(dict.fromkeys(n for n in names if isinstance(n, str) and "/" not in n))


def _taken_ms(doc: dict) -> float:
    """When the snapshot was taken (the checks judge "recent" from it), else now."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(doc["created_at"])).timestamp() * 1000
    except (KeyError, TypeError, ValueError):
        return time.time() * 1000


def _recent_dead_workers(doc: dict) -> dict[str, list[dict]]:
    """The workers that died of a bad exit lately, newest first, a few per node."""
    dead = list((doc.get("workers") or {}).get("dead") or [])
    now_ms = _taken_ms(doc)
    dead = [w for w in dead if w.get("worker_id") and w.get("node_id")
            and (now_ms - (w.get("end_time_ms") or 0)) / 1000 <= words.RECENT_DEATH_S]  # the checks' window: a finding's log is in the bundle
    dead.sort(key=lambda w: -(w.get("end_time_ms") or 0))
    by_node: dict[str, list[dict]] = {}
    for w in dead[:DEAD_WORKERS_TOTAL * 4]:
        mine = by_node.setdefault(w["node_id"], [])
        if len(mine) < DEAD_WORKERS_PER_NODE and sum(map(len, by_node.values())) < DEAD_WORKERS_TOTAL:
            mine.append(w)
    return by_node


def _own_job_id() -> str | None:
    try:
        import ray

        return ray.get_runtime_context().get_job_id()
    except Exception:
        return None


def _list_jobs(address: str) -> list[dict]:
    from rldoctor.cluster.job_table import JobTable

    out = []
    for job in JobTable(address, STATE_TIMEOUT_S).rows(None):
        driver = job["driver_info"]
        out.append({
            "job_id": job["job_id"], "submission_id": job["submission_id"],
            "type": str(job["type"] or ""), "status": str(job["status"] or ""),
            "entrypoint": job["entrypoint"], "start_time": job["start_time"],
            "end_time": job["end_time"], "message": job["message"],
            "error_type": job["error_type"], "runtime_env": job["runtime_env"],
            "metadata": job["metadata"],
            "driver": {"ip": driver.get("node_ip_address"), "node_id": job["driver_node_id"],
                       "pid": int(driver["pid"]) if str(driver.get("pid") or "").isdigit() else None},
        })
    for job in out:  # JobStatus / JobType enums read as "JobStatus.RUNNING" in some versions
        for key in ("status", "type"):
            job[key] = job[key].rsplit(".", 1)[-1]
    return out


def _jobs_running_calls(jobs, actors: dict | None) -> list[str] | None:
    """The jobs that can have calls running: those whose driver runs and those with live
    actors (a detached actor outlives its job); None when either is unknown."""
    with_actors = jobs_with_live_actors(actors)
    if with_actors is None:
        return None
    try:
        rows = jobs.result(timeout=STATE_TIMEOUT_S + 1)
    except Exception:
        return None
    running = [j["job_id"] for j in rows if j.get("status") == "RUNNING" and j.get("job_id")]
    return with_actors + [j for j in running if j not in with_actors]


def _list_running(address: str, own_job: str | None, job_ids: list[str] | None) -> list[dict]:
    """Calls running now (not drivers, not rldoctor's own probes), the oldest first: read job
    by job when few jobs can have any (rldoctor.cluster.task_table.by_job)."""
    from ray.util.state import list_tasks

    def read(job_id: str | None = None) -> list:
        scope = [("job_id", "=", job_id)] if job_id else []
        return list_tasks(address=address, detail=True, limit=10_000, timeout=STATE_TIMEOUT_S,
                          raise_on_missing_output=False, filters=scope + [("state", "=", "RUNNING")])

    rows = by_job([j for j in job_ids if j != own_job] if job_ids is not None else None, read, read)
    now_ms = time.time() * 1000
    rows = sorted((t for t in rows if t.type != "DRIVER_TASK" and t.job_id != own_job),
                  key=lambda t: t.start_time_ms or now_ms)
    return [{
        "task_id": t.task_id, "name": t.name, "func_or_class_name": t.func_or_class_name,
        "type": t.type, "job_id": t.job_id, "actor_id": t.actor_id, "node_id": t.node_id,
        "worker_pid": t.worker_pid, "start_time_ms": t.start_time_ms,
        "age_s": round((now_ms - t.start_time_ms) / 1000, 1) if t.start_time_ms else None,
    } for t in rows[:MAX_RUNNING_ROWS]]


def _list_runtime_envs(address: str) -> list:
    """Every runtime env the cluster knows (per node) and every actor's: for the redactor only."""
    from ray.util.state import list_actors, list_runtime_envs

    found: list = []
    for rows in (list_runtime_envs(address=address, limit=10_000, timeout=STATE_TIMEOUT_S,
                                   raise_on_missing_output=False),
                 list_actors(address=address, detail=True, limit=10_000, timeout=STATE_TIMEOUT_S,
                             raise_on_missing_output=False)):
        for row in rows:
            env = row.get("runtime_env") or row.get("serialized_runtime_env")
            if env:
                found.append({"runtime_env": env})
    return found
