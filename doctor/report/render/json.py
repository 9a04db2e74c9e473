"""JSON report, schema rldoctor.report/v1 (see docs/architecture.md, "Contracts")."""

from __future__ import annotations

import json
import math

from rldoctor import __version__
from rldoctor.model import Report
from rldoctor.report import sections
from rldoctor.report.render.formats import output_format

SCHEMA = "rldoctor.report/v1"


def report_document(report: Report) -> dict:
    doc = {
        "schema": SCHEMA,
        "rldoctor_version": __version__,
        "source": report.source,
        "summary": {"status": report.status, "counts": report.counts()},
        "checks": [r.to_json() for r in report.results],
        "findings": [f.to_json() for f in report.findings],
        "notes": report.notes,
    }
    if report.basis is not None:
        doc["verdict_basis"] = report.basis
    if report.figures:
        doc["figures"] = report.figures
    for declared in sections.found():  # the Training part and every declared section
        if report.parts.get(declared.name) is not None:
            doc[declared.name] = declared.to_json(report.parts[declared.name])
    if report.cluster is not None:
        doc["cluster"] = report.cluster
        if report.cluster.get("autoscaler") is not None:
            doc["autoscaler"] = report.cluster["autoscaler"]
    if report.timeline is not None:
        doc["timeline"] = [{k: e.get(k) for k in ("time", "epoch", "age", "kind", "subject", "message")}
                           for e in report.timeline]
    return doc


def finite(value):
    """`value` with every float that JSON cannot hold (NaN, Infinity) written as its name, a
    string, so the report is strict JSON any parser reads (a NaN loss stays visible)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


@output_format("json", order=10)
def render_json(report: Report) -> str:
    return json.dumps(finite(report_document(report)), indent=2, default=str,
                      allow_nan=False) + "\n"
