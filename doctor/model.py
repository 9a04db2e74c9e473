"""The words rldoctor speaks in: severities, findings, check results, reports.

Nothing here imports ray; every other module can depend on this one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any


class Severity(IntEnum):
    """How bad a finding is. Ordered, so `--fail-on` can compare."""

    INFO = 1
    WARN = 2
    FAIL = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> "Severity":
        return cls[text.upper()]


# Status of one check run. `ok`/`warn`/`fail` follow its worst finding.
CHECK_STATUSES = ("ok", "warn", "fail", "error", "skipped")


@dataclass
class Finding:
    """One thing a check observed, about one subject, with what to do about it."""

    code: str
    severity: Severity
    subject: str  # node:<hex>, actor:<id>, cluster, target:<module:attr>, run:<path>
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: str = ""
    location: dict[str, Any] | None = None  # lint: {path, line, column}; in JSON only when set

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["severity"] = self.severity.label
        if out.get("location") is None:
            out.pop("location", None)
        return out


@dataclass
class Note:
    """Something a check looked at closely and let go, with what it saw (not a finding)."""

    subject: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CheckResult:
    """What running one check produced."""

    code: str
    name: str
    status: str
    duration_s: float
    detail: str = ""
    findings: list[Finding] = field(default_factory=list)
    origin: str = "rldoctor"
    notes: list[Note] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = {
            "code": self.code,
            "name": self.name,
            "status": self.status,
            "duration_s": round(self.duration_s, 4),
            "detail": self.detail,
            "origin": self.origin,
        }
        if self.notes:
            out["notes"] = [n.to_json() for n in self.notes]
        return out


@dataclass
class Report:
    """Everything one `rldoctor check` produced, ready for a renderer."""

    results: list[CheckResult]
    source: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. plugins that failed to load
    figures: dict[str, Any] = field(default_factory=dict)  # smoke-train figures, when any
    training: list[dict] | None = None  # the RLlib trainings found on a live cluster

    @property
    def findings(self) -> list[Finding]:
        found = [f for r in self.results for f in r.findings]
        return sorted(found, key=lambda f: (-int(f.severity), f.code, f.subject))

    @property
    def errored(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "error"]

    def counts(self) -> dict[str, int]:
        counts = {s.label: 0 for s in Severity}
        for f in self.findings:
            counts[f.severity.label] += 1
        for status in CHECK_STATUSES:
            counts[f"checks_{status}"] = sum(1 for r in self.results if r.status == status)
        return counts

    @property
    def status(self) -> str:
        """ok, warn, fail or error: the worst of the findings, error if a check errored."""
        if self.errored:
            return "error"
        worst = max((f.severity for f in self.findings), default=None)
        return worst.label if worst else "ok"

    def exit_code(self, fail_on: Severity) -> int:
        """0 when nothing reaches `fail_on`; 1 when a finding does or a check errored."""
        if self.errored:
            return 1
        return 1 if any(f.severity >= fail_on for f in self.findings) else 0
