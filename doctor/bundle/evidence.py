"""Findings read from a bundle point at the bundle's own logs and stacks.

A pure step after the checks ran: for each finding, the nodes, workers and processes it
names (its subject and its evidence) are looked up in the bundle's index and the member
paths added to its evidence under `in_bundle`. The checks themselves never change.
"""

from __future__ import annotations

MAX_FILES = 12


def _actor_places(snap) -> dict[str, tuple[str, int]]:
    items = (snap.get("actors") or {}).get("items") or []
    return {a.get("actor_id"): (a.get("node_id"), a.get("pid")) for a in items if a.get("actor_id")}


def _files_for(finding, snap, bundle: dict, actors: dict) -> list[str]:
    nodes = bundle.get("nodes") or {}
    evidence = finding.evidence if isinstance(finding.evidence, dict) else {}
    kind, _, ident = (finding.subject or "").partition(":")
    node_ids, pids = [], []
    if kind == "node":
        node_ids.append(ident)
    if kind == "actor" and ident in actors:
        node_ids.append(actors[ident][0])
        pids.append((actors[ident][0], actors[ident][1]))
    if isinstance(evidence.get("node_id"), str):
        node_ids.append(evidence["node_id"])
    node_ids += [n for n in evidence.get("nodes") or [] if isinstance(n, str)]  # RLD404
    for actor_id in [evidence.get("actor_id")] + list(evidence.get("actor_ids") or []):
        if actor_id in actors:
            pids.append(actors[actor_id])
            node_ids.append(actors[actor_id][0])
    files: list[str] = []
    for node_id in dict.fromkeys(n for n in node_ids if n):
        node = nodes.get(node_id) or {}
        for worker_id in evidence.get("worker_ids") or []:
            files += node.get("worker_logs", {}).get(worker_id, [])
        for pid in evidence.get("pids") or []:
            if node.get("stacks", {}).get(str(pid)):
                files.append(node["stacks"][str(pid)])
        for place_node, pid in pids:
            if place_node == node_id and node.get("stacks", {}).get(str(pid)):
                files.append(node["stacks"][str(pid)])
        files += node.get("logs", [])
        if node.get("host"):
            files.append(node["host"])
    return list(dict.fromkeys(files))[:MAX_FILES]


def point_to_bundle(report, snap) -> None:
    """Add `in_bundle` (the bundle file and its member paths) to the findings it can place."""
    bundle = snap.get("bundle")
    if not bundle:
        return
    actors = _actor_places(snap)
    for finding in report.findings:
        files = _files_for(finding, snap, bundle, actors)
        if files and isinstance(finding.evidence, dict):
            finding.evidence["in_bundle"] = {"bundle": bundle.get("file"), "files": files}
