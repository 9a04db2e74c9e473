"""The one fan-out to the raylets (gRPC to each alive node's raylet, not the probes).

`control_plane` pings every raylet (GetSystemConfig) and `objectstore` reads every raylet's
store figures (GetNodeStats) through `fan_out`; both take the raylets' addresses from the
snapshot's nodes section (rldoctor.cluster.nodes: `ip` and `ports.node_manager`), read now
(nodes.read) only when that section is missing. tests/test_discovery.py keeps raylet
calls from growing a pool of their own.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

MAX_PARALLEL = 16


def addresses(nodes: list[dict] | None) -> dict[str, tuple[str, int]]:
    """{node id: (ip, node manager port)} of the alive nodes of the nodes section."""
    if not nodes:  # no nodes section (it failed): read it now
        from rldoctor.cluster import nodes as node_section

        nodes = node_section.read()
    found = {n["node_id"]: (n.get("ip"), (n.get("ports") or {}).get("node_manager"))
             for n in nodes if n.get("alive")}
    return {node_id: where for node_id, where in found.items() if where[0] and where[1]}


def fan_out(targets: dict[str, tuple[str, int]], call: Callable[[str, int], object],
            name: str = "rldoctor-raylet") -> tuple[ThreadPoolExecutor, dict[str, Future]]:
    """`call(ip, port)` for every target at once, at most MAX_PARALLEL at a time. Returns the
    pool (the caller shuts it down, waiting or not) and {node id: future}."""
    pool = ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, max(1, len(targets))),
                              thread_name_prefix=name)
    return pool, {node_id: pool.submit(call, ip, port) for node_id, (ip, port) in targets.items()}
