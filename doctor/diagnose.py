"""From a snapshot to a report: the checks run, the report assembled.

Shared by `rldoctor check` (live, from a file or a bundle) and by the incident bundle,
which writes the report of the run it collected. Imports neither ray nor torch.
"""

from __future__ import annotations

from rldoctor.model import Report
from rldoctor.runner import DEFAULT_CHECK_TIMEOUT_S, run_checks


def diagnose(snap, source: dict, checks=None, params: dict | None = None,
             timeout_s: float = DEFAULT_CHECK_TIMEOUT_S, registry=None,
             window_s: float | None = None) -> Report:
    """Run `checks` (default: every registered check) over `snap` and build the Report.

    When the snapshot came from an incident bundle, findings point at its logs and stacks.
    """
    if registry is None:
        from rldoctor.registry import load_registry

        registry = load_registry()
    selected = registry.checks if checks is None else checks
    results = run_checks(selected, snap, params=params, timeout_s=timeout_s)
    report = Report(results=results, source=source,
                    notes=list(registry.problems) + list(snap.get("notes") or []))
    if snap.has("training"):
        from rldoctor.report.training import summarize

        report.training = summarize(snap["training"], report.findings)
    if snap.has("nodes") or snap.collector("nodes"):  # a cluster was examined, or tried
        from rldoctor.report.overview import build

        zone_label = ((params or {}).get("RLD203") or {}).get("zone_label")
        report.cluster = build(snap, report.findings, zone_label)
    if any(snap.has(s) for s in ("jobs", "nodes", "actors", "workers", "events")):
        from rldoctor.report.timeline import build as timeline

        report.timeline = timeline(snap, window_s)
    from rldoctor.report.skipped import fold

    report.folded_skips = fold(results, selected, snap)
    if snap.has("bundle"):
        from rldoctor.bundle.evidence import point_to_bundle

        point_to_bundle(report, snap)
    return report
