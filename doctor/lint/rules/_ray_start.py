"""`ray start` as the pinned Ray parses it: the flags of launcher start commands and KubeRay rayStartParams.

The options are `ray start`'s own click options (names, types, choices), read from the pinned
Ray's source into the shipped history (rldoctor.lint.ray_history; tests/test_ray_history.py
compares them with the installed Ray's click command). A flag `ray start` does not have, or a
value its type refuses, makes `ray start` exit 2 before Ray starts, on every node.
"""

from __future__ import annotations

import difflib
import re
import shlex

from rldoctor.lint.rules._cluster_fixes import FIXES
from rldoctor.lint.rules._problem import Problem

_SHELL_VALUE = re.compile(r"[$`{}]")  # a value the shell fills in: not ours to judge


def options() -> dict[str, dict]:
    """Each of `ray start`'s option names -> its option."""
    from rldoctor.lint.ray_history import load

    return {name: option for option in load().get("ray_start_options") or [] for name in option["names"]}


def _value_error(option: dict, value: str) -> str | None:
    """The words click refuses `value` with, or None when it takes it."""
    if _SHELL_VALUE.search(value):
        return None
    kind = option.get("type")
    if kind == "int":
        try:
            int(value)
        except ValueError:
            return f"'{value}' is not a valid integer"
    elif kind == "float":
        try:
            float(value)
        except ValueError:
            return f"'{value}' is not a valid float"
    elif kind == "choice" and option.get("choices"):
        if value.lower() not in [c.lower() for c in option["choices"]]:
            return f"'{value}' is not one of {', '.join(repr(c) for c in option['choices'])}"
    return None


def _int_hint(value: str) -> str:
    units = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
    match = re.fullmatch(r"\s*([0-9.]+)\s*([kmgtKMGT]i?)[bB]?\s*", value)
    if not match:
        return "a whole number of bytes"
    return f"{int(float(match.group(1)) * units[match.group(2).lower()])} (bytes)"


def _unknown(flag: str, known: dict, dashes: str = "--") -> str:
    """The fix of an option `ray start` does not have, its options written with `dashes`
    (`--port` on a command line, `port` as a rayStartParams key)."""
    near = difflib.get_close_matches(flag, list(known), n=1, cutoff=0.75)
    if flag in ("--redis-port", "--redis-address", "--redis-shard-ports"):
        return FIXES["a `ray start` option is a Redis one (gone in Ray 2.x)"].format(dashes=dashes)
    if near:
        shown = near[0] if dashes == "--" or not near[0].startswith("--") else near[0][2:]
        return FIXES["a `ray start` option does not exist but is close to one that does"].format(near=shown)
    return FIXES["a `ray start` option does not exist"].format()


def command_problems(pointer: str, command: str) -> list[Problem]:
    """The flags and values of each `ray start` in one shell command that `ray start` refuses."""
    known = options()
    if not known:
        return []
    out = []
    for part in re.split(r"&&|\|\||;|\|", command):
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        starts = [i for i in range(len(words) - 1) if words[i].endswith("ray") and words[i + 1] == "start"]
        if not starts:
            continue
        words = words[starts[0] + 2:]
        i = 0
        while i < len(words):
            word = words[i]
            i += 1
            if not word.startswith("--"):
                continue
            flag, eq, value = word.partition("=")
            option = known.get(flag)
            if option is None:
                out.append(Problem("fail", pointer, f"`ray start {flag}`: `ray start` has no such option, so it "
                                   f"exits 2 (\"No such option: {flag}\") and Ray does not start on the node",
                                   _unknown(flag, known), evidence={"flag": flag}))
                continue
            if option["flag"]:
                continue
            if not eq:
                if i >= len(words):
                    continue
                value = words[i]
                i += 1
            error = _value_error(option, value)
            if error:
                hint = (FIXES["a whole-number `ray start` option is given another value"].format(
                    flag=flag, value=_int_hint(value)) if option["type"] == "int" else
                    FIXES["a `ray start` option is given a value it does not take"].format(flag=flag))
                out.append(Problem("fail", pointer, f"`ray start {flag}={value}`: {error}, so `ray start` exits 2 "
                                   f"(\"Invalid value for '{flag}'\") and Ray does not start on the node",
                                   hint, evidence={"flag": flag, "value": value}))
    return out


def params_problems(pointer: str, group: str, params: dict) -> list[Problem]:
    """KubeRay's rayStartParams: each key is a `ray start --KEY=VALUE` the pod's command runs."""
    known = options()
    if not known or not isinstance(params, dict):
        return []
    out = []
    for key, value in params.items():
        flag = f"--{key}"
        option = known.get(flag)
        where = f"{pointer}/{key}"
        if option is None:
            out.append(Problem("fail", where, f"{group}: rayStartParams `{key}` is `ray start {flag}`, which "
                               f"`ray start` does not have: it exits 2 (\"No such option: {flag}\") and every "
                               "pod of the group fails to start",
                               _unknown(flag, known, dashes=""), evidence={"flag": flag}))
            continue
        if option["flag"] or value is None:
            continue
        error = _value_error(option, str(value))
        if error:
            hint = (FIXES["a whole-number rayStartParam is given another value"].format(
                key=key, value=_int_hint(str(value)).split(' ')[0]) if option["type"] == "int" else
                FIXES["a `ray start` option is given a value it does not take"].format(flag=flag))
            out.append(Problem("fail", where, f"{group}: rayStartParams {key}: {value!r}: {error} for "
                               f"`ray start {flag}`, so it exits 2 and every pod of the group fails to start",
                               hint, evidence={"flag": flag, "value": str(value)}))
    return out
