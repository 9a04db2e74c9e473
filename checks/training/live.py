"""The user's own RLlib trainings, live: RLD605 hung runners, RLD606 lost runners,
RLD608 throughput that dropped.

Pure functions of the snapshot's `training` section (rldoctor.cluster.training): per
training its env runners and learners, the call each is in now and how long it has
run, the peers' finished calls, py-spy stacks of the long calls, and each runner's
env steps from RLlib's own counters. RLD608 also reads a run's results (`runs`).
"""

from __future__ import annotations

import os
import statistics

from rldoctor.checks import _runs
from rldoctor.registry import check, fail, note, warn
from rldoctor.snapshot import dig
from rldoctor.words import node_label

STEPS_COUNTER = "rllib_env_runner_num_env_steps_sampled_counter"  # RLlib's, per env runner


def _trainings(snap) -> list[dict]:
    return snap.field("training", "trainings") or []


def _who(member: dict) -> str:
    return (f"{member['role']} {member['actor_id'][:12]} ({member['class_name']}, pid "
            f"{member.get('pid')} on {node_label(member.get('node_id'), member.get('node_ip'))})")


def _training_name(training: dict) -> str:
    """`the training of job 1c000000 (PPO in its driver: python train.py ...)`."""
    algo = training.get("algorithm") or "RLlib"
    if training.get("runs_in") == "actor":
        where = f"{algo} in its own actor"
    else:
        entry = " ".join(os.path.basename(w) if i < 2 else w for i, w in enumerate(
            dig(training, "job", "entrypoint", default="").split()))
        where = f"{algo} in its driver" + (
            f": {entry[:60]}{'...' if len(entry) > 60 else ''}" if entry else "")
    return f"the training of job {training.get('job_id')} ({where})"


def stuck_in(stack: dict | None) -> str | None:
    """`UserEnv.step (my_env.py:45) -> wait (my_env.py:56)`: the user's frames, outermost first."""
    frames = dig(stack, "user_frames", default=[])
    if not frames:
        return None
    import os

    def text(f):
        where = os.path.basename(f.get("file") or "") or "?"
        return f"{f.get('function')} ({where}{':' + str(f['line']) if f.get('line') is not None else ''})"

    return " -> ".join(text(f) for f in reversed(frames[:3]))


HUNG_FIXES = {"an env runner (or learner) is stuck in one call": (
    "The env runner is stuck inside its env (or a callback): the stack shows where. Fix the "
    "call that does not return: give the simulator or network call in step()/reset() a timeout "
    "and raise on it, so RLlib can restart the runner (`config.fault_tolerance("
    "restart_failed_env_runners=True)`, the default). Until then, killing the runner's actor "
    "(`ray.kill` on it, or the pid) lets RLlib replace it. RLlib's `sample_timeout_s` only makes "
    "the algorithm stop waiting (it logs \"No samples returned from remote workers... consider "
    "increasing sample_timeout_s\"): raising it hides the hang, it does not end it."
)}


@check("RLD605", "env-runner-hung", area="training", requires=("training",),
       params={"floor_s": 20.0, "peer_factor": 10.0, "alone_factor": 3.0}, fixes=HUNG_FIXES)
def env_runner_hung(snap, params):
    """An env runner (or learner) busy in one call far longer than its peers, with the stack frame it is stuck in.

    Symptom:
        A training stops making progress: no new iteration, `time_this_iter_s` jumps,
        RLlib logs "No samples returned from remote workers" after `sample_timeout_s`,
        while the cluster looks healthy and `ray list actors` shows every runner ALIVE.

    Cause:
        One runner's call (RLlib routes sample() through `EnvRunner.apply`) does not
        return: the env's `step()` or `reset()` waits on a simulator, a socket or a lock
        that never answers, or a callback blocks. RLlib does not see a hung runner as
        unhealthy until its health probe times out, and every later call queues behind it.

        rldoctor counts a call as hung when it has run longer than `floor_s` (20 s, so a slow
        first sample is not reported) and than `peer_factor` (10) times the p95 of the peers'
        finished calls, or than `alone_factor` x `floor_s` when the runner has no peer; the
        stack in the evidence is taken with py-spy from the runner's node, never by calling
        the actor.
    """
    stacks = snap["training"].get("stacks") or {}
    for training in _trainings(snap):
        for group, role in (("runners", "env runner"), ("learners", "learner")):
            members = training.get(group) or []
            peers = dig(training, "peer_calls", group)
            for member in members:
                age = dig(member, "call", "age_s") or 0
                others = any(m is not member and m.get("state") == "ALIVE" for m in members)
                bar, compared = _hung_bar(params, peers if others else None)
                if age < params["floor_s"] or age < bar:
                    continue
                stack = stacks.get(member.get("stack_id") or "")
                evidence = {"training": training["subject"], "actor_id": member["actor_id"],
                            "class_name": member["class_name"], "role": role,
                            **_hung_evidence(member, peers, bar, stack)}
                yield fail(f"actor:{member['actor_id']}",
                           _HUNG.format(who=_who(member), training=_training_name(training),
                                        call=dig(member, "call", "name"), age=age, compared=compared)
                           + (_HUNG_QUEUED.format(n=member["queued_calls"])
                              if member.get("queued_calls") else "") + _stuck_words(stack),
                           evidence, HUNG_FIXES["an env runner (or learner) is stuck in one call"].format())


# RLD605's message, as data: the call, then what is queued behind it, then where it is stuck.
_HUNG = "{who} of {training} has been inside one call ({call}) for {age:.0f} s while {compared}"
_HUNG_QUEUED = ", with {n} more call(s) queued behind it"
_HUNG_PEERS = "its peers' calls take {median_s:.2f} s (p95 {p95_s:.2f} s, {count} calls)"
_HUNG_ALONE = "it has no peer to compare with"


def _hung_bar(params: dict, peers: dict | None) -> tuple[float, str]:
    """(the age past which a call is hung, how it was compared): against the peers' p95 when
    there are live peers that finished calls, else `alone_factor` x `floor_s`."""
    if peers:
        return max(params["floor_s"], params["peer_factor"] * peers["p95_s"]), _HUNG_PEERS.format(**peers)
    return params["alone_factor"] * params["floor_s"], _HUNG_ALONE


def _stuck_words(stack: dict | None) -> str:
    frames = stuck_in(stack)
    if frames:
        return f"; it is stuck in {frames}"
    return f"; its stack could not be taken: {stack.get('error')}" if stack else "; no stack was taken"


def _hung_evidence(member: dict, peers: dict | None, bar: float, stack: dict | None) -> dict:
    return {"node_id": member.get("node_id"), "node_ip": member.get("node_ip"),
            "pid": member.get("pid"), "call": member.get("call") or {},
            "queued_calls": member.get("queued_calls"), "peer_calls": peers,
            "bar_s": round(bar, 2), "user_frames": dig(stack, "user_frames"),
            "stack": {k: dig(stack, k) for k in ("status", "where", "error", "text", "duration_s")}
            if stack else None}


LOST_FIXES = {"env runners died and were not replaced": (
    "The training goes on with fewer env runners than it was built with: less data per "
    "iteration and slower learning. Read each lost runner's death cause in the evidence (a "
    "node that died: RLD101; memory: RLD402; a crash: RLD403 and the worker's .err log). To "
    "have RLlib replace runners instead of dropping them, keep "
    "`config.fault_tolerance(restart_failed_env_runners=True)` (the default) with enough "
    "`max_num_env_runner_restarts`; `ignore_env_runner_failures=True` without restarts runs "
    "on with what is left."
)}


@check("RLD606", "env-runners-lost", area="training", requires=("training",), fixes=LOST_FIXES)
def env_runners_lost(snap, params):
    """A training running with fewer healthy env runners than it was configured with.

    Symptom:
        Iterations sample fewer env steps than they used to, `fault_tolerance/
        num_env_runners_dropped_lifetime` or `num_remote_worker_restarts` rises in the
        results, and `ray list actors` shows env runner actors DEAD or RESTARTING while
        the job is still running.

    Cause:
        Env runners died (a node lost, a worker killed for memory, a crash in the env)
        and RLlib could not or was told not to replace them: restarts off
        (`restart_failed_env_runners=False`), restarts exhausted
        (`max_num_env_runner_restarts`), or failures ignored (`ignore_env_runner_failures`).

        A training that lost half of its runners or more is a fail, fewer a warn; runners
        stopped on purpose (`ray.kill`, `algo.stop()`) do not count.
    """
    for training in _trainings(snap):
        runners = training.get("runners") or []
        lost = [r for r in runners if r.get("state") == "DEAD" and not _on_purpose(r)]
        restarting = [r for r in runners if r.get("state") in ("RESTARTING", "PENDING_CREATION")]
        configured = training.get("runners_configured") or len(runners)
        if not lost and not restarting:
            continue
        healthy = sum(1 for r in runners if r.get("state") == "ALIVE")
        parts = [f"{_who(r)} died: {_death(r)}" for r in lost]
        parts += [f"{_who(r)} is {r['state'].lower()} after {r.get('num_restarts', 0)} restart(s)"
                  for r in restarting]
        severity = fail if configured and len(lost) * 2 >= configured else warn
        yield severity(
            training["subject"],
            f"{_training_name(training)} runs with {healthy} of {configured} env runner(s) "
            f"healthy: " + "; ".join(parts),
            {"runners_configured": configured, "configured_from": training.get("configured_from"),
             "runners_healthy": healthy,
             "lost": [{"actor_id": r["actor_id"], "node_id": r.get("node_id"),
                       "node_ip": r.get("node_ip"), "pid": r.get("pid"),
                       "num_restarts": r.get("num_restarts"), "death_cause": r.get("death_cause")}
                      for r in lost],
             "restarting": [{"actor_id": r["actor_id"], "node_id": r.get("node_id"),
                             "num_restarts": r.get("num_restarts")} for r in restarting]},
            LOST_FIXES["env runners died and were not replaced"].format())


def _on_purpose(runner: dict) -> bool:
    return dig(runner, "death_cause", "reason", default="") in (
        "RAY_KILL", "OUT_OF_SCOPE", "REF_DELETED")


def _death(runner: dict) -> str:
    cause = runner.get("death_cause") or {}
    message = " ".join((cause.get("message") or "").split())
    reason = cause.get("reason") or cause.get("kind") or "no cause recorded"
    return f"{reason}" + (f" ({message[:200]})" if message else "")


DROP_FIXES = {"a runner samples far below its peers, or a run below its earlier rate": (
    "A runner far slower than its peers is hung (RLD605), starved (a node whose CPUs are "
    "oversubscribed, RLD303 for memory), or far from the learner (RLD201). A run slower than "
    "it used to be: compare the iteration timers in the results (env_runner_sampling_timer vs "
    "learner_update_timer) to see which side slowed down, and check the cluster (`rldoctor "
    "check`) for restarts (RLD401), spilling (RLD302) and slow nodes (RLD201-RLD202)."
)}
_DROP = "a runner samples far below its peers, or a run below its earlier rate"


@check("RLD608", "throughput-drop", area="training", requires=("training|runs",),
       params={"fraction_of_peers": 0.25, "min_age_s": 30.0, "fraction_of_earlier": 0.33,
               "window": 5}, fixes=DROP_FIXES)
def throughput_drop(snap, params):
    """A training's sampling throughput fell far below its own earlier rate, or one runner samples far below its peers.

    Symptom:
        Iterations take longer and longer, `env_runners/num_env_steps_sampled_lifetime`
        grows more slowly than it did, or one env runner contributes far fewer env steps
        than the others.

    Cause:
        Live: one runner's env steps (RLlib's own counter, exported by every node,
        divided by the runner's age) are a fraction of its peers': it is hung, starved of
        CPU, or slowed by its node. In a run's results: the env steps per second of the
        recent iterations are well below the run's best earlier rate: a runner lost or
        hung, a node that slowed down, or the learner holding the samplers back.

        Live, a runner under a quarter of its peers' median rate (alive at least 30 s) is
        reported; in results, a recent median rate under a third of the best earlier median
        (5-iteration windows). The evidence has the figures to compare.
    """
    for training in _trainings(snap):
        runners = [r for r in training.get("runners") or [] if r.get("state") == "ALIVE"]
        counted = [r for r in runners if r.get("steps_per_s") is not None]
        if not counted and len(runners) >= 2 and all(
                (r.get("worker_age_s") or 0) >= params["min_age_s"] for r in runners):
            yield note(training["subject"], _no_counter(snap, training))
        if not counted or len(runners) < 2:
            continue
        for runner in runners:
            rate = runner.get("steps_per_s")
            age = runner.get("worker_age_s")
            if rate is None:
                rate = 0.0  # no step counted at all while its peers have some
            peers = [r["steps_per_s"] for r in counted if r is not runner]
            if not peers or (age is not None and age < params["min_age_s"]):
                continue
            median = statistics.median(peers)
            if median <= 0 or rate >= params["fraction_of_peers"] * median:
                continue
            yield warn(f"actor:{runner['actor_id']}",
                       f"{_who(runner)} of {_training_name(training)} sampled "
                       f"{runner.get('steps_sampled') or 0:.0f} env steps"
                       + (f" in {age:.0f} s" if age else "") + f" ({rate:.1f} steps/s), "
                       f"{rate / median:.0%} of its peers' median {median:.1f} steps/s",
                       {"training": training["subject"], "actor_id": runner["actor_id"],
                        "node_id": runner.get("node_id"), "steps_per_s": rate,
                        "steps_sampled": runner.get("steps_sampled"), "worker_age_s": age,
                        "peers_steps_per_s": peers, "call": runner.get("call")},
                       DROP_FIXES[_DROP].format())
    for run in snap.get("runs") or []:
        yield from _run_drop(run, params)


def _no_counter(snap, training: dict) -> str:
    """Why the runners of a live training could not be compared (no step counter anywhere)."""
    version = snap.field("cluster", "ray_version")
    failed = snap.field("training", "metrics", "failed") or {}
    why = (f"the metrics endpoint of {len(failed)} node(s) did not answer" if failed else
           f"no node exports RLlib's `{STEPS_COUNTER}`"
           + (f" (the cluster's RLlib, Ray {version}, may predate it)" if version else ""))
    return (f"the env runners of {_training_name(training)} were not compared live: {why}; "
            "results (--run) can still show a drop")


def _run_drop(run: dict, params: dict):
    points = _runs.series(run, "env_steps_per_s")
    w = params["window"]
    if len(points) < 3 * w:
        return
    values = [v for _, v in points]
    # Rolling medians after a warm-up window; the best earlier against the latest.
    medians = [statistics.median(values[i:i + w]) for i in range(w, len(values) - w + 1)]
    if len(medians) < 2:
        return
    best_i = max(range(len(medians) - 1), key=lambda i: medians[i])
    best, recent = medians[best_i], statistics.median(values[-w:])
    if best <= 0 or recent >= params["fraction_of_earlier"] * best:
        return
    start = points[w + best_i][0]
    yield warn(_runs.subject(run), f"sampling throughput fell to {recent:.0f} env steps/s over "
               f"the last {w} iterations (to {points[-1][0]:g}), {recent / best:.0%} of the "
               f"{best:.0f} env steps/s of iterations {start:g}-{points[w + best_i + w - 1][0]:g}",
               {**_runs.read_note(run), "recent_median_steps_per_s": round(recent, 1),
                "best_median_steps_per_s": round(best, 1), "best_window_from_iteration": start,
                "steps_per_s": [[it, round(v, 1)] for it, v in points[-12:]]}, DROP_FIXES[_DROP].format())
