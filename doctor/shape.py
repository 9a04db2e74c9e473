"""Shapes of JSON data read from a file: declared once, checked where the file is read.

A shape is `STR`, `NUM` (a finite int or float; a bool counts), `FIGURE` (a training's figure: a number, NaN
and infinities included, or the text "NaN", "Infinity" or "-Infinity"), `BOOL`, `NULL`, `ANY`, `List(shape)`,
`Map(shape)` (an object whose keys are ids or names: every value of that shape), `Obj({key:
shape})` (an object with known keys: each one present has that shape or is null; keys not
named are anything; `need` names the keys that must be there) or `One(shape, ...)` (any of them). `mismatch(value, shape)` says where
and how a value differs, in one short phrase, or None when it fits.

Every value, whatever its declared shape, must also be bounded: nested at most `MAX_DEPTH`
deep and no integer beyond `MAX_INT` (10**400 in a CPU count is not a CPU count, and turned
into a float it raises). Used by rldoctor.snapshot_shape; pure, standard library only.
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 64
MAX_INT = 10**30


class Leaf:
    __slots__ = ("name", "types")

    def __init__(self, name: str, types: tuple):
        self.name = name    # what a message calls it: "a string", "a number"
        self.types = types


STR = Leaf("a string", (str,))
NUM = Leaf("a number", (int, float))
BOOL = Leaf("true or false", (bool,))
ANY = Leaf("anything", (object,))
NULL = Leaf("null", (type(None),))
# A training's figures: a number, or the text a snapshot keeps a non-finite one as ("NaN",
# rldoctor.metric_numbers.json_number), so a NaN loss reaches RLD607.
FIGURE = Leaf("a number", (int, float))
NON_FINITE = ("NaN", "Infinity", "-Infinity")


class List:
    __slots__ = ("of",)
    name = "a list"

    def __init__(self, of):
        self.of = of


class Map:
    __slots__ = ("of",)
    name = "an object"

    def __init__(self, of):
        self.of = of


class Obj:
    __slots__ = ("keys", "need")
    name = "an object"

    def __init__(self, keys: dict, need: tuple = ()):
        self.keys = keys
        self.need = need  # keys that must be there, not null (the ids readers index by)


class One:
    def __init__(self, *shapes):
        self.shapes = shapes
        self.name = " or ".join(s.name for s in shapes)


def kind_of(value: Any) -> str:
    """How a message calls what it found: 'a string', 'a list', 'null', ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _join(path: str, step) -> str:
    return f"{path}[{step}]" if isinstance(step, int) else (f"{path}.{step}" if path else str(step))


def _bounded(value: Any, path: str, depth: int) -> str | None:
    """The first value under `value` nested too deep or holding an integer out of bounds."""
    if depth > MAX_DEPTH:
        return f"{path}: nested more than {MAX_DEPTH} deep"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        return f"{path}: a number too large to be one ({len(str(abs(value)))} digits)"
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for step, item in items:
        if isinstance(item, (dict, list, int)):
            why = _bounded(item, _join(path, step), depth + 1)
            if why:
                return why
    return None


def _fits(value: Any, shape: Any, path: str) -> str | None:
    if isinstance(shape, Leaf):
        if shape is ANY:
            return None
        if isinstance(value, shape.types):
            if shape is NUM and isinstance(value, float) and not math.isfinite(value):
                return f"{path}: {value} where a finite number belongs"
            return None
        if shape is FIGURE and value in NON_FINITE:
            return None
        return f"{path}: {kind_of(value)} where {shape.name} belongs"
    if isinstance(shape, One):
        for option in shape.shapes:
            if _fits(value, option, path) is None:
                return None
        return f"{path}: {kind_of(value)} where {shape.name} belongs"
    if isinstance(shape, List):
        if not isinstance(value, list):
            return f"{path}: {kind_of(value)} where a list belongs"
        for i, item in enumerate(value):
            why = _fits(item, shape.of, _join(path, i))
            if why:
                return why
        return None
    if not isinstance(value, dict):
        return f"{path}: {kind_of(value)} where an object belongs"
    if isinstance(shape, Map):
        for key, item in value.items():
            why = _fits(item, shape.of, _join(path, key))
            if why:
                return why
        return None
    for key in shape.need:
        if value.get(key) is None:
            return f"{path}: no {key}"
    for key, sub in shape.keys.items():
        item = value.get(key)
        if item is not None:
            why = _fits(item, sub, _join(path, key))
            if why:
                return why
    return None


def mismatch(value: Any, shape: Any, path: str) -> str | None:
    """Where `value` (found at `path`) does not have `shape` or is not bounded, in one phrase;
    None when it fits. Null fits any key of an `Obj`; list rows and map values must fit."""
    return _bounded(value, path, 1) or _fits(value, shape, path)
