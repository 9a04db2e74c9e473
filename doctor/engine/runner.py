"""Run checks over a snapshot, each isolated and bounded in time."""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable

from rldoctor.model import CheckResult, Finding, Note
from rldoctor.engine.registry import Check
from rldoctor.snapshot import Snapshot

DEFAULT_CHECK_TIMEOUT_S = 10.0


def _missing_data(check: Check, snap: Snapshot) -> tuple[str, str] | None:
    """(status, reason) when the snapshot lacks a section the check needs.

    A requirement "a|b" is met by either section; when neither is there, the check is
    skipped with both reasons (an error only when every one of them failed).
    """
    for requirement in check.requires:
        alternatives = requirement.split("|")
        if any(snap.has(section) for section in alternatives):
            continue
        missing = [_why_missing(snap, section) for section in alternatives]
        status = "error" if all(state == "error" for state, _ in missing) else "skipped"
        return status, "; ".join(reason for _, reason in missing)
    return None


def _why_missing(snap: Snapshot, section: str) -> tuple[str, str]:
    collector = snap.collector(section)
    state = collector.get("status")
    reason = collector.get("error") or collector.get("reason")
    if state in ("error", "timeout"):
        return "error", f"collecting '{section}' failed: {reason or state}"
    if reason:
        return "skipped", f"no '{section}' data: {reason}"
    return "skipped", f"the snapshot has no '{section}' data"


def _cut_reads(check: Check, snap: Snapshot) -> list[Note]:
    """A note for each read of the check's sections that came back full (bounded reads:
    `collectors.<section>.truncated`): what the check saw may not be all there is."""
    notes = []
    for requirement in check.requires:
        for section in requirement.split("|"):
            if not snap.has(section):
                continue
            for cut in snap.collector(section).get("truncated") or ():
                filters = f" ({', '.join(cut.get('filters') or ())})" if cut.get("filters") else ""
                if cut.get("limit") is None:  # cut by time, not rows: the note says how
                    text = f"{section} read cut: {cut.get('read')}{filters}: {cut.get('note')}"
                else:
                    text = (f"{section} read cut: {cut.get('read')}{filters} returned its limit of "
                            f"{cut.get('limit')} rows; "
                            f"{cut.get('note') or 'rows beyond it were not read'}")
                notes.append(Note(f"snapshot.{section}", text, dict(cut)))
    return notes


def status_of(findings: list[Finding]) -> str:
    worst = max((f.severity for f in findings), default=None)
    return worst.label if worst else "ok"


def run_check(check: Check, snap: Snapshot, params: dict[str, Any] | None = None,
              timeout_s: float = DEFAULT_CHECK_TIMEOUT_S) -> CheckResult:
    started = time.perf_counter()
    missing = _missing_data(check, snap)
    if missing:
        status, reason = missing
        return CheckResult(check.code, check.name, status, 0.0, reason, origin=check.origin)

    outcome: dict[str, Any] = {}

    def target():
        try:
            outcome["findings"] = list(check(snap, params))
        except BaseException as exc:  # isolate: one broken check never stops the others
            outcome["error"] = exc

    limit = check.timeout_s or timeout_s
    worker = threading.Thread(target=target, name=f"check-{check.code}", daemon=True)
    worker.start()
    worker.join(limit)
    duration = time.perf_counter() - started
    if worker.is_alive():
        return CheckResult(check.code, check.name, "error", duration,
                           f"timed out after {limit:g}s and was abandoned", origin=check.origin)
    if "error" in outcome:
        exc = outcome["error"]
        return CheckResult(check.code, check.name, "error", duration,
                           f"{type(exc).__name__}: {exc}", origin=check.origin)
    findings, notes = [], []
    for f in outcome.get("findings", []):
        if isinstance(f, Note):
            notes.append(f)
            continue
        if not isinstance(f, Finding):
            return CheckResult(check.code, check.name, "error", duration,
                               f"returned {type(f).__name__}, not a Finding", origin=check.origin)
        f.code = f.code or check.code
        findings.append(f)
    notes.extend(_cut_reads(check, snap))
    detail = "; ".join(([f"{len(findings)} finding(s)"] if findings else [])
                       + [n.message for n in notes])
    return CheckResult(check.code, check.name, status_of(findings), duration, detail, findings,
                       origin=check.origin, notes=notes)


def run_checks(checks: Iterable[Check], snap: Snapshot,
               params: dict[str, dict[str, Any]] | None = None,
               timeout_s: float = DEFAULT_CHECK_TIMEOUT_S) -> list[CheckResult]:
    params = params or {}
    return [run_check(c, snap, params.get(c.code), timeout_s) for c in checks]
