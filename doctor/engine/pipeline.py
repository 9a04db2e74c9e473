"""From a snapshot (or lint sources) to a Report: the one pipeline every command calls.

    diagnosis = Diagnosis.from_options(only, skip, params, ignores, config)  # usage errors here
    report = diagnosis.run(snap, source)     # check, watch, the bundle's report, smoke-train
    linted = diagnosis.lint(paths)           # rldoctor lint: (report, problems, doc)

A Diagnosis holds the selection (--only/--skip; the `code` area for lint), the checks'
parameters (--set), the mutes (--ignore and the team's rldoctor.toml or --config) and the
per-check timeout. `run` runs the checks, builds the report's parts (the cluster overview,
the Training block, the folded skips, the smoke figures when asked, pointers into an
incident bundle's files) and applies the mutes. Imports neither ray nor torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple

from rldoctor.engine.registry import Check, Registry
from rldoctor.engine.runner import DEFAULT_CHECK_TIMEOUT_S, run_checks, status_of
from rldoctor.errors import UsageError
from rldoctor.model import Report


def validate_codes(option: str, codes: Iterable[str], registry: Registry) -> None:
    known = {c.code for c in registry.checks} | {c.name for c in registry.checks}
    unknown = [c for c in codes if c not in known and "/" not in c]
    if unknown:
        valid = ", ".join(c.code for c in registry.checks)
        raise UsageError(f"{option}: unknown check code(s) {', '.join(unknown)}; valid codes: {valid}")
    for text in codes:
        if "/" in text:
            registry.selector(text, option)  # CODE/RULE: a usage error for an unknown rule


def rule_selection(only: Iterable[str], registry: Registry) -> tuple[list[str], dict[str, set[str]]]:
    """--only values as (the checks to run, {code: the rules kept} for CODE/RULE values): a
    check named whole keeps every rule."""
    checks, rules, whole = [], {}, set()
    for text in only:
        check, rule = registry.selector(text, "--only")
        checks.append(check.code)
        if rule is None:
            whole.add(check.code)
        else:
            rules.setdefault(check.code, set()).add(rule)
    return checks, {code: kept for code, kept in rules.items() if code not in whole}


def validate_params(params: dict, registry: Registry) -> None:
    checks = registry.by_code()
    for code, values in params.items():
        if code not in checks:
            raise UsageError(f"--set: unknown check code {code}")
        unknown = sorted(set(values) - set(checks[code].params))
        if unknown:
            known = ", ".join(sorted(checks[code].params)) or "none"
            raise UsageError(f"--set: {code} has no setting {', '.join(unknown)}; its settings: {known}")
        for name, value in list(values.items()):
            values[name] = _setting(code, name, value, checks[code].params[name])


def _setting(code: str, name: str, value: Any, default: Any) -> Any:
    """`value` of --set CODE.NAME=VALUE as the kind of the setting's default; a value of
    another kind (warn_ms=abc, a NaN) is a usage error now, not a check that errors later."""
    import math

    where = f"--set {code}.{name}={value!r}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise UsageError(f"{where}: expected true or false (its default: {default!r})")
    elif isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value):
            raise UsageError(f"{where}: expected a finite number (its default: {default!r})")
        if isinstance(default, int) and not isinstance(value, int) and value != int(value):
            raise UsageError(f"{where}: expected a whole number (its default: {default!r})")
    elif isinstance(default, str):
        if not isinstance(value, str):
            import json

            value = json.dumps(value)  # zone_label=123: the text the user typed
    elif isinstance(default, (list, tuple, dict)) and not isinstance(value, type(default)):
        raise UsageError(f"{where}: expected {'a list' if isinstance(default, (list, tuple)) else 'an object'} "
                         f"in JSON (its default: {default!r})")
    return value


class Linted(NamedTuple):
    """What `Diagnosis.lint` returns: the report, the inputs that were not linted, the document."""

    report: Report
    problems: list[dict]
    doc: dict


@dataclass
class Diagnosis:
    registry: Registry
    checks: list[Check]
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    mutes: list = field(default_factory=list)
    mute_notes: list[str] = field(default_factory=list)
    timeout_s: float = DEFAULT_CHECK_TIMEOUT_S
    smoke_figures: bool = False  # smoke-train: the run's figures are a part of the report
    rules: dict[str, set[str]] = field(default_factory=dict)  # --only CODE/RULE: rows kept
    window_s: float | None = None  # check --since: how far back the timeline's events count

    @classmethod
    def from_options(cls, only: Iterable[str] = (), skip: Iterable[str] = (),
                     params: dict | None = None, ignores: Iterable[str] = (),
                     config: str | None = None, *, lint: bool = False,
                     codes: Iterable[str] | None = None, read_mutes: bool = True,
                     timeout_s: float = DEFAULT_CHECK_TIMEOUT_S, smoke_figures: bool = False,
                     registry: Registry | None = None, preflight: bool = False) -> "Diagnosis":
        """Check the options against the registry (a usage error is raised before anything is
        read) and load the mutes (a bad ignore file stops here too). `codes` narrows the
        selection to a command's own checks; `read_mutes=False` reads no ignore file."""
        from rldoctor.engine import muting

        if registry is None:
            from rldoctor.engine.registry import load_registry

            registry = load_registry()
        only, skip, params = list(only), list(skip), dict(params or {})
        validate_codes("--only", only, registry)
        validate_codes("--skip", skip, registry)
        validate_params(params, registry)
        only, rules = rule_selection(only, registry)
        selected = registry.select(only, skip, lint=lint, preflight=preflight)
        if codes is not None:
            wanted = set(codes)
            selected = [c for c in selected if c.code in wanted]
        mutes, mute_notes = muting.load(ignores, config, registry) if read_mutes else ([], [])
        return cls(registry, selected, params, mutes, mute_notes, timeout_s, smoke_figures,
                   rules=rules)

    @classmethod
    def every_check(cls, registry: Registry | None = None) -> "Diagnosis":
        """Every registered check, default settings, no mutes: for tools and tests."""
        if registry is None:
            from rldoctor.engine.registry import load_registry

            registry = load_registry()
        return cls(registry, list(registry.checks))

    def run(self, snap, source: dict) -> Report:
        """The report of `snap`: the selected checks run over it, its parts built, mutes applied."""
        results = self._kept(run_checks(self.checks, snap, params=self.params, timeout_s=self.timeout_s))
        report = Report(results=results, source=source,
                        notes=list(self.registry.problems) + list(snap.get("notes") or []))
        self._parts(report, snap, results)
        self._mute(report)
        from rldoctor.report.basis import build as basis

        report.basis = basis(snap, results, report.active_findings)
        return report

    def lint(self, paths: list[str]) -> Linted:
        """`rldoctor lint PATH ...`: read the sources, run the selected checks, apply the mutes."""
        from rldoctor.lint.document import lint_document
        from rldoctor.snapshot import validate

        doc = lint_document(paths)
        results = self._kept(run_checks(self.checks, validate(doc, "lint"), params=self.params,
                                        timeout_s=self.timeout_s))
        problems = [f for f in doc["lint"]["files"] if f.get("status") != "ok"]
        notes = list(self.registry.problems)
        from rldoctor.lint.ray_table import note

        notes += [n for n in [note(doc["lint"].get("ray_build") or {})] if n]
        notes += list(doc.get("notes") or [])  # what a walked folder held that was not read
        notes += [f"not followed: {f['path']}: {n}" for f in doc["lint"]["files"]
                  for n in (f.get("python") or {}).get("notes") or ()]
        for p in problems:
            where = p["path"] + (f":{p['line']}" if p.get("line") else "")
            notes.append(f"not linted: {where}: {p['message']}")
        source = dict(doc["source"])
        source["linted"] = len(doc["lint"]["files"]) - len(problems)
        report = Report(results=results, source=source, notes=notes, not_linted=problems)
        self._mute(report)
        return Linted(report, problems, doc)

    def _kept(self, results):
        """The results with only the rules --only CODE/RULE named, for checks named so."""
        for result in results:
            kept = self.rules.get(result.code)
            if kept is not None and result.status in ("fail", "warn", "info", "ok"):
                dropped = len(result.findings)
                result.findings = [f for f in result.findings if f.rule in kept]
                dropped -= len(result.findings)
                result.status = status_of(result.findings)
                result.detail = "; ".join(
                    [f"{len(result.findings)} finding(s) of {', '.join(sorted(kept))}"
                     + (f" ({dropped} of its other rules left out by --only)" if dropped else "")]
                    + [n.message for n in result.notes])
        return results

    def _parts(self, report: Report, snap, results) -> None:
        from rldoctor.report import sections

        for declared in sections.found():  # the Training part, and every section declared there
            value = declared.build(snap, report)
            if value is not None:
                report.parts[declared.name] = value
        if snap.has("nodes") or snap.collector("nodes"):  # a cluster was examined, or tried
            from rldoctor.report.overview import build

            zone_label = (self.params.get("RLD203") or {}).get("zone_label")
            report.cluster = build(snap, report.findings, zone_label)
        if any(snap.has(s) for s in ("jobs", "nodes", "actors", "workers", "events")):
            from rldoctor.report.timeline import build as timeline, logs_end

            report.timeline = timeline(snap, self.window_s)
            end = logs_end(snap)
            if end is not None:  # ages count from now; the logs' own end is stated
                report.source = {**report.source, "logs_end": end}
        from rldoctor.report.skipped import fold

        report.folded_skips = fold(results, self.checks, snap)
        if self.smoke_figures:
            from rldoctor.report.smoke import figures

            report.figures = figures(snap.data)
        if snap.has("bundle"):
            from rldoctor.bundle.evidence import point_to_bundle

            point_to_bundle(report, snap)

    def _mute(self, report: Report) -> None:
        if self.mutes or self.mute_notes:
            from rldoctor.engine import muting

            muting.apply(report, self.mutes, self.mute_notes)
