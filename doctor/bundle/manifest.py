"""The bundle's items and its manifest (schema rldoctor.bundle/v1).

An item is one thing the bundle tried to collect: a log tail, a stack, a node's host
facts, the snapshot. It is listed in the manifest whether it was collected or not, with
its status ("ok" or "failed"), the reason when it failed, how long it took and how big it
is; the payload (what goes into the file) never enters the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rldoctor import node_state
from rldoctor.bundle import SCHEMA


@dataclass
class Item:
    kind: str  # snapshot, report, cluster, host, log, stack, tune, node
    name: str  # what it is, for people: "raylet.out", "stack of pid 1234"
    node_id: str | None = None
    file: str | None = None  # its path inside the bundle, when it has one
    status: str = "ok"
    error: str | None = None
    duration_s: float | None = None
    payload: Any = None  # bytes, or data to serialize; not in the manifest
    details: dict = field(default_factory=dict)  # pid, worker_id, label, truncated bytes, ...

    def fail(self, error: str, duration_s: float | None = None) -> "Item":
        self.status, self.error, self.payload = "failed", error, None
        if duration_s is not None:
            self.duration_s = round(duration_s, 3)
        return self

    def entry(self, size: int | None) -> dict:
        out = {"kind": self.kind, "name": self.name, "node_id": self.node_id,
               "status": self.status, "file": self.file if self.status == "ok" else None,
               "bytes": size, "duration_s": self.duration_s, "error": self.error}
        out.update(self.details)
        return out


def node_rows(doc: dict, items: list[Item], hosts: dict) -> list[dict]:
    """One row per node of the snapshot, alive or dead, with what was collected from it."""
    rows = []
    for node in doc.get("nodes") or []:
        mine = [i for i in items if i.node_id == node.get("node_id")]
        rows.append({
            "node_id": node.get("node_id"), "ip": node.get("ip"), "is_head": node.get("is_head"),
            "alive": node.get("alive"), "state": node_state.of(doc, node).state,
            "hostname": (hosts.get(node.get("node_id")) or {}).get("hostname"),
            "items_ok": sum(1 for i in mine if i.status == "ok"),
            "items_failed": sum(1 for i in mine if i.status != "ok"),
        })
    return rows


def manifest(doc: dict, items: list[Item], sizes: dict[str, int], *, duration_s: float,
             max_bytes: int, obfuscated: bool, redacted: dict, notes: list[str]) -> dict:
    from rldoctor import __version__

    return {
        "schema": SCHEMA,
        "rldoctor_version": __version__,
        "created_at": doc.get("created_at"),
        "source": doc.get("source"),
        "duration_s": round(duration_s, 2),
        "size_cap_bytes": max_bytes,
        "obfuscated": obfuscated,
        "nodes": node_rows(doc, items, doc.get("hosts") or {}),
        "items": [i.entry(sizes.get(i.file)) for i in items],
        "redacted": dict(sorted(redacted.items())),
        "notes": notes,
    }
