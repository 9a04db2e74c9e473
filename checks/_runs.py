"""A training's history, one kind of run record for every training check.

A run record is {"path", "points", "settings", ...}; a point holds the figures of one
iteration, as rldoctor.metric_numbers.point_of reads them from an RLlib result row
(`iteration`, `return_mean`, `runner_weights_seq_no`, `learners: {module id:
{"weights_seq_no", "total_loss", ...}}`, ...; a NaN kept as the text "NaN"). Two sources
give one, read by that one reader: a results file (`rldoctor check --run PATH`: the `runs`
section) and the smoke run (the `smoke` section, a run record as it stands: its `curve` is
its points, its path "smoke-train", its target the run's). The checks read both through
the same helpers, one per question:

- the return: `series` (finite values only), judged by `judge_return` (did it improve at
  all, and for how many iterations has it not, against the run's own noise) and
  `weights_frozen` (the learner's own numbers say the weights cannot move);
- the weight sync: `weight_gaps` (learner minus runner weights_seq_no, and where the
  runners report NaN) and `lag_growing`;
- NaN and infinite values, and throughput against the run's earlier rate.

A run record also says whether the run had a target return and reached it (the smoke run
has one). Every number, on both sides, is read by rldoctor.metric_numbers.
"""

from __future__ import annotations

import math
import statistics

from rldoctor.metric_numbers import is_finite_number, is_non_finite
from rldoctor.snapshot import dig

# The learner numbers whose NaN means the training diverged. (Counts such as
# num_trainable_parameters are NaN in healthy runs too.)
LOSSES = ("total_loss", "policy_loss", "vf_loss", "vf_loss_unclipped", "mean_kl_loss", "entropy",
          "gradients_default_optimizer_global_norm")


SMOKE_PATH = "smoke-train"


def points(run: dict) -> list[dict]:
    """The run's points: a results file's `points`, the smoke run's `curve`."""
    return (run["points"] if "points" in run else run.get("curve")) or []


def subject(run: dict) -> str:
    return f"run:{run.get('path', SMOKE_PATH)}"


def missed_target(run: dict) -> bool:
    """The run had a target return (the smoke run has one) and did not reach it."""
    return run.get("target_return") is not None and not (
        run.get("reached_target") or run.get("outcome") == "reached")


def read_note(run: dict) -> dict:
    """What was read of the run, for every finding's evidence."""
    return {k: run.get(k) for k in ("file", "rows_read", "rows_in_file", "bad_lines",
                                    "truncated_last_line", "not_rllib_rows", "sampled", "trial_id")}


def series(run: dict, key: str) -> list[tuple[float, float]]:
    """(iteration, value) of a top-level point figure where it is a finite number."""
    return [(p.get("iteration"), p[key]) for p in points(run) if is_finite_number(p.get(key))]


def jitter(values: list[float]) -> float:
    """A robust standard deviation of the iteration-to-iteration noise of a curve."""
    diffs = [abs(b - a) for a, b in zip(values, values[1:])]
    if not diffs:
        return 0.0
    return 1.4826 * statistics.median(diffs) / math.sqrt(2)


def learner_values(run: dict, key: str) -> list[tuple[float, str, object]]:
    """(iteration, module id, value) of a learner figure in every point that has it."""
    out = []
    for p in points(run):
        for mid, figures in (p.get("learners") or {}).items():
            if key in figures:
                out.append((p.get("iteration"), mid, figures[key]))
    return out


def weights_frozen(run: dict, recent: int) -> dict | None:
    """Evidence that the learner does not move the weights: lr 0, or KL ~0 throughout."""
    lr = dig(run, "settings", "lr")
    rates = [v for _, _, v in learner_values(run, "default_optimizer_learning_rate")[-recent:]
             if is_finite_number(v)]
    kls = [abs(v) for _, _, v in learner_values(run, "mean_kl_loss")[-recent:] if is_finite_number(v)]
    if lr == 0 or (rates and max(rates) == 0):
        return {"why": "the learning rate is 0", "lr": lr, "learning_rates": rates[-5:]}
    if kls and max(kls) < 1e-6:
        return {"why": f"the policy's KL change per update stayed below 1e-6 (max {max(kls):.1e})",
                "lr": lr, "mean_kl_loss_max": max(kls)}
    return None


def weight_gaps(run: dict) -> tuple[list[tuple[float, float]], list]:
    """([(iteration, learner minus runner weights_seq_no)], [iterations whose runners reported
    NaN]) over the points where the learner reported a number."""
    gaps, nan_runner = [], []
    for p in points(run):
        learner = [f.get("weights_seq_no") for f in (p.get("learners") or {}).values()
                   if is_finite_number(f.get("weights_seq_no"))]
        runner = p.get("runner_weights_seq_no")
        if not learner:
            continue
        if is_non_finite(runner):
            nan_runner.append(p.get("iteration"))
        elif is_finite_number(runner):
            gaps.append((p.get("iteration"), max(learner) - runner))
    return gaps, nan_runner


def lag_growing(gaps: list[tuple[float, float]], params: dict) -> bool:
    """The runners are more than normal_lag + tolerance behind and the gap grew by more than
    `tolerance` over the last `growth_window` iterations."""
    window, limit = params["growth_window"], params["normal_lag"] + params["tolerance"]
    return (len(gaps) > window and gaps[-1][1] > limit
            and gaps[-1][1] > gaps[-1 - window][1] + params["tolerance"])


def judge_return(values: list[float], params: dict) -> dict | None:
    """Did the return improve at all, and has it stopped improving? One judge for every run.

    The return is smoothed over `smooth` iterations (RLlib's per-iteration mean still
    jitters on a flat curve). A gain counts ("marked") when the smoothed return beats the
    last marked level by the bar: max(min_gain_fraction * |level|, z * the run's own
    iteration-to-iteration noise), so the jitter of a curve that does not learn is not
    learning, at any scale of return. None when the run has fewer than `min_iterations`.

    `learned`: a marked gain above the starting level. `flat_iterations`: iterations since
    the last marked gain. `verdict`: "falling" when the best level came before the last
    `patience` iterations and those average more than the bar below it (and below the start,
    for a run that never learned: a lucky first iteration is not a level it fell from),
    else "rising" when it learned and gained within the last `patience` iterations, else
    "flat".
    """
    n = len(values)
    if n < max(2, params["min_iterations"]):
        return None
    k = max(1, int(params["smooth"]))
    levels = [statistics.mean(values[max(0, i - k + 1):i + 1]) for i in range(n)]
    sigma = jitter(values)

    def bar(level: float) -> float:
        return max(params["min_gain_fraction"] * abs(level), params["z"] * sigma, 1e-9)

    start = min(k, n) - 1
    ref_i = start
    for i in range(start + 1, n):
        if levels[i] >= levels[ref_i] + bar(levels[ref_i]):
            ref_i = i
    best_i = max(range(start, n), key=lambda i: levels[i])
    recent = statistics.mean(values[-params["patience"]:])
    learned = ref_i > start
    flat = n - 1 - ref_i
    falling = (best_i < n - params["patience"] and recent < levels[best_i] - bar(levels[best_i])
               and (learned or recent < levels[start] - bar(levels[start])))
    verdict = ("falling" if falling else
               "rising" if learned and flat < params["patience"] else "flat")
    return {"verdict": verdict, "learned": learned, "flat_iterations": flat,
            "since_index": ref_i, "level": levels[ref_i], "first": levels[start],
            "best_level": levels[best_i], "best_index": best_i, "recent_mean": recent,
            "noise_sigma": sigma, "bar": bar(levels[ref_i])}
