"""Bounded reads of Ray's state API, and what they cut.

A cluster that has trained for a week holds a long history: finished tasks (the GCS keeps
up to 100,000 task events), dead actors and workers, jobs. Every list call a collector makes
carries a `limit` (tests/test_bounded_reads.py fails on one without) and filters to what a
check needs; `listed` records a read that came back full, so the snapshot says what was cut
(`collectors.<section>.truncated`: the call, its filters, its limit) and the runner adds a note
to every check that reads that section. Stdlib only: this ships to the cluster.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

# The limit of every bounded read is min(its own limit, CAP) when CAP is set: the history
# cluster test sets it to cross the limits with a few dozen actors instead of thousands.
CAP: int | None = None

_lock = threading.Lock()
_cut: dict[str, list[dict[str, Any]]] = {}


def limit_of(limit: int) -> int:
    return min(limit, CAP) if CAP else limit


def listed(section: str, func: Callable[..., list], *, limit: int, **kwargs) -> list:
    """`func(limit=..., **kwargs)` (a `ray.util.state.list_*`); a reply that fills the limit is
    recorded as cut for `section` (there may be more: Ray says no more than that)."""
    limit = limit_of(limit)
    rows = func(limit=limit, **kwargs)
    if len(rows) >= limit:
        record(section, getattr(func, "__name__", str(func)), limit, len(rows),
               kwargs.get("filters"))
    return rows


def record(section: str, read: str, limit: int | None, returned: int, filters=None,
           note: str | None = None) -> None:
    """A read of `section` that was cut: by rows (`limit`), or by time (limit None, `note`
    says what was left out)."""
    entry: dict[str, Any] = {"read": read, "limit": limit, "returned": returned,
                             "filters": [" ".join(str(part) for part in f) for f in filters or ()]}
    if note:
        entry["note"] = note
    with _lock:
        _cut.setdefault(section, []).append(entry)


def take(section: str) -> list[dict[str, Any]]:
    """The cuts recorded for `section` since the last take (the section's collector is done)."""
    with _lock:
        return _cut.pop(section, [])
