"""A training's history, one kind of run record for every training check.

A run record is {"path", "points", "settings", ...}; a point holds the figures of one
iteration (`iteration`, `return_mean`, `runner_weights_seq_no`, `learners: {module id:
{"weights_seq_no", ...}}`, ...). Two sources give one: a results file (`rldoctor check --run
PATH`: the `runs` section, rows read by rldoctor.collect.runs.point_of) and the smoke run
(`from_smoke`, its curve read on the cluster by rldoctor.smoke.remote.trim_result). The
checks read both through the same helpers, one per question:

- the return: `series` (finite values only), judged by `judge_curve` (a long run, against its
  own iteration-to-iteration noise) or `plateau` (a short run that has a target: how long
  since the last marked gain);
- the weight sync: `weight_gaps` (learner minus runner weights_seq_no, and where the
  runners report NaN) and `lag_growing`;
- NaN and infinite values, and throughput against the run's earlier rate.
"""

from __future__ import annotations

import math
import statistics

NON_FINITE = ("NaN", "Infinity", "-Infinity")
# The learner numbers whose NaN means the training diverged. (Counts such as
# num_trainable_parameters are NaN in healthy runs too.)
LOSSES = ("total_loss", "policy_loss", "vf_loss", "vf_loss_unclipped", "mean_kl_loss", "entropy",
          "gradients_default_optimizer_global_norm")


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_non_finite(value) -> bool:
    return value in NON_FINITE or (isinstance(value, float) and not math.isfinite(value))


def subject(run: dict) -> str:
    return f"run:{run.get('path')}"


def read_note(run: dict) -> dict:
    """What was read of the run, for every finding's evidence."""
    return {k: run.get(k) for k in ("file", "rows_read", "rows_in_file", "bad_lines",
                                    "truncated_last_line", "not_rllib_rows", "sampled", "trial_id")}


def series(run: dict, key: str) -> list[tuple[float, float]]:
    """(iteration, value) of a top-level point figure where it is a finite number."""
    return [(p.get("iteration"), p[key]) for p in run.get("points") or [] if is_number(p.get(key))]


def jitter(values: list[float]) -> float:
    """A robust standard deviation of the iteration-to-iteration noise of a curve."""
    diffs = [abs(b - a) for a, b in zip(values, values[1:])]
    if not diffs:
        return 0.0
    return 1.4826 * statistics.median(diffs) / math.sqrt(2)


def judge_curve(values: list[float], min_points: int = 12, z: float = 2.0) -> dict | None:
    """Is the return still rising, flat or falling, against the curve's own noise?

    The recent window is the last third of the run (5 to 50 iterations); it is compared
    with the window before it and with the first window. A difference counts when it is
    over `z` standard errors of the run's own iteration-to-iteration noise.
    """
    n = len(values)
    if n < min_points:
        return None
    w = max(5, min(50, n // 3))
    recent, before, first = values[-w:], values[-2 * w:-w] or values[:-w], values[:w]
    sigma = max(jitter(values), 1e-9, 0.005 * abs(statistics.mean(recent)))

    def se(a, b):
        return sigma * math.sqrt(1 / len(a) + 1 / len(b))

    change = statistics.mean(recent) - statistics.mean(before)
    gain = statistics.mean(recent) - statistics.mean(first)
    windows = [statistics.mean(values[i:i + w]) for i in range(0, n - w + 1, max(1, w // 2))]
    best = max(windows)
    verdict = "rising" if change > z * se(recent, before) else (
        "falling" if change < -z * se(recent, before) and statistics.mean(recent) < best - z * se(
            recent, recent) else "flat")
    return {"verdict": verdict, "window": w, "recent_mean": statistics.mean(recent),
            "before_mean": statistics.mean(before), "first_mean": statistics.mean(first),
            "best_window_mean": best, "change": change, "gain_since_start": gain,
            "learned": gain > z * se(recent, first), "noise_sigma": sigma,
            "bar": z * se(recent, before)}


def learner_values(run: dict, key: str) -> list[tuple[float, str, object]]:
    """(iteration, module id, value) of a learner figure in every point that has it."""
    out = []
    for p in run.get("points") or []:
        for mid, figures in (p.get("learners") or {}).items():
            if key in figures:
                out.append((p.get("iteration"), mid, figures[key]))
    return out


def weights_frozen(run: dict, recent: int) -> dict | None:
    """Evidence that the learner does not move the weights: lr 0, or KL ~0 throughout."""
    lr = (run.get("settings") or {}).get("lr")
    rates = [v for _, _, v in learner_values(run, "default_optimizer_learning_rate")[-recent:]
             if is_number(v)]
    kls = [abs(v) for _, _, v in learner_values(run, "mean_kl_loss")[-recent:] if is_number(v)]
    if lr == 0 or (rates and max(rates) == 0):
        return {"why": "the learning rate is 0", "lr": lr, "learning_rates": rates[-5:]}
    if kls and max(kls) < 1e-6:
        return {"why": f"the policy's KL change per update stayed below 1e-6 (max {max(kls):.1e})",
                "lr": lr, "mean_kl_loss_max": max(kls)}
    return None


def from_smoke(smoke: dict) -> dict:
    """The smoke run as a run record: its curve's points in the shape of a results file's."""
    points = []
    for p in smoke.get("curve") or []:
        point = {k: p.get(k) for k in ("iteration", "return_mean", "episodes",
                                       "env_steps_lifetime", "runner_weights_seq_no")}
        learner = p.get("learner_weights_seq_no")
        point["learners"] = {"default_policy": {"weights_seq_no": learner}} \
            if learner is not None else {}
        points.append(point)
    return {"path": "smoke-train", "points": points, "settings": smoke.get("settings") or {}}


def weight_gaps(run: dict) -> tuple[list[tuple[float, float]], list]:
    """([(iteration, learner minus runner weights_seq_no)], [iterations whose runners reported
    NaN]) over the points where the learner reported a number."""
    gaps, nan_runner = [], []
    for p in run.get("points") or []:
        learner = [f.get("weights_seq_no") for f in (p.get("learners") or {}).values()
                   if is_number(f.get("weights_seq_no"))]
        runner = p.get("runner_weights_seq_no")
        if not learner:
            continue
        if is_non_finite(runner):
            nan_runner.append(p.get("iteration"))
        elif is_number(runner):
            gaps.append((p.get("iteration"), max(learner) - runner))
    return gaps, nan_runner


def lag_growing(gaps: list[tuple[float, float]], params: dict) -> bool:
    """The runners are more than normal_lag + tolerance behind and the gap grew by more than
    `tolerance` over the last `growth_window` iterations."""
    window, limit = params["growth_window"], params["normal_lag"] + params["tolerance"]
    return (len(gaps) > window and gaps[-1][1] > limit
            and gaps[-1][1] > gaps[-1 - window][1] + params["tolerance"])


def plateau(values: list[float], params: dict) -> dict | None:
    """Where the return last improved markedly, and for how many iterations it has not since.

    The return is first smoothed over `smooth` iterations (RLlib's per-iteration mean
    still jitters by a few points on a flat curve). An improvement counts when the
    smoothed return beats the last marked level by at least max(min_gain,
    min_gain_fraction * level); the noise of a flat curve does not.
    """
    if not values:
        return None
    k = max(1, int(params.get("smooth", 3)))
    levels = [sum(values[max(0, i - k + 1):i + 1]) / len(values[max(0, i - k + 1):i + 1])
              for i in range(len(values))]
    start = min(k, len(values)) - 1
    ref_i, ref = start, levels[start]
    for i in range(start + 1, len(levels)):
        if levels[i] >= ref + max(params["min_gain"], params["min_gain_fraction"] * abs(ref)):
            ref_i, ref = i, levels[i]
    best_i = max(range(len(values)), key=lambda i: values[i])
    return {"since_index": ref_i, "level": ref, "best": values[best_i], "best_index": best_i,
            "flat_iterations": len(values) - 1 - ref_i, "first": levels[start],
            "learned": ref_i > start}
