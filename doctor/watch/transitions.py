"""The findings of `rldoctor watch` from round to round, and the log of what changed.

A finding is identified as its Prometheus series is: (code, severity, subject). One that
appears is `opened`, one that is gone is `resolved`; a finding whose severity changes
resolves at the old one and opens at the new one. Muted findings are left out. Each
change is one JSON line (time, event, code, name, severity, subject, message), so a log
pipeline can alert on the same events as Prometheus. Imports neither ray nor
prometheus_client.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import datetime, timezone

from rldoctor.redact import redact
from rldoctor.words import shorten

MESSAGE_LIMIT = 500


@dataclass(frozen=True)
class Open:
    """A finding of the latest round that counts (not muted)."""

    code: str
    name: str
    severity: str
    subject: str
    message: str
    rounds: int = 1  # consecutive rounds it has been seen in, this one included

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.code, self.severity, self.subject)


def current(report, names: dict[str, str], before: dict | None = None) -> dict[tuple, Open]:
    """The report's findings that count, keyed like their series, with their streaks."""
    before = before or {}
    out: dict[tuple, Open] = {}
    for f in report.active_findings:
        key = (f.code, f.severity.label, f.subject)
        if key in out:  # two findings of one check on one subject: one series, the first message
            continue
        seen = before.get(key)
        out[key] = Open(code=f.code, name=names.get(f.code, ""), severity=f.severity.label,
                        subject=f.subject, message=_short(redact(f.message)),
                        rounds=(seen.rounds + 1) if seen else 1)
    return out


def changes(before: dict[tuple, Open], now: dict[tuple, Open], when: datetime) -> list[dict]:
    """The opened and resolved events between two rounds, resolved first."""
    stamp = when.astimezone(timezone.utc).isoformat(timespec="seconds")
    events = [_event("resolved", f, stamp) for key, f in sorted(before.items()) if key not in now]
    events += [_event("opened", f, stamp) for key, f in sorted(now.items()) if key not in before]
    return events


def _event(kind: str, f: Open, stamp: str) -> dict:
    return {"time": stamp, "event": kind, "code": f.code, "name": f.name,
            "severity": f.severity, "subject": f.subject, "message": f.message}


def _short(text: str) -> str:
    return shorten(text, MESSAGE_LIMIT)


class TransitionLog:
    """JSON lines to a file (appended, flushed per line) or to stdout."""

    def __init__(self, path: str | None = None):
        from rldoctor.safe_write import open_append

        self.path = path
        # appended, created 0600, never through a link nor into a FIFO (rldoctor.safe_write)
        self._out = open_append(path, "--log") if path else sys.stdout

    def write(self, event: dict) -> None:
        self._out.write(redact(json.dumps(event, sort_keys=False)) + "\n")
        self._out.flush()

    def close(self) -> None:
        if self.path:
            self._out.close()
