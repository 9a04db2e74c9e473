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
    if c.get("muted"):
        parts.append(f"{c['muted']} muted")
    checks = f"{len(report.results)} checks"
    extra = [f"{c[f'checks_{s}']} {s}" for s in ("error", "skipped") if c[f"checks_{s}"]]
    return f"status: {report.status.upper()}  ({', '.join(parts)}; {checks}" + \
        (f", {', '.join(extra)}" if extra else "") + ")"


def mute_text(f) -> str:
    """`<reason> (until 2027-01-31; rldoctor.toml:3)`: why a finding is muted, and by what."""
    m = f.muted or {}
    where = "; ".join(x for x in (f"until {m['expires']}" if m.get("expires") else "",
                                  m.get("source") or "") if x)
    return str(m.get("reason", "")) + (f" ({where})" if where else "")


def folded_codes(report: Report) -> set:
    """Codes of the skipped checks a run without a cluster shows as one line per cause."""
    return {code for group in report.folded_skips or [] for code in group["codes"]}
