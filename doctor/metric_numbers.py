"""How rldoctor reads a training's results: one reader for every side.

The smoke trainer reads `Algorithm.train()` results on the cluster (rldoctor.node.smoke,
shipped there by value) and the results-file reader reads Tune's result.json rows
(rldoctor.inputs.runs, on the client), both with `point_of`: one row, one point, with the
names of rldoctor.words.RESULT_ROW. The training checks judge those points
(rldoctor.checks._runs) with the predicates here. Standard library only: this module
travels to clusters that have nothing of rldoctor installed.

A snapshot is plain JSON, so a non-finite number is kept as the text "NaN", "Infinity" or
"-Infinity" (never dropped: a NaN loss or return is what RLD607 looks for, in a smoke run
as in a results file); code that needs a figure reads it with `finite`.
"""

from __future__ import annotations

import math

from rldoctor.words import LEARNER_HEALTH, RESULT_ROW

NON_FINITE = ("NaN", "Infinity", "-Infinity")


def number(value) -> float | None:
    """`value` as a float: ints, floats and numpy scalars; None for a missing value, a bool,
    text or anything else."""
    if value is None or isinstance(value, (bool, str, bytes)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def finite(value) -> float | None:
    """`value` as a finite float; None when it is missing, not a number, NaN or infinite."""
    value = number(value)
    return value if value is not None and math.isfinite(value) else None


def json_number(value) -> float | str | None:
    """`value` as a float, a non-finite one as its text in NON_FINITE; None when not a number."""
    value = number(value)
    if value is None or math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def is_finite_number(value) -> bool:
    """Is `value` (a snapshot's value) a finite number?"""
    return finite(value) is not None


def is_non_finite(value) -> bool:
    """Is `value` (a snapshot's value) NaN or infinite, as a float or as its text?"""
    if isinstance(value, str):
        return value in NON_FINITE
    value = number(value)
    return value is not None and not math.isfinite(value)


def _at(row: dict, path: tuple[str, ...]):
    for key in path:
        if not isinstance(row, dict):
            return None
        row = row.get(key)
    return row


def _throughput(env: dict):
    value = env.get("num_env_steps_sampled_lifetime_throughput")
    if isinstance(value, dict):
        value = value.get("throughput_since_last_reduce")
    return json_number(value)


def point_of(row: dict) -> dict | None:
    """The figures one RLlib result row holds for the checks and the smoke report, named as
    in RESULT_ROW (NaN kept as text); None for a row that is not RLlib's."""
    env = row.get("env_runners")
    if not isinstance(env, dict):
        return None
    point = {name: json_number(_at(row, path)) for name, path in RESULT_ROW.items()}
    if point["env_steps_lifetime"] is None:  # older rows keep it at the top level only
        point["env_steps_lifetime"] = json_number(row.get("num_env_steps_sampled_lifetime"))
    point["env_steps_per_s"] = _throughput(env)
    learners = row.get("learners") if isinstance(row.get("learners"), dict) else {}
    point["learners"] = {mid: {k: json_number(module.get(k)) for k in ("weights_seq_no",) + LEARNER_HEALTH
                               if k in module}
                         for mid, module in learners.items()
                         if isinstance(module, dict) and mid != "__all_modules__"}
    return point
