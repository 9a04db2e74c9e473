"""What the preflight checks share: the plan, the nodes it judges, and where a runner can land."""

from __future__ import annotations

from rldoctor.checks._resources import fits

# Resources a bundle or node lists that placement does not turn on here.
_IGNORED = ("memory", "object_store_memory")


def section(snap) -> dict:
    return snap.get("preflight") or {}


def plan(snap) -> dict:
    return section(snap).get("plan") or {}


def shape(resources: dict) -> dict:
    """A demand or an offer without node:* keys and the memory figures."""
    return {k: float(v) for k, v in (resources or {}).items()
            if not k.startswith("node:") and k not in _IGNORED and k != "bundle"}


def node_name(snap, node_id: str) -> str:
    node = snap.node(node_id) or {}
    head = " (head)" if node.get("is_head") else ""
    return f"{node.get('ip') or '?'} {node_id[:8]}{head}"


def subject(node_id: str) -> str:
    return f"node:{node_id}"


def runner_shape(snap) -> dict:
    """What one env runner asks for (the main process's bundle when the config has none)."""
    bundles = snap.field("preflight", "plan", "demand", "bundles") or []
    for role in ("env runner", "main process"):
        for b in bundles:
            if b.get("role") == role:
                return shape(b.get("resources"))
    return {}


def runner_nodes(snap) -> list[str]:
    """Alive nodes where an env runner can land: its bundle fits the node's total."""
    want = runner_shape(snap)
    return [n["node_id"] for n in snap.alive_nodes
            if fits(want, shape(n.get("resources_total")))]
