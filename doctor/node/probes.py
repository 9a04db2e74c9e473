"""The per-node probe actor: a zero-CPU actor pinned to one node that answers with the node's
facts (rldoctor.node.facts: each found in its own module of this folder), round trips,
object pulls and py-spy stacks.

It is shipped to the workers by value (see `register`), with every module of this folder,
so a production cluster needs nothing of rldoctor installed. Standard library and ray only.
"""

from __future__ import annotations

from rldoctor.node import facts
from rldoctor.node.facts import node_facts
from rldoctor.node.py_spy import py_spy_dump


def register() -> None:
    """Pickle the probe, its facts and their readers by value, so nodes need not have rldoctor."""
    facts.register()


class NodeProbe:
    """A zero-CPU actor pinned to one node: its facts, round trips, object pulls."""

    def facts(self) -> dict:
        return node_facts()

    def ping(self) -> int:
        return 0

    def make(self, nbytes: int):
        """An object of `nbytes` that lives in this node's object store."""
        return b"\x01" * nbytes

    def pull(self, refs: list) -> float:
        """Seconds to fetch the object behind refs[0] onto this node."""
        import time

        import ray

        started = time.perf_counter()
        ray.get(refs[0])
        return time.perf_counter() - started

    def stack(self, pid: int, timeout_s: float) -> dict:
        """The Python stacks of process `pid` on this node (py-spy dump); never raises."""
        return py_spy_dump(pid, timeout_s)

    def call_here(self, func, *args):
        """Run `func(*args)` on this node: a function of another by-value module of rldoctor
        (the incident bundle reads host facts and Tune result files with it)."""
        return func(*args)
