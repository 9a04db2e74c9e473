"""Small text helpers shared by the human-facing renderers."""

from __future__ import annotations

from rldoctor.model import Report


def source_line(report: Report) -> str:
    src = report.source
    where = src.get("address") or src.get("file") or "?"
    kind = "bundle" if src.get("form") == "bundle" else src.get("kind", "")
    when = src.get("created_at", "")
    return f"{kind} {where}" + (f" at {when}" if when else "")


def input_lines(report: Report) -> list[str]:
    """What a report read from logs let it judge, and what not (source.input): its first lines."""
    given = (report.source or {}).get("input")
    if not isinstance(given, dict):
        return []
    names = ", ".join(given.get("file_names") or [])
    out = [f"input: {given.get('kind')}, {given.get('files')} file(s) read"
           + (f" ({names})" if names and given.get("files", 0) <= 6 else "")
           + f"; {given.get('ray_lines_known', 0)} line(s) Ray's catalogue knows"]
    if given.get("judged"):
        out.append("judged: " + "; ".join(given["judged"]))
    if given.get("not_judged"):
        out.append("not judged: " + "; ".join(given["not_judged"]))
    if report.status == "ok":
        out.append("OK here means: the logs read show nothing wrong, not that the cluster was "
                   "healthy")
    return out


def status_word(report: Report) -> str:
    """OK, WARN, FAIL, ERROR, or NOT JUDGED when the input held nothing to judge."""
    return "NOT JUDGED" if not report.judged else report.status.upper()


def summary_line(report: Report) -> str:
    if not report.judged:
        return (f"status: NOT JUDGED  (nothing to judge: {report.basis['why_not']}; "
                f"{len(report.results)} checks, {report.basis['checks_skipped']} skipped)")
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


def shown_checks(report: Report) -> list:
    """The check rows the table and Markdown show: those that are not OK (all with --verbose)."""
    if report.verbose:
        return list(report.results)
    return [r for r in report.results if r.status != "ok"]


def checks_line(report: Report) -> str:
    """`Checks: 32 run: 24 ok, 1 warn, 7 skipped` (and how to see every row)."""
    order = ("fail", "warn", "info", "error", "ok", "skipped")
    counts: dict[str, int] = {}
    for r in report.results:
        counts[r.status] = counts.get(r.status, 0) + 1
    parts = [f"{counts[s]} {s}" for s in order if counts.get(s)]
    parts += [f"{n} {s}" for s, n in sorted(counts.items()) if s not in order]
    hint = "" if report.verbose else "; the OK ones with --verbose"
    return f"Checks: {len(report.results)} run: {', '.join(parts) or 'none'}{hint}"


def timeline_headline(report: Report) -> str:
    events = report.timeline or []
    end = (report.source or {}).get("logs_end")
    ends = f"; the logs end at {end['time']} ({end['age']})" if end else ""
    if not events:
        return f"Timeline: no node, worker, actor or job event recorded in the window{ends}"
    ages = ", ages from now" if end else ""
    return (f"Timeline ({len(events)} event(s), oldest first; the cluster's clock, UTC{ages}{ends}):")
