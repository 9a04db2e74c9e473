"""Small text helpers shared by the human-facing renderers."""

from __future__ import annotations

from rldoctor.model import Report


def source_line(report: Report) -> str:
    src = report.source
    where = src.get("address") or src.get("file") or "?"
    kind = src.get("kind", "")
    when = src.get("created_at", "")
    return f"{kind} {where}" + (f" at {when}" if when else "")


def summary_line(report: Report) -> str:
    c = report.counts()
    parts = [f"{c['fail']} fail", f"{c['warn']} warn", f"{c['info']} info"]
    checks = f"{len(report.results)} checks"
    extra = [f"{c[f'checks_{s}']} {s}" for s in ("error", "skipped") if c[f"checks_{s}"]]
    return f"status: {report.status.upper()}  ({', '.join(parts)}; {checks}" + \
        (f", {', '.join(extra)}" if extra else "") + ")"
