"""The incident bundle through the dashboard address: its items come back in the job's output.

`JobItems` is what `rldoctor collect --bundle --address http(s)://...` gives
rldoctor.dashboard.remote instead of the GCS path's Gatherer: it asks the collectors' job
for the bundle's items too (rldoctor.job.bundle gathers, redacts and fits them inside
the cluster), reads the job's log over HTTP until both frames are there (the snapshot, then
the items), and turns the items back into rldoctor.bundle.manifest.Item. The job is then
stopped (its driver deletes its own log file on that stop) and deleted as for `check`.
Nothing here imports ray.
"""

from __future__ import annotations

import base64

from rldoctor.bundle.manifest import Item
from rldoctor.job.bundle import ITEMS_BEGIN, ITEMS_END, ITEMS_FAILED
from rldoctor.job import unframe
from rldoctor.words import node_label

ITEMS_TIME_S = 20.0 + 10.0  # the Gatherer's own budget for items, plus redaction and printing


class JobItems:
    """The bundle's items as the dashboard path's job gathered them; `items` as a Gatherer's."""

    __name__ = "bundle"

    def __init__(self, progress=None, max_bytes: int = 50 * 10**6):
        self.progress = progress or (lambda text: None)
        self.max_bytes = max_bytes
        self.items: list[Item] = []
        self.secret_sources: list = []  # learned and used inside the cluster: never sent
        self.redacted: dict[str, int] = {}  # what the job masked before printing, by kind
        self.ran = False
        self.reason = "the job did not return them"

    def job_args(self) -> str:
        return f" --bundle-max-bytes {int(self.max_bytes)}"

    def through_job(self, job) -> dict:
        """Wait for the job's frames (the job keeps running until it is stopped), read them."""
        logs = job.output((ITEMS_END, ITEMS_FAILED), extra_s=ITEMS_TIME_S)
        doc = job.snapshot(logs)
        self._read_items(logs, doc)
        return doc

    def _read_items(self, logs: str, doc: dict) -> None:
        sent = unframe(logs, ITEMS_BEGIN, ITEMS_END)
        if sent is None:
            failed = [line for line in logs.splitlines() if line.startswith(ITEMS_FAILED)]
            self.reason = ("the job could not gather them: " + failed[-1][len(ITEMS_FAILED):][:300]
                           if failed else "the job's output held no items")
            return
        self.ran = bool(sent.get("ran"))
        self.redacted = {k: int(v) for k, v in (sent.get("redacted") or {}).items()}
        ips = {n.get("node_id"): n.get("ip") or "?" for n in doc.get("nodes") or []}
        for entry in sent.get("items") or []:
            item = decode_item(entry)
            self.items.append(item)
            where = node_label(item.node_id, ips.get(item.node_id)) if item.node_id else "cluster"
            state = "ok" if item.status == "ok" else f"FAILED: {item.error}"
            took = f" in {item.duration_s:.2f}s" if item.duration_s is not None else ""
            self.progress(f"{where}: {item.name} {state}{took}")


def decode_item(entry: dict) -> Item:
    payload = entry.get("payload")
    if entry.get("payload_b64") is not None:
        payload = base64.b64decode(entry["payload_b64"])
    return Item(kind=entry.get("kind") or "item", name=entry.get("name") or "item",
                node_id=entry.get("node_id"), file=entry.get("file"),
                status=entry.get("status") or "failed", error=entry.get("error"),
                duration_s=entry.get("duration_s"), payload=payload,
                details=dict(entry.get("details") or {}))
