"""The report's timeline: the events of an incident, oldest first (node deaths, worker and actor
deaths with their cause, actor restarts, OOM kills, job status changes, runtime_env failures).

The events come from rldoctor.failure_chains (pure, the same whatever the snapshot's source);
this module adds each event's clock time (the cluster's, in UTC) and its age: from the
snapshot's time for a live cluster's snapshot, from now for one read from logs (a session read
days later must not say "0 s ago"; the report states where the logs end, `logs_end`).
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from rldoctor import failure_chains as chains


def build(snap, window_s: float | None = None, clock=time.time) -> list[dict]:
    data = snap.data
    now = chains.now_of(data)  # the snapshot's time; for logs, their last line: --since counts from it
    window = chains.window_of(data, window_s)
    ages_from = clock() if from_logs(data) else now
    rows = []
    for event in chains.timeline_events(data):
        t = event["time"]
        if t is not None and now is not None and t < now - window:
            continue
        rows.append({"time": _iso(t), "epoch": t,
                     "age": age_text(ages_from - t) if (t and ages_from) else None,
                     "kind": event["kind"], "subject": event["subject"], "message": event["message"]})
    return rows


def from_logs(data: dict) -> bool:
    return (data.get("source") or {}).get("kind") == "logs"


def logs_end(snap, clock=time.time) -> dict | None:
    """Where a snapshot read from logs ends (its last line), and how long ago that is; None for
    any other snapshot."""
    if not from_logs(snap.data):
        return None
    end = chains.now_of(snap.data)
    if end is None:
        return None
    return {"time": _iso(end), "epoch": end, "age": age_text(clock() - end)}


def _iso(t) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def age_text(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h ago"
    return f"{seconds / 86400:.1f} d ago"


def when(row: dict) -> str:
    if not row.get("time"):
        return "time not recorded"
    return f"{row['time']} ({row['age']})" if row.get("age") else row["time"]
