"""Training that does not learn, stale weights, a failed smoke run, poor scaling, NaN
metrics: RLD601-RLD604, RLD607.

Pure functions over the `smoke` and `scaling` sections that `rldoctor smoke-train`
records (see rldoctor.cluster.smoke); they run the same on a live smoke run and on a
recorded one (`rldoctor smoke-train --record FILE`, then `rldoctor check --from FILE`).

RLD601, RLD602 and RLD607 also read the `runs` section (`rldoctor check --run PATH`: Tune
result.json files). The smoke run and a results file's run are one kind of run record
(rldoctor.checks._runs), read by one reader and asked the same questions by the same helpers.
A common troubleshooting row ("training stalls: parameter sync
broken: check the sync settings") becomes two measurements here: whether the return
still improves (RLD601) and whether the env runners act with the learner's weights
(RLD602).
"""

from __future__ import annotations

from rldoctor.checks import _runs
from rldoctor.registry import check, fail, info, note, warn
from rldoctor.snapshot import dig

SUBJECT = "run:smoke-train"


# The return judge's settings (rldoctor.checks._runs.judge_return), one set for every run:
# RLD601 and RLD603's likely cause ask it the same questions.
STALL_PARAMS = {"min_iterations": 8, "patience": 5, "smooth": 3, "min_gain_fraction": 0.1,
                "z": 3.0}


# Each check's fixes, by case (rldoctor.engine.registry): a finding's fix is one case filled in,
# or several joined by `_joined`.
STALL_FIXES = {
    "the return does not improve": (
        "Look at the learner's numbers in the results (policy_loss, mean_kl_loss, entropy, "
        "default_optimizer_learning_rate): a KL of zero means the weights do not move. Check "
        "the learning rate and the loss, rewards the policy can influence, and RLD602 for env "
        "runners acting with old weights."),
    "the learning rate is 0": "The learning rate is 0, so the weights never change.",
    "the weights do not move": (
        "Set a positive learning rate (PPO on CartPole learns with lr 1e-3 to 3e-4) and check "
        "that the loss reaches the optimizer: with lr > 0 and a KL of zero, look for a frozen "
        "module or a grad_clip of 0."),
    "the return falls after it learned": (
        "A falling return after learning is often a policy that collapsed: a learning rate too "
        "large for the batch (lower lr or raise train_batch_size_per_learner), entropy gone to "
        "zero (entropy_coeff), or a change in the env."),
    "the return is flat after it learned (no target missed)": (
        "If the return is below what the env allows, try a lower learning rate, larger batches "
        "or more exploration (entropy_coeff); if it is the env's best, stop the run and keep "
        "the checkpoint."),
}
STALE_FIXES = {
    "the smoke run's env runners are behind the learner": (
        "Check the nodes of the runners that are behind: network (RLD201/RLD202), object store "
        "(RLD301) and restarts (RLD401); make sure the weights are synced after each update "
        "(RLlib does it by default on the new API stack)."),
    "a run's env runners are behind the learner": (
        "Check the nodes of the env runners (network RLD201/RLD202, object store RLD301, "
        "restarts RLD401) and that nothing disables weight sync; RLlib syncs after each update "
        "on the new API stack."),
    "the env runners report no weights_seq_no": (
        "The env runners sample nothing they can report: look for hung or restarting runners "
        "(`rldoctor check` on the cluster: RLD605, RLD606, RLD401) and for episodes that never "
        "end within sample_timeout_s."),
}
SMOKE_FIXES = {
    "env runners restarted during the smoke run": (
        "Run `rldoctor check` against the cluster: RLD401-RLD403 name the runners that "
        "restarted and why they died."),
    "no training iteration completed": (
        "Run `rldoctor check`: RLD103 shows demands that cannot be scheduled, RLD101 dead "
        "nodes. Then retry with fewer --env-runners."),
    "the return never rose": "See RLD601: check the learning rate and the learner's loss and KL numbers.",
    "the run learned, but too slowly for its time budget": (
        "Raise --time-budget, or look at the figures: a slow iteration or low env steps/s "
        "points to an overloaded node or a slow link (RLD201, RLD301)."),
    "the checkpoint round trip failed": (
        "Save with `algo.save_to_path(path)` to a writable local or shared path, restore with "
        "`Algorithm.from_checkpoint(path)`, act with `algo.get_module().forward_inference({{'obs': "
        "...}})`; a restore that fails on this Ray version needs a checkpoint written by it."),
    "the restored policy does not act like the trained one": (
        "The checkpoint restores without the trained weights: check that the restore reads the "
        "learner's RLModule state (learner_group/learner/rl_module) and not a freshly initialised "
        "module."),
}
SCALING_FIXES = {
    "the sweep found the best count": (
        "Use {recommended} env runner(s): the most env steps per second per CPU in this sweep. "
        "For a light env, add envs per runner (num_envs_per_env_runner) before adding runners."),
    "the sweep found no best count": "Rerun the sweep when the cluster is idle.",
}
NAN_FIXES = {
    "episodes end with a NaN return": (
        "Check the env: assert np.isfinite(reward) and np.isfinite(obs).all() in step() (a NaN "
        "reward makes every return and value loss NaN)."),
    "only the losses are NaN": (
        "Lower the learning rate and set `config.training(grad_clip=...)` (e.g. 0.5 to 40); "
        "check the loss terms for values that explode."),
    "a checkpoint before the first NaN exists": (
        "Resume from a checkpoint written before iteration {first:g}."),
    "the first iteration is NaN already": (
        "The run was broken from its first iteration: fix the cause and start it again."),
}


def _joined(*fixes: str) -> str:
    """A fix of several cases: each one's text, in order."""
    return " ".join(fixes)


def _reached(smoke: dict) -> bool:
    return smoke.get("outcome") == "reached"


@check("RLD601", "training-stall", area="training", requires=("smoke|runs",),
       params=STALL_PARAMS, fixes=STALL_FIXES)
def training_stall(snap, params):
    """Episode return flat or falling over a training run.

    Symptom:
        `env_runners/episode_return_mean` stops rising (or never rises) while iterations
        go by; the smoke run misses its target return; a long training run burns hours
        at a plateau.

    Cause:
        Nothing is learned: a learning rate of zero or far too small, a loss that does not
        reach the weights, env runners sampling with old weights (RLD602), rewards the
        policy cannot influence, or hyperparameters that collapse the policy (too large a
        learning rate, no entropy, a clip range of zero).

        The smoke run (when it missed its target) and a run's results (`--run PATH`) are
        judged alike, from 8 iterations on: the return, smoothed over 3 iterations, counts
        as improved when it beats its last marked level by 10% or by three times the run's
        own iteration-to-iteration noise, whichever is more. A learner that does not move
        the weights (lr 0, or a KL below 1e-6 in every recent iteration) is a fail whatever
        the curve shows; a return that never improved is a warn, a falling one (the last 5
        iterations below the best level) a warn, and one that improved and gained nothing
        in the last 5 iterations an info (converged, or stuck on a plateau). A smoke run
        missed the target a known-good configuration reaches, so its stalls weigh one step
        more: never improved is a fail, stopped improving a warn.

    Advice:
        A common troubleshooting table says "training stalls: the parameter server is out
        of sync: check the sync settings". That is right when RLD602 finds the env runners'
        `weights_seq_no` behind the learner's; most stalls are the learner's own numbers
        (learning rate, KL, entropy), which this check reads.
    """
    for run in snap.get("runs") or []:
        yield from _stall(run, params)
    if snap.has("smoke") and not _reached(snap["smoke"]) and snap["smoke"].get("curve"):
        yield from _stall(snap["smoke"], params)


@check("RLD602", "stale-weights", area="training", requires=("smoke|runs",),
       params={"normal_lag": 1.0, "tolerance": 0.5, "growth_window": 3, "nan_iterations": 3},
       fixes=STALE_FIXES)
def stale_weights(snap, params):
    """Env runners acting with weights older than the learner's.

    Symptom:
        Training stalls or learns far slower than it should although the learner updates;
        `env_runners/weights_seq_no` in the results falls further and further behind
        `learners/default_policy/weights_seq_no`.

    Cause:
        The learner's weights do not reach the env runners: the broadcast after each
        update fails or times out (a slow or lossy link to a node, an overloaded object
        store), an env runner was restarted and never re-synced, or the algorithm was
        configured not to sync. RLlib pushes weights asynchronously, so a lag of about one
        update is normal; a lag that grows is not.

        In a run's results (a results file's or the smoke run's), env runners that report
        no `weights_seq_no` at all (NaN) while the learner's grows have not finished a
        sample with known weights.

    Advice:
        A common troubleshooting table says "training stalls: parameter sync broken: check
        the sync settings". This check measures the sync instead of guessing it: the advice
        is right when it fires, and beside the point when the runners keep up.
    """
    for run in snap.get("runs") or []:
        yield from _run_stale_weights(run, params)
    if not snap.has("smoke"):
        return
    smoke = snap["smoke"]
    limit = params["normal_lag"] + params["tolerance"]
    gaps, nan_runner = _runs.weight_gaps(smoke)
    learner_seq = dig(smoke, "learner", "final_weights_seq_no")
    behind = [{"worker_index": r.get("worker_index"), "node_id": r.get("node_id"),
               "node_ip": r.get("node_ip"), "weights_seq_no": r.get("final_weights_seq_no"),
               "lag": learner_seq - r["final_weights_seq_no"]}
              for r in smoke.get("env_runners") or []
              if learner_seq is not None and r.get("final_weights_seq_no") is not None
              and learner_seq - r["final_weights_seq_no"] > limit]
    growing = _runs.lag_growing(gaps, params)
    evidence = {"normal_lag": params["normal_lag"],
                "lag_by_iteration": [[it, round(g, 2)] for it, g in gaps[-12:]],
                "learner_final_weights_seq_no": learner_seq, "runners_behind": behind}
    fix = STALE_FIXES["the smoke run's env runners are behind the learner"].format()
    yield from _runners_report_nan(smoke, nan_runner, params, evidence, fix)
    if not growing and not behind:
        return
    if growing:
        yield warn(SUBJECT, f"env runners act with stale weights: they are {gaps[-1][1]:.1f} "
                   f"learner updates behind at iteration {gaps[-1][0]} (normal is about "
                   f"{params['normal_lag']:g}) and the gap grows", evidence, fix)
    else:
        names = ", ".join(f"#{b['worker_index']} ({b['lag']:g} behind)" for b in behind)
        yield warn(SUBJECT, f"env runner(s) {names} ended the run with weights older than the "
                   f"learner's (more than {limit:g} updates behind)", evidence, fix)


def _likely_cause(smoke: dict) -> tuple[str, str]:
    """(cause, fix) for a smoke run that did not reach its target."""
    curve = smoke.get("curve") or []
    restarts = max((p.get("runner_restarts") or 0 for p in curve), default=0)
    if restarts:
        return (f"env runners restarted {int(restarts)} time(s) during the run (see RLD401)",
                SMOKE_FIXES["env runners restarted during the smoke run"].format())
    if not curve:
        return ("no training iteration completed (see RLD601, and RLD103 for resources that "
                "never came)", SMOKE_FIXES["no training iteration completed"].format())
    points = _runs.series(smoke, "return_mean")
    judged = _runs.judge_return([v for _, v in points], STALL_PARAMS)
    if judged is None or not judged["learned"] or _runs.weights_frozen(smoke, len(points)):
        return ("no learning progress: the return never rose (see RLD601)",
                SMOKE_FIXES["the return never rose"].format())
    return ("the run learned, but not fast enough for the time budget",
            SMOKE_FIXES["the run learned, but too slowly for its time budget"].format())


@check("RLD603", "smoke-train-failed", area="training", requires=("smoke",),
       params={"restored_min_fraction": 0.5}, fixes=SMOKE_FIXES)
def smoke_train_failed(snap, params):
    """The smoke training crashed, hung or missed its target return.

    Symptom:
        `rldoctor smoke-train` ends without reaching the target return (195 on
        CartPole-v1 by default) within its time budget, or stops on an error, or waits
        for an iteration that never comes; or the checkpoint it saved cannot be restored
        into a policy that acts.

    Cause:
        Crashes: env runners or the learner actor died (restarts: RLD401; memory: RLD402;
        native crashes: RLD403), or RLlib rejected the configuration. Hangs: resources that
        never came (RLD103) or an env runner that stopped answering. Missed targets: no
        learning progress (RLD601), stale weights (RLD602), or a cluster too slow for the
        budget. A failed checkpoint round trip: a storage path that is not writable or a
        checkpoint that does not restore on this Ray version.

    Advice:
        Older tutorials say "save with `trainer.save()`, restore with `trainer.restore()`,
        serve with `compute_single_action()`". That was right on RLlib's old API stack; on
        Ray 2.60 it is `algo.save_to_path()`, `Algorithm.from_checkpoint()` and
        `RLModule.forward_inference()`, which the round trip uses.
    """
    smoke = snap["smoke"]
    yield from _run_outcome(smoke)
    yield from _checkpoint_round_trip(smoke, params)


# RLD603's texts, as data: the run's outcome, then the checkpoint's round trip.
_CRASHED = "the smoke training {what} during {stage} after {iterations} iteration(s): {error}"
_MISSED = ("the smoke training missed its target: best smoothed return {best} < {target:g} "
           "within {budget:g}s ({iterations} iterations); likely cause: {cause}")
_CKPT_FAILED = "the checkpoint round trip failed at {step}: {error}"
_CKPT_UNTRAINED = ("the restored policy does not act like the trained one: mean return {mean:.1f} "
                   "over {episodes} episodes, below {floor:g} although training reached {target:g}")


def _run_outcome(smoke: dict):
    """RLD603's finding on a smoke run that crashed, hung or missed its target."""
    outcome = smoke.get("outcome")
    if outcome not in ("crashed", "hung", "missed"):
        return
    curve = smoke.get("curve") or []
    figures = smoke.get("figures") or {}
    evidence = {"outcome": outcome, "stage": smoke.get("stage"), "iterations": len(curve),
                "target_return": smoke.get("target_return"),
                "best_return": figures.get("best_return"),
                "time_budget_s": smoke.get("time_budget_s"),
                "env_steps_sampled": figures.get("env_steps_sampled"),
                "runner_restarts": figures.get("runner_restarts")}
    cause, fix = _likely_cause(smoke)
    if outcome == "missed":
        evidence["likely_cause"] = cause
        best = figures.get("best_return")
        message = _MISSED.format(best="-" if best is None else f"{best:.1f}", cause=cause,
                                 target=smoke.get("target_return"), budget=smoke.get("time_budget_s"),
                                 iterations=len(curve))
    else:
        evidence["error"] = smoke.get("error")
        evidence["likely_cause"] = cause
        message = _CRASHED.format(what=outcome, stage=smoke.get("stage"), iterations=len(curve),
                                  error=smoke.get("error"))
    yield fail(SUBJECT, message, evidence, fix)


def _checkpoint_round_trip(smoke: dict, params: dict):
    """RLD603's finding on a checkpoint that did not restore, or restored untrained."""
    ckpt = smoke.get("checkpoint") or {}
    subject = SUBJECT + "/checkpoint"
    if ckpt.get("status") == "failed":
        yield fail(subject, _CKPT_FAILED.format(step=ckpt.get("step"), error=ckpt.get("error")),
                   {"checkpoint": ckpt},
                   SMOKE_FIXES["the checkpoint round trip failed"].format())
    elif ckpt.get("status") == "ok" and smoke.get("outcome") == "reached" \
            and ckpt.get("mean_return") is not None:
        floor = params["restored_min_fraction"] * smoke.get("target_return", 0)
        if ckpt["mean_return"] < floor:
            yield fail(subject, _CKPT_UNTRAINED.format(
                mean=ckpt["mean_return"], episodes=len(ckpt.get("returns") or []), floor=floor,
                target=smoke.get("target_return")), {"checkpoint": ckpt},
                SMOKE_FIXES["the restored policy does not act like the trained one"].format())


@check("RLD604", "poor-scaling", area="training", requires=("scaling",),
       params={"min_gain": 0.1, "min_efficiency": 0.5}, fixes=SCALING_FIXES)
def poor_scaling(snap, params):
    """More env runners do not bring more throughput.

    Symptom:
        Adding env runners (or nodes) leaves env steps per second flat or lower; iteration
        time does not drop; parallel efficiency far below 1 in the `--scaling` table.

    Cause:
        The work is not where the runners are: for a light env such as CartPole the
        learner's update and the driver's bookkeeping dominate each iteration, and each
        extra runner adds scheduling, weight broadcast and network cost; or the runners
        share CPUs (several per node, fractional CPUs) so they do not run in parallel.

    Advice:
        A common remark says "for a light env like CartPole, fewer workers can be faster".
        It is right when one env step costs less than the round trip of a sample batch;
        a single-node vs 2- vs 3-node comparison is what `--scaling` measures.
    """
    scaling = snap["scaling"]
    runs = sorted((r for r in scaling.get("runs") or [] if r.get("status") == "ok"
                   and r.get("env_steps_per_s")), key=lambda r: r["env_runners"])
    failed = [r for r in scaling.get("runs") or [] if r.get("status") != "ok"]
    table = [{k: r.get(k) for k in ("env_runners", "mean_iter_s", "env_steps_per_s", "speedup",
                                    "efficiency", "env_steps_per_s_per_cpu", "nodes_used")}
             for r in runs]
    recommended = scaling.get("recommended")
    evidence = {"table": table, "recommended": recommended, "fastest": scaling.get("fastest")}
    fix = (SCALING_FIXES["the sweep found the best count"].format(recommended=recommended)
           if recommended else SCALING_FIXES["the sweep found no best count"].format())
    for r in failed:
        yield warn("run:scaling", f"the sweep's run with {r.get('env_runners')} env runner(s) "
                   f"failed: {r.get('error')}", {"run": r}, fix)
    worse = []
    for i, run in enumerate(runs[1:], start=1):
        best_before = max(runs[:i], key=lambda r: r["env_steps_per_s"])
        if run["env_steps_per_s"] < best_before["env_steps_per_s"] * (1 + params["min_gain"]):
            worse.append((run, best_before))
    inefficient = [r for r in runs[1:] if r.get("efficiency") is not None
                   and r["efficiency"] < params["min_efficiency"]]
    if worse:
        shown = "; ".join(f"{r['env_runners']} runners: {r['env_steps_per_s']:.0f} env steps/s vs "
                          f"{b['env_steps_per_s']:.0f} with {b['env_runners']}" for r, b in worse)
        yield warn("run:scaling", f"more env runners do not bring more throughput ({shown})",
                   evidence, fix)
    elif inefficient:
        shown = "; ".join(f"{r['env_runners']} runners: {r['speedup']:.2f}x the throughput of "
                          f"{scaling.get('baseline')} ({100 * r['efficiency']:.0f}% efficiency)"
                          for r in inefficient)
        yield warn("run:scaling", f"env runners scale poorly ({shown}); most env steps/s per CPU "
                   f"with {recommended}", evidence, fix)
    elif recommended is not None and len(runs) > 1:
        yield info("run:scaling", f"throughput grows with env runners; most env steps/s per CPU "
                   f"with {recommended}", evidence, fix)


# -- the same questions asked of a run's results (`--run PATH`) ------------------------------

def _not_judged(run: dict) -> str | None:
    """Why a run cannot be judged at all (not RLlib, nothing readable), or None."""
    if _runs.points(run):
        return None
    if run.get("not_rllib_rows"):
        return (f"{run['not_rllib_rows']} row(s) of a trainable that is not RLlib (no "
                "`env_runners` results); not judged")
    return f"no readable result row ({run.get('bad_lines', 0)} unreadable line(s)); not judged"


def _stall(run: dict, params: dict):
    """RLD601 on one run record (a results file's run, or the smoke run that missed its target)."""
    read = _runs.read_note(run) if run.get("file") else {}
    why_not = _not_judged(run)
    if why_not:
        yield note(_runs.subject(run), why_not, read)
        return
    points = _runs.series(run, "return_mean")
    judged = _runs.judge_return([v for _, v in points], params)
    if judged is None:
        yield note(_runs.subject(run), "no iteration with a finite return (see RLD607)" if not
                   points else f"only {len(points)} iteration(s) with a finite return: too short "
                   "to judge a stall", read)
        return
    frozen = _runs.weights_frozen(run, min(50, max(params["patience"], len(points) // 3)))
    if judged["verdict"] == "rising" and not frozen:
        return
    missed = _runs.missed_target(run)
    p = params["patience"]
    first_it, last_it = points[0][0], points[-1][0]
    since_it, best_it = points[judged["since_index"]][0], points[judged["best_index"]][0]
    evidence = {**read, "iterations": [first_it, last_it], "flat_iterations": judged["flat_iterations"],
                "learned": judged["learned"], "first_level": round(judged["first"], 2),
                "level": round(judged["level"], 2), "level_since_iteration": since_it,
                "best_level": round(judged["best_level"], 2), "best_level_iteration": best_it,
                f"mean_return_last_{p}": round(judged["recent_mean"], 2),
                "noise_sigma": round(judged["noise_sigma"], 3), "bar": round(judged["bar"], 3),
                "returns": [[it, round(v, 2)] for it, v in points[-12:]],
                "settings": {k: v for k, v in (run.get("settings") or {}).items()
                             if k in ("lr", "train_batch_size_per_learner", "minibatch_size",
                                      "num_epochs", "num_env_runners", "entropy_coeff")}}
    if missed:
        evidence["target_return"] = run["target_return"]
    fix = STALL_FIXES["the return does not improve"].format()
    start = f"about {judged['first']:.1f} at the start"
    last = (f"{judged['recent_mean']:.1f} on average over the last {p} iterations "
            f"(to iteration {last_it:g})")
    noise = f"iteration-to-iteration noise {judged['noise_sigma']:.1f}"
    target = f"; target {run['target_return']:g} missed" if missed else ""
    if frozen:  # weights that do not move cannot learn, whatever the curve's noise says
        evidence["weights_frozen"] = frozen
        cases = (["the learning rate is 0"] if frozen.get("lr") == 0 else []) + ["the weights do not move"]
        yield fail(_runs.subject(run), f"the weights do not move ({frozen['why']}), so the run "
                   f"cannot learn: the return was {start} and {last} ({noise}){target}", evidence,
                   _joined(*(STALL_FIXES[c].format() for c in cases)))
    elif judged["verdict"] == "falling":
        yield warn(_runs.subject(run), f"the return is falling: {last}, down from "
                   f"{judged['best_level']:.1f} at its best (iteration {best_it:g}; {noise})"
                   f"{target}", evidence,
                   _joined(STALL_FIXES["the return falls after it learned"].format(), fix))
    elif not judged["learned"]:
        yield (fail if missed else warn)(
            _runs.subject(run), f"the return never improved: {start}, {last}, after "
            f"{len(points)} iterations (a gain counts above {judged['bar']:.1f}; {noise}){target}",
            evidence, fix)
    else:
        yield (warn if missed else info)(
            _runs.subject(run), f"the return improved from {start} to {judged['level']:.1f} by "
            f"iteration {since_it:g} and has been flat since: {judged['flat_iterations']} "
            f"iterations without a gain above {judged['bar']:.1f}, {last} ({noise}){target}"
            + ("" if missed else "; converged, or stuck on a plateau"), evidence,
            fix if missed else STALL_FIXES["the return is flat after it learned (no target missed)"].format())


def _run_stale_weights(run: dict, params: dict):
    if _not_judged(run):
        return
    gaps, nan_runner = _runs.weight_gaps(run)
    window = params["growth_window"]
    evidence = {**_runs.read_note(run), "normal_lag": params["normal_lag"],
                "lag_by_iteration": [[it, round(g, 2)] for it, g in gaps[-12:]]}
    fix = STALE_FIXES["a run's env runners are behind the learner"].format()
    if _runs.lag_growing(gaps, params):
        yield warn(_runs.subject(run), f"env runners act with stale weights: {gaps[-1][1]:.1f} "
                   f"learner updates behind at iteration {gaps[-1][0]:g} (normal is about "
                   f"{params['normal_lag']:g}), up from {gaps[-1 - window][1]:.1f} at iteration "
                   f"{gaps[-1 - window][0]:g}", evidence, fix)
    yield from _runners_report_nan(run, nan_runner, params, evidence, fix)


def _runners_report_nan(run: dict, nan_runner: list, params: dict, evidence: dict, fix: str):
    """RLD602 on a run (a results file's or the smoke run) whose env runners report NaN
    weights_seq_no in its last `nan_iterations` iterations."""
    recent = [p.get("iteration") for p in _runs.points(run)[-params["nan_iterations"]:]]
    if len(recent) == params["nan_iterations"] and all(it in nan_runner for it in recent):
        evidence["runner_weights_seq_no_nan_at"] = nan_runner[-12:]
        yield warn(_runs.subject(run), f"env runners report no weights_seq_no (NaN) in the last "
                   f"{len(recent)} iterations ({recent[0]:g}-{recent[-1]:g}) while the learner's "
                   "grows: no runner finished a sample with known weights", evidence,
                   _joined(STALE_FIXES["the env runners report no weights_seq_no"].format(), fix))


@check("RLD607", "nan-metrics", area="training", requires=("smoke|runs",), fixes=NAN_FIXES)
def nan_metrics(snap, params):
    """NaN or infinite losses, returns or gradients in a training's results.

    Symptom:
        `total_loss`, `policy_loss` or `vf_loss` read NaN in the results (or TensorBoard
        shows gaps), `episode_return_mean` is NaN although episodes finish, and the
        policy acts at random or the run crashes later with "invalid value" errors.

    Cause:
        Non-finite numbers got into the training: the env returns NaN or infinite rewards
        or observations (then the return is NaN as soon as an episode ends, and every loss
        that uses it follows), or the optimisation diverged (a learning rate too high, no
        gradient clipping, a loss term that explodes), after which the weights themselves
        are NaN. Counts such as `num_trainable_parameters` are NaN in healthy runs too and
        are not judged. A smoke run's iterations (`rldoctor smoke-train`) are read and
        judged like a results file's.
    """
    runs = list(snap.get("runs") or []) + ([snap["smoke"]] if snap.has("smoke") else [])
    for run in runs:
        points = _runs.points(run)
        bad: dict[str, list] = {}
        for p in points:
            for mid, figures in (p.get("learners") or {}).items():
                for key in _runs.LOSSES:
                    if _runs.is_non_finite(figures.get(key)):
                        bad.setdefault(f"learners/{mid}/{key}", []).append(p.get("iteration"))
            if _runs.is_non_finite(p.get("return_mean")) and _runs.is_finite_number(p.get("episodes")) \
                    and p["episodes"] > 0:
                bad.setdefault("env_runners/episode_return_mean", []).append(p.get("iteration"))
        if not bad:
            continue
        first = min(its[0] for its in bad.values())
        shown = ", ".join(f"{k.split('/')[-1]} ({len(v)} of {len(points)} iterations, from "
                          f"{v[0]:g})" for k, v in sorted(bad.items()))
        rewards = "env_runners/episode_return_mean" in bad
        cause = ("episodes finish with a NaN return, so the env's rewards (or observations) are "
                 "not finite" if rewards else "the returns stay finite, so the optimisation "
                 "diverged (learning rate, gradient clipping, a loss term that explodes)")
        evidence = {**(_runs.read_note(run) if run.get("file") else {}), "first_bad_iteration": first,
                    "metrics": {k: {"count": len(v), "first": v[0], "last": v[-1]}
                                for k, v in sorted(bad.items())},
                    "iterations_judged": len(points),
                    "settings": {k: v for k, v in (run.get("settings") or {}).items()
                                 if k in ("lr", "grad_clip", "train_batch_size_per_learner")}}
        fix = NAN_FIXES["episodes end with a NaN return" if rewards else "only the losses are NaN"]
        restart = NAN_FIXES["a checkpoint before the first NaN exists" if first and first > 1
                            else "the first iteration is NaN already"]
        yield fail(_runs.subject(run), f"non-finite values in the results from iteration "
                   f"{first:g}: {shown}; {cause}", evidence,
                   _joined(fix.format(), restart.format(first=first)))
