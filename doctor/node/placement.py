"""Pinning a probe (an actor or a task) to one node, on every Ray from 2.40 on.

Ray 2.49+ takes `label_selector={"ray.io/node-id": ...}`; older releases reject that keyword
(ValueError from `.options`) and have no default node-id label, so they get the public
NodeAffinitySchedulingStrategy (hard), which every release has.
"""

from __future__ import annotations


def on_node(remote, node_id: str):
    """`remote` (an actor class or remote function) with options that pin it to `node_id`."""
    try:
        return remote.options(label_selector={"ray.io/node-id": node_id})
    except (ValueError, TypeError):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False))
