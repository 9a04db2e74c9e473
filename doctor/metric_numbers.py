"""How rldoctor reads a number of a training's results: one reader for every side.

The smoke trainer reads `Algorithm.train()` results on the cluster (rldoctor.node.smoke,
shipped there by value), the results-file reader reads Tune's result.json rows
(rldoctor.inputs.runs, on the client) and the training checks judge the
snapshot's values (rldoctor.checks._runs). They all read numbers here. Standard library only:
this module travels to clusters that have nothing of rldoctor installed.

A snapshot is plain JSON, so a non-finite number is kept as the text "NaN", "Infinity" or
"-Infinity" where its presence matters (a NaN loss), and dropped where only finite figures do
(the smoke run's curve).
"""

from __future__ import annotations

import math

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
