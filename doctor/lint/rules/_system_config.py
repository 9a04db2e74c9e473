"""RLD803: `_system_config` keys and `RAY_` settings, against the names the installed Ray knows.

The known names come from the lint section's `ray` entry, which the collector
read from the installed Ray's own files (`rldoctor.lint.ray_names`).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field

_SYSTEM_CONFIG_FLAG = re.compile(r"""--system-config[= ]\s*(['"])(\{.*?\})\1""")
_ENV_ASSIGN = re.compile(r"(?<![A-Za-z0-9_$])(RAY_[A-Za-z0-9_]*[A-Za-z0-9])=")
_INIT = ("ray.init",)


@dataclass
class Setting:
    kind: str  # system_config, env
    name: str
    line: int
    column0: int
    evidence: dict = field(default_factory=dict)


def nearest(name: str, known: list[str]) -> str | None:
    match = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return match[0] if match else None


def _is_ray_init(call: dict, aliases: dict[str, str]) -> bool:
    func = call["func"] or ""
    head, _, rest = func.partition(".")
    resolved = aliases.get(head, head) + (f".{rest}" if rest else "")
    return resolved in _INIT or func in _INIT


def _aliases(facts: dict) -> dict[str, str]:
    out = {}
    for imp in facts["imports"]:
        if imp["name"] is None:
            out[imp["asname"] or imp["module"].split(".")[0]] = imp["module"] if imp["asname"] else \
                imp["module"].split(".")[0]
        else:
            out[imp["asname"] or imp["name"]] = f"{imp['module']}.{imp['name']}"
    return out


def python_system_configs(facts: dict) -> list[dict]:
    """ray.init(...) calls with a literal `_system_config` dict: the call, the kwarg, the dict."""
    aliases = _aliases(facts)
    out = []
    for call in facts["calls"]:
        if not _is_ray_init(call, aliases):
            continue
        for kw in call["kwargs"]:
            if kw["name"] == "_system_config":
                d = facts["dicts"][kw["dict"]] if kw.get("dict") is not None else None
                address = next((k for k in call["kwargs"] if k["name"] == "address"), None)
                if address is None and call["args"]:
                    address = call["args"][0]
                out.append({"call": call, "kw": kw, "dict": d, "address": address})
    return out


def python_env_names(facts: dict) -> list[Setting]:
    return [Setting("env", s["value"], s["span"][0], s["span"][1]) for s in facts["env_strings"]
            if not s["value"].endswith("_")]


def _string_settings(text: str, pointer: str, line: int, column: int) -> list[Setting]:
    out = []
    for match in _SYSTEM_CONFIG_FLAG.finditer(text):
        try:
            keys = json.loads(match.group(2))
        except ValueError:
            continue
        if isinstance(keys, dict):
            out += [Setting("system_config", str(k), line, column - 1, {"pointer": pointer})
                    for k in keys]
    for match in _ENV_ASSIGN.finditer(text):
        out.append(Setting("env", match.group(1), line, column - 1, {"pointer": pointer}))
    return out


def yaml_settings(doc: dict) -> list[Setting]:
    """`--system-config='{...}'` keys and `RAY_X=` settings in a YAML document's strings."""
    out: list[Setting] = []
    locations = doc.get("locations") or {}

    def visit(node, pointer):
        if isinstance(node, dict):
            for key, value in node.items():
                child = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
                if isinstance(key, str) and re.fullmatch(r"RAY_[A-Za-z0-9_]+", key):
                    line, col = locations.get(child, [doc.get("line", 1), 1])
                    out.append(Setting("env", key, line, col - 1, {"pointer": child}))
                if key == "name" and isinstance(value, str) and re.fullmatch(r"RAY_[A-Za-z0-9_]+", value):
                    line, col = locations.get(child, [doc.get("line", 1), 1])
                    out.append(Setting("env", value, line, col - 1, {"pointer": child}))
                visit(value, child)
        elif isinstance(node, list):
            for i, item in enumerate(node):
                visit(item, f"{pointer}/{i}")
        elif isinstance(node, str) and ("RAY_" in node or "--system-config" in node):
            line, col = locations.get(pointer, [doc.get("line", 1), 1])
            out.extend(_string_settings(node, pointer, line, col))

    visit(doc.get("data"), "")
    return out
