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
    muted: dict[str, Any] | None = None  # {reason, expires, source} when muted; in JSON only then
    rule: str | None = None  # the row of a check with rules (RLD801's table): its stable id

    @property
    def label(self) -> str:
        """The code a user selects, mutes and explains it by: RLD801/key-num_workers, or RLD203."""
        return f"{self.code}/{self.rule}" if self.rule else self.code

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["severity"] = self.severity.label
        for key in ("location", "muted", "rule"):
            if out.get(key) is None:
                out.pop(key, None)
        if self.rule:
            out["rule"] = self.label
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
    cluster: dict | None = None  # the overview of the nodes (rldoctor.report.overview), when there are any
    # Skipped checks a run without a cluster folds into one line per cause (rldoctor.report.skipped)
    folded_skips: list[dict] | None = None
    # The incident's events, oldest first (rldoctor.report.timeline), when a cluster was examined
    timeline: list[dict] | None = None
    verbose: bool = False  # table and Markdown: every check row, not only those that are not OK
    # `rldoctor lint`: the inputs that could not be linted (path, line, message), for its text format
    not_linted: list[dict] = field(default_factory=list)
    # What the input let the report judge (rldoctor.report.basis; JSON `verdict_basis`)
    basis: dict | None = None
    # The declared report sections' values, by name (rldoctor.report.sections)
    parts: dict[str, Any] = field(default_factory=dict)

    @property
    def training(self) -> list[dict] | None:
        """The RLlib trainings found on a live cluster (the `training` report section)."""
        return self.parts.get("training")

    @training.setter
    def training(self, value: list[dict] | None) -> None:
        self.parts["training"] = value

    @property
    def judged(self) -> bool:
        """False when the input held nothing a verdict can stand on (nothing read)."""
        return self.basis is None or bool(self.basis.get("judged", True))

    @property
    def findings(self) -> list[Finding]:
        """Every finding, muted ones included (they stay in the report, marked)."""
        found = [f for r in self.results for f in r.findings]
        return sorted(found, key=lambda f: (-int(f.severity), f.code, f.subject))

    @property
    def active_findings(self) -> list[Finding]:
        """The findings that count: status, counts and --fail-on leave muted ones out."""
        return [f for f in self.findings if not f.muted]

    @property
    def muted_findings(self) -> list[Finding]:
        return [f for f in self.findings if f.muted]

    @property
    def errored(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "error"]

    def counts(self) -> dict[str, int]:
        """Findings that count per severity, muted ones apart (`muted`, `muted_<severity>`)."""
        counts = {s.label: 0 for s in Severity}
        for f in self.active_findings:
            counts[f.severity.label] += 1
        muted = self.muted_findings
        counts["muted"] = len(muted)
        for s in Severity:
            counts[f"muted_{s.label}"] = sum(1 for f in muted if f.severity == s)
        for status in CHECK_STATUSES:
            counts[f"checks_{status}"] = sum(1 for r in self.results if r.status == status)
        return counts

    @property
    def status(self) -> str:
        """ok, warn, fail or error: the worst finding that is not muted, error if a check errored
        or nothing could be judged (the status line says NOT JUDGED)."""
        if self.errored or not self.judged:
            return "error"
        worst = max((f.severity for f in self.active_findings), default=None)
        return worst.label if worst else "ok"

    def exit_code(self, fail_on: Severity) -> int:
        """0 when no finding that is not muted reaches `fail_on`; 1 when one does or a check errored;
        3 when the input held nothing to judge."""
        if not self.judged:
            return 3
        if self.errored:
            return 1
        return 1 if any(f.severity >= fail_on for f in self.active_findings) else 0
