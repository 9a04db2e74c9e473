"""A small seeded mutation fuzzer over JSON documents (the fixtures' snapshots, the bundles
built from them): each case is one document with a few mutations at random places, drawn
from one `random.Random(seed)` so a failing case is reproduced from its seed alone.

Mutations: a value swapped for one of another type (a string, a number, a list, an object,
null, a bool), a huge integer (10**400), a float out of range or NaN, a deep nest, a key
removed, a list emptied or its rows duplicated, an id turned into an int. No dependency: the
standard library's `random` and `copy`.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

HUGE = 10**400


def _deep(depth: int) -> Any:
    value: Any = "x"
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


SWAPS = (
    lambda r: "x",
    lambda r: "lots",
    lambda r: "",
    lambda r: r.choice([0, -1, 1, 7, 2**63, -(2**63)]),
    lambda r: HUGE,
    lambda r: -HUGE,
    lambda r: r.choice([1.5, -0.0, 1e308, float("nan"), float("inf"), float("-inf")]),
    lambda r: None,
    lambda r: True,
    lambda r: [],
    lambda r: ["x", 1, None],
    lambda r: {},
    lambda r: {"x": {"y": [1, {"z": None}]}},
    lambda r: _deep(r.randint(5, 60)),
    lambda r: "x" * r.choice([1_000, 20_000]),
    lambda r: "\x00\udcff\u202e<details>|`",
)


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (a tuple of keys and indexes) to a value inside `doc`, the root excluded;
    lists contribute their first three rows only (the rest look alike)."""
    found = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            found.append(prefix + (key,))
            found.extend(paths(value, prefix + (key,)))
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:3]):
            found.append(prefix + (i,))
            found.extend(paths(value, prefix + (i,)))
    return found


def _parent(doc: Any, path: tuple) -> Any:
    for step in path[:-1]:
        doc = doc[step]
    return doc


def mutate_once(doc: Any, rng: random.Random, where: list[tuple]) -> str:
    """Apply one mutation in place; return what it did (for a failing case's message)."""
    path = rng.choice(where)
    parent, last = _parent(doc, path), path[-1]
    roll = rng.random()
    if roll < 0.12 and isinstance(parent, dict):
        del parent[last]
        return f"del {path}"
    old = parent[last]
    if roll < 0.2 and isinstance(old, list) and old:
        if rng.random() < 0.5:
            old.clear()
            return f"empty {path}"
        old.extend(copy.deepcopy(old[:1]) * rng.choice([2, 50]))
        return f"repeat rows {path}"
    if roll < 0.27 and isinstance(old, str):
        parent[last] = rng.choice([0, 12345, HUGE])
        return f"int for str {path}"
    if roll < 0.32 and isinstance(old, dict) and old:
        key = rng.choice(list(old))
        old[f"k{rng.randint(0, 99)}"] = old.pop(key)
        return f"rename key {key!r} at {path}"
    value = rng.choice(SWAPS)(rng)
    parent[last] = value
    return f"set {path} = {repr(value)[:40]}"


def mutants(doc: Any, seed: int, mutations: int = 3) -> tuple[Any, list[str]]:
    """A mutated deep copy of `doc` and what was done to it."""
    rng = random.Random(seed)
    out = copy.deepcopy(doc)
    done = []
    for _ in range(rng.randint(1, mutations)):
        where = paths(out)
        if not where:
            break
        done.append(mutate_once(out, rng, where))
    return out, done


def dumps(doc: Any) -> str:
    """JSON as Python writes it (NaN and Infinity included, as a colleague's tool might)."""
    import sys

    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    try:
        if limit:
            sys.set_int_max_str_digits(0)
        return json.dumps(doc)
    finally:
        if limit:
            sys.set_int_max_str_digits(limit)
