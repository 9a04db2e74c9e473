"""Actors that restart, workers killed for memory, workers that crash, jobs that failed:
RLD401, RLD402, RLD403, RLD405.

A common troubleshooting table's first row ("workers restart often: not enough memory:
raise object_store_memory") is split here into its real causes.
"""

from __future__ import annotations

from collections import defaultdict

from rldoctor import failure_chains as chains, worker_exits as exits
from rldoctor.checks._resources import kill_threshold_in_force
from rldoctor.checks._rllib import age_hours, crash_kind, describe_actor, parse_oom, rllib_role
from rldoctor.checks import _loglines
from rldoctor.registry import check, fail, info, warn
from rldoctor.snapshot import dig
from rldoctor.words import RECENT_DEATH_H, node_label, shorten

_WORKER_TYPES = ("WORKER", "SPILL_WORKER", "RESTORE_WORKER")

RESTART_FIXES = {"an RLlib env runner restarts": (
    "A restart storm hides a bug in the env or its creator that must be fixed; restarts only "
    "buy time. Read the last death in the evidence (memory kills: RLD402; crashes: RLD403) and "
    "the runner's log (`ray logs actor --id <actor id>`). Meanwhile RLlib's fault tolerance "
    "(Ray 2.60 names) decides what happens next: "
    "`config.fault_tolerance(restart_failed_env_runners=True, max_num_env_runner_restarts=N, "
    "delay_between_env_runner_restarts_s=60.0, restart_failed_sub_environments=True)`; the "
    "last one recreates just a failing sub-environment instead of the whole runner. The old "
    "names `recreate_failed_workers` / `max_num_worker_restarts` that older tutorials use raise "
    "a ValueError on this RLlib."
), "another actor restarts": (
    "An actor restarts when its worker process dies and max_restarts allows another try. Find "
    "why it died (last death in the evidence: memory kills are RLD402, crashes RLD403; "
    "`ray logs actor --id <actor id>` has its output) and fix that cause; raising max_restarts "
    "only hides it."
), "Ray's state API listed only some of the actors": (
    "The state API serves at most 10,000 rows (RAY_MAX_LIMIT_FROM_API_SERVER on the "
    "head); look class by class with `ray list actors --detail --filter "
    "class_name=<Class> --limit 10000`, and remove dead detached actors."
)}


def _dead_workers(snap) -> list[dict]:
    """The dead workers, drivers left out (a driver's worker type, or its id where a session
    directory's line does not say it: rldoctor.worker_exits)."""
    return [w for w in snap.field("workers", "dead") or []
            if w.get("worker_type") in _WORKER_TYPES and not exits.is_driver(w)]


def _short(text: str, limit: int = 300) -> str:
    return shorten(text, limit + 4)  # `limit` characters of the text, then " ..."


class _DeathIndex:
    """Dead workers indexed by (node, pid), by node, and memory kills by the task they hit."""

    def __init__(self, dead: list[dict]):
        self.by_pid = {(w.get("node_id"), w.get("pid")): w for w in dead}
        self.by_node: dict[str, list[dict]] = defaultdict(list)
        self.oom_by_class: dict[str, list[tuple[str, dict]]] = defaultdict(list)
        for w in dead:
            self.by_node[w.get("node_id")].append(w)
            task = parse_oom(w.get("exit_detail", "")).get("task_name", "") \
                if w.get("exit_type") == "NODE_OUT_OF_MEMORY" else ""
            if task:
                self.oom_by_class[task.split(":")[-1].split(".")[0]].append((task, w))


def _deaths_of(actor: dict, index: "_DeathIndex") -> tuple[list[dict], str]:
    """Dead workers that hosted this actor, newest first, and how they were matched.

    Ray keeps no death cause for an actor that restarted and is alive again. The
    workers that hosted it are matched by pid where Ray's task events recorded one
    (a worker that dies within a second of its last task loses those events), or
    by the actor's name in a memory-kill message; failing both, the bad deaths on
    the node the actor lives on are the likely ones.
    """
    pids = {(p[0], p[1]) for p in actor.get("pids") or []}
    found = [index.by_pid[p] for p in pids if p in index.by_pid]
    for task, w in index.oom_by_class.get(actor["class_name"], []):  # memory kills name their task
        if w not in found and (not actor.get("name") or task.startswith(f"{actor['name']}:")):
            found.append(w)
    matched = "pid or name"
    if not found:
        nodes = {actor.get("node_id")} | {p[0] for p in pids}
        found = [w for node in nodes for w in index.by_node.get(node, [])]
        matched = "node (likely: same node, not confirmed by pid)"
    return sorted(found, key=lambda w: -(w.get("end_time_ms") or 0)), matched


@check("RLD401", "actor-restarts", area="workers", requires=("actors",),
       params={"fail_at_restarts": 3, "findings_per_class": 5, "recent_hours": RECENT_DEATH_H},
       fixes=RESTART_FIXES)
def actor_restarts(snap, params):
    """Actors restarting or crash-looping, RLlib env runners and learners among them.

    Symptom:
        Training slows down or stalls while `ray list actors --detail` shows
        `num_restarts` climbing; RLlib logs "Env runner ... was restarted", results show
        `fault_tolerance/num_remote_worker_restarts` growing; the driver sees
        `ActorDiedError` or `ActorUnavailableError: The actor was restarted`.

    Cause:
        The worker process behind the actor keeps dying: the env raises or segfaults,
        the node runs out of memory, or the node itself goes away. RLlib restarts env
        runners by default (`restart_failed_env_runners=True`), so a deterministic
        failure becomes a restart storm instead of an error. Reported are actors that
        restart now or restarted, and actors that died for good of their crashes while
        their job still runs. An actor that is over is not: one someone stopped with
        `ray.kill`, one that died with its owner (a driver killed or gone, or the actor
        that created it), one whose job ended; nothing restarts it any more (the crashes
        of its workers stay in RLD403, with their time).

    Advice:
        A common troubleshooting table says "workers restart often: not enough memory:
        raise object_store_memory". That is right only when the object store is what is
        full (RLD301); a worker killed for heap memory needs fewer or smaller env runners
        per node (RLD402), and a crash needs its cause fixed (RLD403).
    """
    index = _DeathIndex(_dead_workers(snap))
    actors_section = snap["actors"]
    if actors_section.get("truncated"):
        yield info("cluster", f"Ray's state API returned {actors_section.get('listed')} of "
                   f"{actors_section.get('total')} actors; restarts of the others were not examined",
                   {"listed": actors_section.get("listed"), "total": actors_section.get("total")},
                   RESTART_FIXES["Ray's state API listed only some of the actors"].format())
    ended_jobs = actors_section.get("ended_jobs") or {}  # {job id: end ms}; absent before 2026-12
    restarted = [a for a in actors_section.get("items") or []
                 if (a.get("num_restarts", 0) > 0 or a.get("state") == "RESTARTING")
                 and not _stopped_on_purpose(a)
                 and not (a.get("state") == "DEAD" and a.get("job_id") in ended_jobs)]
    restarted.sort(key=lambda a: (-a.get("num_restarts", 0), a["actor_id"]))
    per_class: dict[str, list[dict]] = defaultdict(list)
    for actor in restarted:
        per_class[actor["class_name"]].append(actor)
    for class_name, actors in sorted(per_class.items()):
        role = rllib_role(class_name)
        fix = RESTART_FIXES["an RLlib env runner restarts" if role == "env runner"
                            else "another actor restarts"].format()
        shown = actors[:params["findings_per_class"]]
        # from logs the snapshot's time is their last line, not now: an age counts back from it
        ago = "before the logs end" if snap.field("source", "kind") == "logs" else "ago"
        for actor in shown:
            yield _restart_finding(actor, index, params, fix, snap.label(actor.get("node_id")),
                                   snap.get("created_at"), ago)
        rest = actors[len(shown):]
        if rest:
            yield warn("cluster", f"{len(rest)} more {class_name} actor(s) restarted too "
                       f"({sum(a['num_restarts'] for a in rest)} restarts in all)",
                       {"class_name": class_name, "actor_ids": [a["actor_id"] for a in rest[:50]]},
                       fix)


def _stopped_on_purpose(actor: dict) -> bool:
    """A dead actor whose end was no crash of its own: someone ended it with `ray.kill`, its
    owner (the driver or the actor that created it) died, or every reference to it went
    away. Its restarts are over, nothing restarts it: no crash loop, whatever its count.

    Its workers' crashes stay visible (RLD403); an actor that died for good of its own
    crashes (or with its node) while its job still runs is still reported.
    """
    cause = actor.get("death_cause") or {}
    return actor.get("state") == "DEAD" and cause.get("reason") in (
        "RAY_KILL", "OWNER_DIED", "OUT_OF_SCOPE", "REF_DELETED")


def _restart_finding(actor: dict, index: _DeathIndex, params: dict, fix: str, where: str,
                     created: str | None = None, ago: str = "ago"):
    restarts = actor.get("num_restarts", 0)
    state = actor.get("state")
    deaths, matched = _deaths_of(actor, index)
    # up again, and its own last death (matched by pid) older than the window: no restarts now
    since = age_hours(deaths[0].get("end_time_ms"), created) \
        if deaths and matched == "pid or name" else None
    stable = state == "ALIVE" and since is not None and since > params["recent_hours"]
    last = None
    if deaths:
        w = deaths[0]
        last = {"exit_type": w["exit_type"], "pid": w["pid"], "node_id": w["node_id"],
                "detail": _short(w.get("exit_detail", "")), "matched_by": matched}
    elif actor.get("death_cause"):
        cause = actor["death_cause"]
        last = {"exit_type": cause.get("kind"), "detail": _short(cause.get("message", ""))}
    if state == "RESTARTING":
        severity, how = fail, f"is restarting now (restarted {restarts} time(s) so far)"
    elif state == "DEAD":
        severity, how = fail, f"restarted {restarts} time(s), then died for good"
    elif stable:
        severity, how = info, (f"restarted {restarts} time(s), the last {since:.1f} h {ago}; "
                               "up since, no restart now")
    elif restarts >= params["fail_at_restarts"]:
        severity, how = fail, f"restarted {restarts} times: crash loop"
    else:
        severity, how = warn, f"restarted {restarts} time(s)"
    message = f"{describe_actor(actor)} (actor {actor['actor_id'][:12]}) {how}, now on {where}"
    if last:
        reading = ("killed by Ray's memory monitor" if last["exit_type"] in
                   ("NODE_OUT_OF_MEMORY", "oom_context") else
                   crash_kind(last["detail"]) if last["exit_type"] == "SYSTEM_ERROR" else
                   last["exit_type"])
        message += f"; last death: {last['exit_type']} ({reading})"
    evidence = {"actor_id": actor["actor_id"], "class_name": actor["class_name"],
                "rllib_role": rllib_role(actor["class_name"]), "name": actor.get("name"),
                "state": state, "node_id": actor.get("node_id"), "num_restarts": restarts,
                "num_restarts_due_to_node_preemption":
                    actor.get("num_restarts_due_to_node_preemption", 0),
                "last_death": last, "deaths_found": len(deaths), "hours_since_last_death": since}
    return severity(f"actor:{actor['actor_id']}", message, evidence, fix)


OOM_FIXES = {"Ray's memory monitor killed workers": (
    "These kills are about heap memory: the node's processes together (env runners, "
    "learners, their sample batches, plus the object store's pages) used more than "
    "RAY_memory_usage_threshold of the node's RAM, so Ray killed the newest workers to save "
    "the node. Raising object_store_memory (the fix a common troubleshooting table gives for "
    "restarting workers) "
    "does not help here and can make it worse, because the store's memory counts too; it is "
    "the right knob only when the object store itself is full (RLD301). Instead: run fewer "
    "env runners per node (lower num_env_runners, or raise num_cpus_per_env_runner so fewer "
    "fit on a node), make each smaller (num_envs_per_env_runner, rollout_fragment_length, "
    "train_batch_size_per_learner), give the node more memory, or find a leak (RSS of "
    "ray::SingleAgentEnvRunner growing every iteration). `ray logs raylet.out --node-id "
    "{node_id}` lists the top memory users at each kill. To change the threshold set "
    "RAY_memory_usage_threshold (default 0.95) in the environment of `ray start` on every node."
), "the kernel's OOM killer killed workers, or may have": (
    "Check the host's kernel log (`dmesg -T | grep -i -E 'killed process|out of memory'`) for "
    "the dead workers' pids. Kernel OOM kills bypass Ray's monitor: the container or host has "
    "less memory than Ray believes (a cgroup limit Ray did not see), or memory grew faster than "
    "RAY_memory_monitor_refresh_ms. Give the container a limit Ray can read, leave headroom, run "
    "fewer env runners per node, or enable Ray's resource isolation "
    "(`ray start --enable-resource-isolation`)."
)}


@check("RLD402", "oom-kills", area="workers", requires=("workers",),
       params={"recent_hours": RECENT_DEATH_H}, fixes=OOM_FIXES)
@_loglines.also("RLD402")
def oom_kills(snap, params):
    """Workers killed for memory, by Ray's memory monitor or by the kernel.

    Symptom:
        `ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on
        memory`; "N worker(s) were killed due to the node running low on memory" in the
        driver's output; env runners that restart (RLD401) or workers that die without a
        word (RLD403) on a node that is short of RAM.

    Cause:
        The node's memory use passed Ray's kill threshold (`RAY_memory_usage_threshold`,
        0.95 by default), so the raylet killed the most recently started workers; or the
        Linux OOM killer struck first. In RLlib this is nearly always heap memory: too
        many env runners per node, large sample batches, or a leak, not the object store.
        Kills older than `recent_hours` (24 h; in `watch` its window, max(10 rounds,
        10 minutes)) are reported at info: history, no ticket.
    """
    dead = _dead_workers(snap)
    yield from _monitor_kills(snap, dead, params["recent_hours"])
    yield from _kernel_kills(snap, dead, params["recent_hours"])


# RLD402's words: Ray's memory monitor's kills, then the kernel's
_MONITOR_KILLED = ("Ray's memory monitor killed {kills} worker(s) on {node}: memory was {used}, "
                   "above the kill threshold of {threshold:.0%} ({source}){low}")
_LOW_THRESHOLD = "; that threshold is unusually low"
_KERNEL_KILLED = ("{kills} worker(s) on {node} were killed by the kernel's OOM killer (the kernel "
                  "log says \"Killed process {pid} ({name})\"{memcg})")
_IN_MEMCG = ", in memory cgroup {memcg}"
_VANISHED = ("{kills} worker(s) on {node} vanished without notice and the kernel's OOM killer has "
             "killed {count} process(es) in the node's memory cgroup: they may have been killed "
             "for memory by the kernel (its log is not readable here: {why})")


def _monitor_kills(snap, dead, recent_hours):
    """Ray's memory monitor's kills, per node: its workers' exits, else its tasks' errors."""
    kills: dict[str, list[dict]] = defaultdict(list)
    seen = set()
    for w in dead:
        if w.get("exit_type") == "NODE_OUT_OF_MEMORY":
            kills[w["node_id"]].append({"pid": w["pid"], "detail": w.get("exit_detail", ""),
                                        "end_time_ms": w.get("end_time_ms")})
            seen.add((w["node_id"], w["pid"]))
    for t in snap.field("workers", "oom_tasks") or []:
        if t.get("node_id") and (t["node_id"], t.get("worker_pid")) not in seen \
                and not kills.get(t["node_id"]):
            kills[t["node_id"]].append({"pid": t.get("worker_pid"), "detail": t.get("error_message", ""),
                                        "end_time_ms": t.get("end_time_ms"), "task": t.get("name")})
    for node_id, events in sorted(kills.items()):
        yield _monitor_finding(snap, node_id, sorted(events, key=lambda e: -(e.get("end_time_ms") or 0)),
                               recent_hours)


def _monitor_finding(snap, node_id, events, recent_hours):
    latest = parse_oom(events[0]["detail"])
    threshold, source = kill_threshold_in_force(snap.host(node_id))
    if "threshold_fraction" in latest:
        threshold, source = latest["threshold_fraction"], "Ray's kill message"
    node = snap.node(node_id) or {}
    ip = node.get("ip") or latest.get("ip")
    age = age_hours(events[0].get("end_time_ms"), snap.get("created_at"))
    used = (f"{latest['used_gb']:.2f} GB of {latest['limit_gb']:.2f} GB "
            f"({latest['used_fraction']:.0%})" if "used_gb" in latest else "over the limit")
    tasks = sorted({parse_oom(e["detail"]).get("task_name") or e.get("task") or "?" for e in events})
    return (info if age is not None and age > recent_hours else fail)(
        f"node:{node_id}",
        _MONITOR_KILLED.format(kills=len(events), node=node_label(node_id, ip), used=used,
                               threshold=threshold, source=source,
                               low=_LOW_THRESHOLD if threshold < 0.5 else ""),
        {"node_id": node_id, "ip": ip, "kills": len(events),
         "pids": [e["pid"] for e in events[:20]], "killed_tasks": tasks[:20],
         "memory_used_gb": latest.get("used_gb"), "memory_limit_gb": latest.get("limit_gb"),
         "used_fraction": latest.get("used_fraction"), "kill_threshold": threshold,
         "threshold_source": source, "hours_since_last_kill": age,
         "last_message": _short(events[0]["detail"], 400)},
        OOM_FIXES["Ray's memory monitor killed workers"].format(node_id=node_id))


def _kernel_kills(snap, dead, recent_hours):
    """The kernel's OOM killer leaves no trace in Ray except a worker that vanished. The
    kernel's own log names the pids it killed; without it, only the OOM counter of the node's
    own cgroup counts (the host-wide one counts every cgroup since boot)."""
    vanished: dict[str, list[dict]] = defaultdict(list)
    ends = exits.Lazy(snap.data)
    for w in dead:
        if w.get("exit_type") == "SYSTEM_ERROR" and "End of file" in (w.get("exit_detail") or "") \
                and not ends.asked_for(w):
            vanished[w["node_id"]].append(w)
    for node_id, workers in sorted(vanished.items()):
        # a vanishing older than the window is history: info, so no ticket stays open for it
        recent = [w for w in workers
                  if (age_hours(w.get("end_time_ms"), snap.get("created_at")) or 0) <= recent_hours]
        found = _kernel_finding(snap, node_id, workers, warn if recent else info)
        if found:
            yield found


def _kernel_fix() -> str:
    return OOM_FIXES["the kernel's OOM killer killed workers, or may have"].format()


def _kernel_finding(snap, node_id, workers, said):
    host = snap.host(node_id)
    log = host.get("kernel_oom_log") or {}
    evidence = {"node_id": node_id, "pids": [w["pid"] for w in workers[:20]],
                "kernel_oom_kills_since_boot": host.get("kernel_oom_kills")}
    if log.get("readable"):
        killed = {k["pid"]: k for k in log.get("kills") or []}
        matched = [w for w in workers if w.get("pid") in killed]
        if not matched:
            return None  # the kernel killed none of them: RLD403 reports the crash
        evidence["kernel_log"] = [killed[w["pid"]] for w in matched[:20]]
        first = killed[matched[0]["pid"]]
        return said(f"node:{node_id}", _KERNEL_KILLED.format(
            kills=len(matched), node=snap.label(node_id), pid=matched[0]["pid"], name=first["name"],
            memcg=_IN_MEMCG.format(memcg=first["memcg"]) if first.get("memcg") else ""),
            evidence, _kernel_fix())
    limit = host.get("memory_limit") or {}
    counters = {"cgroup_oom_kills": host.get("cgroup_oom_kills") or limit.get("oom_kills")}
    if not any(counters.values()):
        return None
    return said(f"node:{node_id}", _VANISHED.format(
        kills=len(workers), node=snap.label(node_id), count=counters["cgroup_oom_kills"],
        why=log.get("error") or "not collected"), {**evidence, **counters}, _kernel_fix())


CRASH_FIXES = {"workers crashed": (
    "Read the dead worker's own log: `ray logs worker-{worker_id}*.err --node-id {node_id}` "
    "(and the .out next to it) shows the last words of the process. A segfault or abort "
    "(SIGSEGV, SIGABRT) comes from native code, usually the env's simulator or a C extension: "
    "run the env alone with `python -X faulthandler` to reproduce it, and in RLlib set "
    "`config.fault_tolerance(restart_failed_sub_environments=True)` to contain it. A worker "
    "that vanished without notice (\"connection error code 2. End of file\") was killed with "
    "SIGKILL: by the kernel's OOM killer (check `dmesg`; then see RLD402), by `ray stop "
    "--force`, by a person or a supervisor, or it called os._exit. A SIGTERM (\"The process "
    "receives a SIGTERM\") is a stop someone asked for: `ray stop`, a person, or a supervisor "
    "such as Kubernetes ending the pod; it is no crash of the code."
)}


@check("RLD403", "worker-crashes", area="workers", requires=("workers",),
       params={"fail_at_crashes": 3, "recent_hours": RECENT_DEATH_H}, fixes=CRASH_FIXES)
@_loglines.also("RLD403")
def worker_crashes(snap, params):
    """Workers that died of system errors or signals (segfault, SIGKILL) that are not OOM kills.

    Symptom:
        `ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this
        task`, `WorkerCrashedError`, or "Worker unexpectedly exits with a connection error
        code 2. End of file" in the driver's output or `ray list workers --detail`.

    Cause:
        The worker process died outside Ray's control: a segfault or abort in native code
        (env simulators, C extensions), a SIGKILL from the kernel's OOM killer, from
        `ray stop --force` or from a person, or an `os._exit` in user code. Ray records
        it as exit type `SYSTEM_ERROR`, and so it records ends that someone asked for,
        which are left out here and told by the timeline: a driver that exited (worker type
        DRIVER, its id the job id followed by `ff...f`; rldoctor's own `check` drivers among
        them), the workers of a job that SUCCEEDED or was STOPPED (`ray job stop`), which Ray
        ends with SIGTERM ("The process receives a SIGTERM"), a worker Ray stopped with
        SIGTERM because its actor was ended with `ray.kill`, went out of scope or lost its
        owner, and rldoctor's own probe workers (namespace `rldoctor-*`). So is a worker that
        exited because the user's code raised (RLlib's env runner calls `sys.exit(1)` after
        the exception, which Ray also records as `SYSTEM_ERROR`), and the workers of a failed
        job that died with it: that is the failed job's story, told by RLD405.
        Crashes older than `recent_hours` (24 h; in `watch` its window, max(10 rounds,
        10 minutes)) are reported at info: history, no ticket.
    """
    created = snap.get("created_at")
    dead_nodes = {n["node_id"] for n in snap.nodes if not n.get("alive")}
    # A worker that exited because the user's code raised (RLlib's env runner calls
    # sys.exit(1) after the exception, and Ray records SYSTEM_ERROR) is a failed job's story
    # (RLD405), not a crash.
    claimed = chains.claimed_workers(snap.data) if snap.has("jobs") else set()
    # An end someone asked for (a driver that exited, a stopped or finished job's workers, an
    # actor ended or let go, rldoctor's own) is no crash: the timeline tells it.
    ends = exits.Lazy(snap.data)
    crashes: dict[str, list[dict]] = defaultdict(list)
    for w in _dead_workers(snap):
        if w.get("exit_type") == "SYSTEM_ERROR" and w.get("node_id") not in dead_nodes \
                and (w.get("node_id"), w.get("pid")) not in claimed and not ends.asked_for(w):
            crashes[w["node_id"]].append(w)  # workers of dead nodes: RLD101 tells that story
    for node_id, workers in sorted(crashes.items()):
        workers.sort(key=lambda w: -(w.get("end_time_ms") or 0))
        latest = workers[0]
        recent = [w for w in workers
                  if (age_hours(w.get("end_time_ms"), created) or 0) <= params["recent_hours"]]
        kinds = sorted({crash_kind(w.get("exit_detail", "")) for w in workers})
        if not recent:
            severity = info
        elif len(recent) >= params["fail_at_crashes"]:
            severity = fail
        else:
            severity = warn
        node = snap.node(node_id) or {}
        yield severity(
            f"node:{node_id}",
            f"{len(workers)} worker(s) on {node_label(node_id, node.get('ip') or latest.get('ip'))} "
            f"died of a system error: {'; '.join(kinds)} (latest pid {latest['pid']})",
            {"node_id": node_id, "crashes": len(workers), "recent_crashes": len(recent),
             "pids": [w["pid"] for w in workers[:20]],
             "worker_ids": [w["worker_id"] for w in workers[:20]], "kinds": kinds,
             "latest_detail": _short(latest.get("exit_detail", ""), 400),
             "hours_since_latest": age_hours(latest.get("end_time_ms"), created)},
            CRASH_FIXES["workers crashed"].format(worker_id=latest["worker_id"], node_id=node_id),
        )


JOB_FIXES = {"the user's code raised": (
    "Fix the user's code at {frame}: it raised {exc} in {who}. Reproduce it outside Ray by "
    "stepping the env alone (`env = MyEnv(cfg); env.reset(); env.step(env.action_space.sample())` "
    "in a loop) with the same env_config. RLlib's fault tolerance only hides such a bug: "
    "`config.fault_tolerance(restart_failed_env_runners=True)` restarts the runner and "
    "`restart_failed_sub_environments=True` recreates just the env, and both keep failing on a "
    "deterministic error."
), "the node under the training died": (
    "The node under the training died ({reason}); see RLD101 for why nodes die and how to "
    "replace one (its `raylet.out` and the host's `dmesg`, the autoscaler's or the cloud's "
    "events). A training survives a lost node only when RLlib may replace its runners: "
    "`config.fault_tolerance(restart_failed_env_runners=True, ignore_env_runner_failures=False)` "
    "(and checkpoints, `algo.save_to_path()` every few iterations, to resume after a driver "
    "loss)."
), "the user's code is missing on a node": (
    "The user's code ({module}) is installed on some nodes only: {node} could not import it. "
    "Ship it with the job instead of installing it by hand: `ray job submit "
    "--working-dir . -- python train.py` (or runtime_env={{\"working_dir\": \".\"}}), or "
    "`runtime_env={{\"py_modules\": [\"path/to/{module}\"]}}` for a package; or put it in the "
    "image every node runs."
), "a worker was killed for memory": (
    "A worker of the job was killed for memory: see RLD402 for the node's memory and the fix "
    "(fewer or smaller env runners per node, more memory per node, or a fixed leak)."
), "the runtime_env could not be built": (
    "The job's runtime_env could not be built on a node: see RLD404 for the node's own reason "
    "(pip's last error line) and fix the package list or the index it reaches."
), "a worker was killed from outside": (
    "A worker of the job was killed from outside: check the node's `dmesg -T | grep -i "
    "'killed process'` for a kernel OOM kill (then RLD402's fix), and whoever may send SIGKILL "
    "(a person, `ray stop --force`, a supervisor ending the pod)."
), "an actor's owner died first": (
    "The actor's owner (the process that created it) died first; follow the owner in the "
    "evidence: its own death is the root cause."
), "the root cause is not recorded": (
    "Read the driver's log for the first error (`ray job logs {sid}`), and the logs of the "
    "job's workers (`ray logs worker-*.err`); the chain in the evidence says what Ray recorded."
)}


@check("RLD405", "job-failed", area="workers", requires=("jobs",),
       params={"window_s": chains.WINDOW_S}, fixes=JOB_FIXES)
@_loglines.also("RLD405")
def job_failed(snap, params):
    """A job or RLlib training that ended in failure within the window, with its root cause.

    Symptom:
        `ray job status` says FAILED with "Job entrypoint command failed with exit code 1",
        and the logs end in a bare `RuntimeError` raised by RLlib's `_try_env_step`, in
        `ActorDiedError: The actor died unexpectedly before finishing this task. class_name:
        SingleAgentEnvRunner`, or in `ActorUnavailableError: ... The actor is temporarily
        unavailable`; the user's own exception sits further up, in another process's log.

    Cause:
        Something ended one worker of the job and, with RLlib's fault tolerance off
        (`restart_failed_env_runners=False`), the whole training: the user's own code raised
        (in the env's `step()`, say), the worker's node died, Ray's memory monitor or the
        kernel killed it, it could not import the user's code on its node
        (`ModuleNotFoundError`: the code is installed on some nodes only), its runtime_env
        could not be built, or its owner died. Ray records each part in another place (the
        driver's traceback, the actor's death cause, the worker's exit, the node's death);
        the finding joins them into one chain. A job that succeeded, or that its user
        stopped, is not reported.
    """
    for chain in chains.failed_jobs(snap.data, params.get("window_s")):
        yield _job_finding(chain)


def _job_finding(chain: dict):
    job, root, exc, worker = chain["job"], chain["root"], chain["exception"], chain["worker"]
    name = chains.job_name(job)
    when = job.get("end_time")
    when_text = _clock(when)
    entry = chains.short_entrypoint(job.get("entrypoint"))
    message = (f"job {name}{(' (' + entry + ')') if entry else ''} failed"
               f"{(' at ' + when_text) if when_text else ''}: {root['summary']}")
    who = (f"{worker.get('class_name')} (actor {worker.get('actor_id')}, pid {worker.get('pid')}, "
           f"node {worker.get('node_id')})" if worker else "a worker")
    kind = root["kind"]
    fix = _job_fix(kind, chain, who)
    evidence = {
        "submission_id": job.get("submission_id"), "job_id": job.get("job_id"),
        "entrypoint": job.get("entrypoint"), "status": job.get("status"),
        "error_type": job.get("error_type"), "driver_exit_code": job.get("driver_exit_code"),
        "start_time": job.get("start_time"), "end_time": when,
        "root_cause": kind, "exception": exc, "worker": worker, "node": chain.get("node"),
        "code_missing": chain.get("code_missing"),
        "driver_exception": chain.get("driver_exception"),
        "chain": [{"time": _clock(link["time"]) if link.get("time") else None, "what": link["what"]}
                  for link in chain["links"]],
        "worker_log": chain.get("worker_log"),
    }
    if chain["not_recorded"]:
        evidence["not_recorded"] = chain["not_recorded"]
    subject = f"job:{job.get('submission_id') or job.get('job_id')}"
    return fail(subject, message, evidence, fix)


# RLD405: the root cause's kind (rldoctor.failure_chains) -> its case of JOB_FIXES
_JOB_CASES = {"user_error": "the user's code raised", "node_died": "the node under the training died",
              "code_missing": "the user's code is missing on a node",
              "oom": "a worker was killed for memory", "runtime_env": "the runtime_env could not be built",
              "killed": "a worker was killed from outside", "signal": "a worker was killed from outside",
              "owner_died": "an actor's owner died first"}


def _job_fix(kind: str, chain: dict, who: str) -> str:
    """RLD405's fix: the case of the root cause's kind, filled in from the chain."""
    job, exc = chain["job"], chain["exception"]
    if kind == "user_error":
        values = {"frame": chains.frame_text(dig(exc, "frame")) or
                  "the innermost frame of your code in the traceback",
                  "exc": f"{exc['type']}: {exc['message']}" if exc else "an exception", "who": who}
    elif kind == "node_died":
        values = {"reason": dig(chain, "node", "death_reason") or "reason not recorded"}
    elif kind == "code_missing":
        missing = chain.get("code_missing") or {}
        values = {"module": missing.get("module") or "the module",
                  "node": f"node {missing.get('node_id') or '?'}"}
    else:
        values = {"sid": job.get("submission_id") or job.get("job_id") or "<id>"}
    return JOB_FIXES[_JOB_CASES.get(kind, "the root cause is not recorded")].format(**values)


def _clock(epoch) -> str | None:
    if not epoch:
        return None
    from datetime import datetime, timezone

    return datetime.fromtimestamp(float(epoch), timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
