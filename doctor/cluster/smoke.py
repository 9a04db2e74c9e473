"""`rldoctor smoke-train`: PPO on CartPole-v1 across the cluster, proven to learn, measured.

The active half of the doctor: it runs real work, the way a popular PPO-on-CartPole
cluster tutorial deploys it (RLlib PPO, env runners spread over the nodes, a checkpoint
that is restored and serves actions), and measures it the way that tutorial's
performance table does.

Like the collectors, this module imports ray only inside functions: `rldoctor
--help` stays light. It produces a snapshot document (schema rldoctor.snapshot/v1)
with two sections that the checks in `rldoctor.checks.training.runs` read:

    smoke    the run: outcome, settings, per-iteration curve (a run record's points as they
             stand, read by rldoctor.metric_numbers.point_of), figures, where each
             env runner ran, and the checkpoint round trip
    scaling  the sweep over env-runner counts (`--scaling 1,2,4`), when asked for

The driver itself never imports torch or RLlib: the Algorithm lives in an actor
(`rldoctor.node.smoke.SmokeTrainer`), shipped by value, inside a placement group
with one bundle per env runner and strategy SPREAD.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Callable

from rldoctor import words
from rldoctor.errors import Undiagnosable, UsageError, last_line
from rldoctor.metric_numbers import finite


# ------------------------------------------------------------------------------------------
# The smoke run's settings. Chosen for a fast, reliable CartPole-v1 run to a mean return of
# 195 on a small machine (2 cores reach it in well under a minute, Ray start included), not
# copied from that tutorial (its 4000-step batches and 10 epochs of 256 take minutes).
# benchmarks/smoke_vs_tuned.py measures them against RLlib's own tuned CartPole settings.
# ------------------------------------------------------------------------------------------
@dataclass
class SmokeSettings:
    # environment: gymnasium id; CartPole-v1 caps an episode at 500 steps
    env: str = "CartPole-v1"
    # learning rate of Adam; 1e-3 learns CartPole in a few thousand steps at this batch size
    lr: float = 1e-3
    # env steps per training iteration (split over the env runners); small batches mean
    # frequent updates, which is what makes CartPole fast
    train_batch_size: int = 1000
    # SGD minibatch size inside an iteration
    minibatch_size: int = 250
    # passes over each train batch
    num_epochs: int = 6
    # discount and GAE lambda: CartPole's usual 0.99 / 0.95
    gamma: float = 0.99
    gae_lambda: float = 0.95
    # weight of the value loss in the total loss (separate value net, so only its scale)
    vf_loss_coeff: float = 0.01
    # entropy bonus: none needed for CartPole
    entropy_coeff: float = 0.0
    # PPO's clip range
    clip_param: float = 0.2
    # policy (and value) network: hidden layer sizes, activation, and whether policy and
    # value function share the hidden layers
    hiddens: tuple = (64, 64)
    activation: str = "tanh"
    vf_share_layers: bool = False
    # vectorised envs per env runner: batched inference makes each runner faster
    envs_per_env_runner: int = 4
    # episodes in RLlib's smoothed episode_return_mean (`metrics_num_episodes_for_smoothing`);
    # the target is reached when this mean crosses it
    smoothing_episodes: int = 20
    # RLlib restarts failed env runners up to this many times (restarts point to RLD401)
    max_env_runner_restarts: int = 3
    # random seed of the run (None: RLlib's default, nondeterministic)
    seed: int | None = None
    # hang detection: a training iteration that does not return within this many seconds
    iteration_timeout_s: float = 120.0
    # placement group ready plus Algorithm built within this many seconds, or the run hung
    startup_timeout_s: float = 180.0
    # checkpoint round trip: greedy episodes played by the restored policy (0: no round trip)
    eval_episodes: int = 5
    # scaling sweep: iterations per env-runner count (the first is warm-up, not measured)
    scaling_iterations: int = 4

    def to_dict(self) -> dict:
        out = asdict(self)
        out["hiddens"] = list(self.hiddens)
        return out


# What RLlib's tuned CartPole PPO example uses (ray/rllib/tuned_examples/ppo/cartpole_ppo.py):
# lr 3e-4, 6 epochs, vf_loss_coeff 0.01, one 32-unit linear layer shared with the value
# head; everything else PPOConfig's defaults (4000-step batches, minibatches of 128, two
# env runners with one env each). Used by benchmarks/smoke_vs_tuned.py.
def rllib_tuned_settings(**overrides) -> SmokeSettings:
    base = SmokeSettings(lr=3e-4, train_batch_size=4000, minibatch_size=128, num_epochs=6,
                         vf_loss_coeff=0.01, hiddens=(32,), activation="linear",
                         vf_share_layers=True, envs_per_env_runner=1)
    for key, value in overrides.items():
        setattr(base, key, value)
    return base


DEFAULT_TARGET_RETURN = 195.0  # the tutorial's goal (gym's "solved" threshold for CartPole)
DEFAULT_TIME_BUDGET_S = 180.0
RUNNER_CPU_STEPS = (1.0, 0.5, 0.25, 0.2, 0.1)


@dataclass
class SmokeOptions:
    address: str | None = None
    env_runners: int | None = None  # None: one per alive node
    target_return: float = DEFAULT_TARGET_RETURN
    time_budget_s: float = DEFAULT_TIME_BUDGET_S
    scaling: list[int] = field(default_factory=list)
    settings: SmokeSettings = field(default_factory=SmokeSettings)


class _Hung(Exception):
    pass


class _Crashed(Exception):
    pass


# ------------------------------------------------------------------------------------------
# Pure helpers (no ray): sizing, statistics, figures. Unit-tested.
# ------------------------------------------------------------------------------------------
def plan_cpus(free_cpus_per_node: list[float], num_env_runners: int) -> float:
    """CPUs per bundle (the learner's and each runner's) so that 1 + N bundles fit.

    One CPU each when the nodes have room; otherwise the largest fraction that fits
    (a 1-CPU node holds two half-CPU bundles). Logical CPUs only: a runner stepping
    CartPole uses what the OS gives it.
    """
    needed = num_env_runners + 1
    for cpus in RUNNER_CPU_STEPS:
        slots = sum(int(math.floor(free / cpus + 1e-9)) for free in free_cpus_per_node)
        if slots >= needed:
            return cpus
    total = sum(free_cpus_per_node)
    raise Undiagnosable(
        f"not enough free CPU for the smoke run: {num_env_runners} env runner(s) plus the learner "
        f"need {needed} bundles of at least {RUNNER_CPU_STEPS[-1]:g} CPU, the cluster has "
        f"{total:g} CPU free; use fewer --env-runners or free the cluster")


def mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None




def _r(value, digits=3):
    return None if value is None else round(float(value), digits)


def compute_figures(smoke: dict) -> dict:
    """The smoke run's figures from its curve, timings and placement."""
    curve = smoke.get("curve") or []
    target = smoke.get("target_return")
    # the curve is a run record's points (NaN kept as text): the figures read finite numbers
    iter_times = [finite(c.get("time_this_iter_s")) for c in curve]
    total_time = sum(t for t in iter_times if t)
    steps = finite(curve[-1].get("env_steps_lifetime")) if curve else None
    returns = [finite(c.get("return_mean")) for c in curve if finite(c.get("return_mean")) is not None]
    hit = next((c for c in curve if finite(c.get("return_mean")) is not None and target is not None
                and finite(c["return_mean"]) >= target), None)
    runners = smoke.get("env_runners") or []
    runner_nodes = sorted({r.get("node_id") for r in runners if r.get("node_id")})
    figures = {
        "outcome": smoke.get("outcome"),
        "target_return": target,
        "reached_target": hit is not None,
        "started_local_ray": bool(smoke.get("started_local_ray")),
        "connect_s": _r(smoke.get("connect_s")),
        "startup_s": _r(smoke.get("startup_s")),
        "iterations": len(curve),
        "iteration_s_mean": _r(mean(iter_times)),
        "iteration_s_p95": _r(words.percentile(iter_times, 95)),
        "env_steps_sampled": steps,
        "env_steps_per_s": _r(steps / total_time, 1) if steps and total_time else None,
        "steps_to_target": finite(hit.get("env_steps_lifetime")) if hit else None,
        "seconds_to_target": _r(hit.get("elapsed_s"), 2) if hit else None,
        "training_seconds_to_target": (_r(hit["elapsed_s"] - smoke["startup_s"], 2)
                                       if hit and smoke.get("startup_s") is not None else None),
        "best_return": _r(max(returns), 2) if returns else None,
        "final_return": _r(returns[-1], 2) if returns else None,
        "smoothing_episodes": (smoke.get("settings") or {}).get("smoothing_episodes"),
        "learner_update_s_mean": _r(mean(finite(c.get("learner_update_s")) for c in curve), 4),
        "weight_sync_s_mean": _r(mean(finite(c.get("sync_weights_s")) for c in curve), 4),
        "sample_s_mean": _r(mean(finite(c.get("sample_s")) for c in curve), 4),
        "wall_s": _r(smoke.get("wall_s"), 2),
        "num_env_runners": smoke.get("num_env_runners"),
        "alive_nodes": len(smoke.get("nodes") or []),
        "env_runner_nodes": len(runner_nodes),
        "learner_node_id": (smoke.get("learner") or {}).get("node_id"),
        "env_runners": [{"index": r.get("worker_index"), "node_id": r.get("node_id"),
                         "node_ip": r.get("node_ip")} for r in runners],
        "runner_restarts": max((finite(c.get("runner_restarts")) or 0 for c in curve), default=0),
    }
    ckpt = smoke.get("checkpoint") or {}
    figures["checkpoint"] = {k: ckpt.get(k) for k in ("status", "mean_return", "returns", "save_s",
                                                      "restore_s", "error") if k in ckpt}
    return figures


def scaling_table(runs: list[dict]) -> dict:
    """Speedup, parallel efficiency and throughput per CPU of a sweep; the recommended count.

    Speedup and efficiency are relative to the smallest count measured. A run's CPU cost
    is one CPU for the learner plus one per env runner (what each uses when busy).
    """
    ok = [r for r in runs if r.get("status") == "ok" and r.get("env_steps_per_s")]
    if not ok:
        return {"runs": runs, "baseline": None, "recommended": None}
    base = min(ok, key=lambda r: r["env_runners"])
    for r in ok:
        r["cpus"] = 1 + r["env_runners"]
        r["speedup"] = round(r["env_steps_per_s"] / base["env_steps_per_s"], 3)
        r["efficiency"] = round(r["speedup"] / (r["env_runners"] / base["env_runners"]), 3)
        r["env_steps_per_s_per_cpu"] = round(r["env_steps_per_s"] / r["cpus"], 1)
    best = max(ok, key=lambda r: (r["env_steps_per_s_per_cpu"], -r["env_runners"]))
    fastest = max(ok, key=lambda r: r["env_steps_per_s"])
    return {"runs": runs, "baseline": base["env_runners"], "recommended": best["env_runners"],
            "fastest": fastest["env_runners"]}


# ------------------------------------------------------------------------------------------
# The driver
# ------------------------------------------------------------------------------------------
def recorded_local_address() -> str | None:
    """The cluster `ray start` last started on this machine, if it still answers; else None.

    Ray's record (`ray_current_cluster` in $RAY_TMPDIR or /tmp/ray). Unlike `check
    --address auto`, the smoke run does not fall back to any GCS process it can find
    on the machine: it starts real work, so it only joins the cluster Ray itself
    recorded, and otherwise starts a local instance of its own. The one private
    Ray function used here; tests/test_smoke_units.py covers it.
    """
    import socket

    from ray._private.services import find_bootstrap_address

    address = find_bootstrap_address(None)
    if not address:
        return None
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2.0):
            return address
    except (OSError, ValueError):
        return None


class _Cluster:
    """The driver's connection: an existing cluster, or a local Ray it started (and stops)."""

    def __init__(self, address: str | None):
        self.address = address
        self.started_local = False
        self.resolved = None
        self.connect_s = 0.0

    def __enter__(self):
        from rldoctor.cluster import connect

        started = time.monotonic()
        explicit = self.address and self.address not in ("auto", "local")
        if explicit or os.environ.get("RAY_ADDRESS"):
            self.resolved = connect.resolve(self.address)
            connect.join(self.resolved, timeout_s=30.0)
        else:
            self.resolved = recorded_local_address()
            if self.resolved:
                connect.join(self.resolved, timeout_s=30.0)
            else:
                self._start_local()
        self.connect_s = time.monotonic() - started
        return self

    def _start_local(self):
        import secrets

        from rldoctor.cluster.auth import find_token

        # Ray 2.60 starts local instances with token auth and, without a token at hand,
        # writes a new one to ~/.ray/auth_token. Give this private instance a token of its
        # own in the environment instead (ray.init then turns token mode on by itself).
        if os.environ.get("RAY_AUTH_MODE", "token").lower() == "token" \
                and find_token()[0] is None:
            os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        import logging

        import ray

        try:
            ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False,
                     log_to_driver=False, logging_level=logging.ERROR,
                     namespace=f"rldoctor-{uuid.uuid4().hex[:12]}")
        except Exception as exc:
            raise Undiagnosable(f"no Ray cluster found and a local Ray instance could not be "
                                f"started: {last_line(exc)}") from None
        self.started_local = True
        self.resolved = ray.get_runtime_context().gcs_address

    def __exit__(self, *exc):
        import ray

        if ray.is_initialized():
            ray.shutdown()


def _alive_nodes() -> list[dict]:
    """The alive nodes with their CPUs, total and free, from the nodes section read now."""
    from rldoctor.cluster import nodes as node_section

    found = []
    for n in node_section.read(free_required=False):
        if not n.get("alive"):
            continue
        total = float(n["resources_total"].get("CPU", 0.0))
        found.append({"node_id": n["node_id"], "node_ip": n.get("ip"), "cpus": total,
                      "free_cpus": float(n["resources_available"].get("CPU", total))})
    return sorted(found, key=lambda n: n["node_ip"] or "")


class _Trainer:
    """One PPO Algorithm in an actor inside a SPREAD placement group; cleaned up on close."""

    def __init__(self, settings: SmokeSettings, num_env_runners: int, nodes: list[dict]):
        self.settings = settings
        self.n = num_env_runners
        self.bundle_cpus = plan_cpus([n["free_cpus"] for n in nodes], num_env_runners)
        self.pg = None
        self.actor = None

    def start(self) -> dict:
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from rldoctor.node import smoke as smoke_remote

        smoke_remote.register()
        bundles = [{"CPU": self.bundle_cpus} for _ in range(self.n + 1)]
        self.pg = placement_group(bundles, strategy="SPREAD",
                                  name=f"rldoctor-smoke-{uuid.uuid4().hex[:8]}")
        try:
            ray.get(self.pg.ready(), timeout=self.settings.startup_timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise _Hung(f"the placement group for the learner and {self.n} env runner(s) "
                        f"({self.n + 1} bundles of {self.bundle_cpus:g} CPU, SPREAD) was not "
                        f"scheduled within {self.settings.startup_timeout_s:g}s") from None
        strategy = PlacementGroupSchedulingStrategy(
            placement_group=self.pg, placement_group_bundle_index=0,
            placement_group_capture_child_tasks=True)
        self.actor = ray.remote(smoke_remote.SmokeTrainer).options(
            num_cpus=self.bundle_cpus, scheduling_strategy=strategy, max_restarts=0).remote()
        return self._call("build", self.settings.startup_timeout_s, self.settings.to_dict(),
                          self.n, self.bundle_cpus, self.bundle_cpus)

    def _call(self, method: str, timeout: float, *args):
        import ray

        ref = getattr(self.actor, method).remote(*args)
        try:
            return ray.get(ref, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise _Hung(f"{method}() did not return within {timeout:g}s") from None
        except ray.exceptions.RayError as exc:
            raise _Crashed(f"{method}() failed: {last_line(exc)}") from None

    def train(self) -> dict:
        return self._call("train", self.settings.iteration_timeout_s)

    def placement(self) -> dict:
        return self._call("placement", 60.0)

    def round_trip(self, seed: int) -> dict:
        return self._call("round_trip", self.settings.startup_timeout_s + 120.0,
                          self.settings.eval_episodes, seed)

    def close(self) -> None:
        import ray

        if self.actor is not None:
            try:
                ray.get(self.actor.stop.remote(), timeout=30)
            except Exception:
                pass
            try:
                ray.kill(self.actor)
            except Exception:
                pass
            self.actor = None
        if self.pg is not None:
            try:
                from ray.util.placement_group import remove_placement_group

                remove_placement_group(self.pg)
            except Exception:
                pass
            self.pg = None


def _progress_line(point: dict) -> str:
    ret = finite(point.get("return_mean"))
    best = point.get("best_return")
    sps = point.get("steps_per_s")
    return (f"iter {int(finite(point.get('iteration')) or 0):>3}  t={point['elapsed_s']:6.1f}s  "
            f"return {'-' if ret is None else f'{ret:6.1f}'}  "
            f"best {'-' if best is None else f'{best:6.1f}'}  "
            f"env steps/s {'-' if sps is None else f'{sps:7.0f}'}  "
            f"steps {int(finite(point.get('env_steps_lifetime')) or 0):>7}  "
            f"iter {finite(point.get('time_this_iter_s')) or 0:5.2f}s")


def _main_run(opts: SmokeOptions, nodes: list[dict], clock: Callable[[], float],
              say: Callable[[str], None]) -> dict:
    settings = opts.settings
    n = opts.env_runners or max(1, len(nodes))
    ips = {node["node_id"]: node["node_ip"] for node in nodes}
    smoke: dict = {"outcome": None, "stage": "startup", "target_return": opts.target_return,
                   "time_budget_s": opts.time_budget_s, "num_env_runners": n,
                   "settings": settings.to_dict(), "curve": [], "env_runners": [],
                   "learner": {}, "checkpoint": {"status": "skipped"}}
    trainer = _Trainer(settings, n, nodes)
    smoke["bundle_cpus"] = trainer.bundle_cpus
    say(f"smoke-train: PPO on {settings.env} with {n} env runner(s) over {len(nodes)} node(s); "
        f"target return {opts.target_return:g}, time budget {opts.time_budget_s:g}s")
    try:
        build = trainer.start()
        smoke["build_s"] = build.get("build_s")
        smoke["stage"] = "placement"
        where = trainer.placement()
        smoke["learner"] = {"node_id": where["learner_node_id"],
                            "node_ip": ips.get(where["learner_node_id"])}
        smoke["env_runners"] = [dict(r, node_ip=ips.get(r["node_id"])) for r in where["env_runners"]]
        used = len({r["node_id"] for r in smoke["env_runners"]})
        say(f"env runners on {used} of {len(nodes)} node(s): " + ", ".join(
            f"#{r['worker_index']} on {words.node_label(r['node_id'], r['node_ip'])}"
            for r in smoke["env_runners"]))
        smoke["startup_s"] = clock()
        smoke["stage"] = "training"
        best = None
        while True:
            if clock() >= opts.time_budget_s:
                smoke["outcome"] = "missed"
                break
            point = trainer.train()
            point["elapsed_s"] = round(clock(), 3)
            iter_s, env_steps = finite(point.get("time_this_iter_s")), finite(point.get("env_steps"))
            if iter_s and env_steps:
                point["steps_per_s"] = round(env_steps / iter_s, 1)
            ret = finite(point.get("return_mean"))
            if ret is not None:
                best = ret if best is None else max(best, ret)
            point["best_return"] = best
            smoke["curve"].append(point)
            say(_progress_line(point))
            if ret is not None and ret >= opts.target_return:
                smoke["outcome"] = "reached"
                break
        smoke["stage"] = "checkpoint"
        try:
            final = trainer.placement()
            seqs = {r["worker_index"]: r.get("weights_seq_no") for r in final["env_runners"]}
            for r in smoke["env_runners"]:
                r["final_weights_seq_no"] = seqs.get(r["worker_index"])
            smoke["learner"]["final_weights_seq_no"] = final.get("learner_weights_seq_no")
        except (_Hung, _Crashed):
            pass
        if settings.eval_episodes > 0:
            say("checkpoint round trip: save, restore in a fresh Algorithm, act with the restored module ...")
            smoke["checkpoint"] = trainer.round_trip(settings.seed or 0)
        ck = smoke["checkpoint"]
        if ck.get("status") == "skipped":
            pass
        elif ck.get("status") == "ok":
            say(f"checkpoint round trip ok: restored policy's mean return {ck['mean_return']:.1f} "
                f"over {len(ck['returns'])} episodes (save {ck['save_s']:.1f}s, restore {ck['restore_s']:.1f}s)")
        else:
            say(f"checkpoint round trip FAILED at {ck.get('step')}: {ck.get('error')}")
        smoke["stage"] = "done"
    except _Hung as exc:
        smoke["outcome"], smoke["error"] = "hung", str(exc)
    except _Crashed as exc:
        smoke["outcome"], smoke["error"] = "crashed", str(exc)
    finally:
        trainer.close()
    if smoke["outcome"] in ("hung", "crashed"):
        say(f"smoke run {smoke['outcome']} during {smoke['stage']}: {smoke['error']}")
    smoke["wall_s"] = clock()
    return smoke


def _scaling_run(settings: SmokeSettings, count: int, nodes: list[dict],
                 say: Callable[[str], None]) -> dict:
    run: dict = {"env_runners": count, "status": "failed"}
    try:
        trainer = _Trainer(settings, count, nodes)
    except Undiagnosable as exc:
        run["error"] = str(exc)
        return run
    run["bundle_cpus"] = trainer.bundle_cpus
    ips = {node["node_id"]: node["node_ip"] for node in nodes}
    try:
        started = time.monotonic()
        trainer.start()
        run["startup_s"] = round(time.monotonic() - started, 2)
        where = trainer.placement()
        run["nodes_used"] = len({r["node_id"] for r in where["env_runners"]})
        run["env_runner_ips"] = [ips.get(r["node_id"]) for r in where["env_runners"]]
        points = [trainer.train() for _ in range(max(2, settings.scaling_iterations))]
        measured = points[1:]  # the first iteration warms up
        run["iterations"] = len(measured)
        total_s = sum(finite(p.get("time_this_iter_s")) or 0 for p in measured)
        steps = sum(finite(p.get("env_steps")) or 0 for p in measured)
        sample_s = sum(finite(p.get("sample_s")) or 0 for p in measured)
        run["mean_iter_s"] = round(total_s / len(measured), 3)
        run["env_steps_per_s"] = round(steps / total_s, 1) if total_s else None
        run["sample_steps_per_s"] = round(steps / sample_s, 1) if sample_s else None
        run["learner_update_s"] = _r(mean(finite(p.get("learner_update_s")) for p in measured), 4)
        run["status"] = "ok"
        say(f"scaling: {count} env runner(s) on {run['nodes_used']} node(s): "
            f"{run['mean_iter_s']:.2f}s per iteration, {run['env_steps_per_s']:.0f} env steps/s")
    except (_Hung, _Crashed) as exc:
        run["error"] = str(exc)
        say(f"scaling: {count} env runner(s) failed: {exc}")
    finally:
        trainer.close()
    return run


def run_smoke(opts: SmokeOptions, say: Callable[[str], None]) -> dict:
    """Run the smoke training (and the sweep) and return the snapshot document."""
    from rldoctor.cluster.session import quiet_ray
    from rldoctor.snapshot_document import new_document

    if opts.env_runners is not None and opts.env_runners < 1:
        raise UsageError("--env-runners must be at least 1")
    started = time.monotonic()

    def clock() -> float:
        return time.monotonic() - started

    with quiet_ray():
        with _Cluster(opts.address) as cluster:
            if cluster.started_local:
                say(f"no Ray cluster found: started a local Ray instance ({os.cpu_count()} CPUs) "
                    f"for the smoke run; it is stopped afterwards")
            else:
                say(f"joined the Ray cluster at {cluster.resolved}")
            doc = new_document({"kind": "smoke-train", "address": cluster.resolved,
                                "started_local_ray": cluster.started_local})
            nodes = _alive_nodes()
            smoke = _main_run(opts, nodes, clock, say)
            smoke["nodes"] = nodes
            smoke["started_local_ray"] = cluster.started_local
            smoke["connect_s"] = cluster.connect_s
            smoke["figures"] = compute_figures(smoke)
            doc["smoke"] = smoke
            doc["collectors"]["smoke"] = {"status": "ok", "duration_s": round(clock(), 3)}
            if opts.scaling:
                sweep_started = time.monotonic()
                runs = [_scaling_run(opts.settings, count, nodes, say) for count in opts.scaling]
                doc["scaling"] = scaling_table(runs)
                doc["collectors"]["scaling"] = {"status": "ok", "duration_s": round(
                    time.monotonic() - sweep_started, 3)}
            else:
                doc["collectors"]["scaling"] = {"status": "skipped",
                                                "reason": "no sweep asked for (--scaling 1,2,4)"}
    return doc


def parse_scaling(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--scaling {text!r}: expected comma-separated env-runner counts such as 1,2,4") from None
    if not counts or any(c < 1 for c in counts):
        raise UsageError(f"--scaling {text!r}: counts must be whole numbers >= 1")
    return sorted(set(counts))
