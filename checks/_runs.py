"""Reading a training's history (the `runs` section, from `rldoctor check --run PATH`).

Pure helpers for the training checks: the return curve judged against the run's own
noise, NaN and infinite values, the weight-sync gap, and throughput against the run's
earlier rate. A run's points are its result.json rows (every row of the recent part,
thinned evenly before it; see rldoctor.collect.runs).
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
