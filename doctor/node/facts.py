"""The node-side facts contract: a module of this folder declares each fact it reads, and is found.

A fact is one reading of the node a probe runs on, declared where it is read:

    @fact("open_files")                 # the snapshot's hosts.<id>.open_files
    def open_files_here() -> dict: ...

    @fact("versions", part="node")      # the probe's own versions.<id> (not under host)
    @fact("memory", spread=True)        # its keys go into host as they are (hostname, ...)

`found()` imports every module of rldoctor.node and keeps what they declare, like the
collector sections (rldoctor.cluster.sections) and the checks: a new fact is one new module,
no list to edit. `node_facts()` reads them all on the node. The probes travel by value
(`register`), and so does what `found()` found: the nodes need nothing of rldoctor and never
look for modules. Standard library only (ray inside functions).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

PACKAGE = "rldoctor.node"


@dataclass(frozen=True)
class Fact:
    key: str  # where it goes: host[key], or the probe's answer[key] for part "node"
    read: Callable[[], dict]
    part: str = "host"
    spread: bool = False  # its keys go into `part` as they are


def fact(key: str, *, part: str = "host", spread: bool = False):
    """Declare the decorated `() -> dict` as the node-side fact `key` (never raising)."""

    def wrap(func):
        func.__rldoctor_fact__ = Fact(key, func, part, spread)
        return func

    return wrap


FOUND: dict[str, Fact] = {}  # filled by found() on the client; travels by value to the nodes


def found(package: str = PACKAGE) -> dict[str, Fact]:
    """Every fact declared in the modules of `package`, by key (declared once each)."""
    if FOUND and package == PACKAGE:
        return FOUND
    pkg = importlib.import_module(package)
    out: dict[str, Fact] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package}.{info.name}")
        for value in vars(module).values():
            declared = getattr(value, "__rldoctor_fact__", None)
            if declared is None or out.get(declared.key) is declared:
                continue
            if declared.key in out:
                raise ValueError(f"node fact {declared.key!r} is declared twice "
                                 f"({out[declared.key].read.__module__}, {module.__name__})")
            out[declared.key] = declared
    if package == PACKAGE:
        FOUND.update(out)
    return out


def read_facts(facts: dict[str, Fact]) -> dict:
    """{"host": {...}, <node part keys>...}: each fact read once, in the order found."""
    out: dict = {"host": {}}
    for declared in sorted(facts.values(), key=lambda f: not f.spread):  # spread first
        value = declared.read()
        into = out["host"] if declared.part == "host" else out
        if declared.spread:
            into.update(value)
        else:
            into[declared.key] = value
    return out


def node_facts() -> dict:
    """Everything one probe learns about the node it runs on."""
    import ray

    return {"node_id": ray.get_runtime_context().get_node_id(), **read_facts(found())}


def register() -> None:
    """Pickle the facts and every module of this folder by value (and the shared modules they
    read with), after finding the facts here, so nodes need not have rldoctor."""
    import sys

    import ray.cloudpickle

    found()
    for name in sorted(sys.modules):
        if name.startswith(PACKAGE + ".") or name.startswith("rldoctor.raylog"):
            ray.cloudpickle.register_pickle_by_value(sys.modules[name])
