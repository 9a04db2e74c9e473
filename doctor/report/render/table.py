"""Terminal report, in the order an on-call engineer reads it: the summary, the cluster, the
findings with the fix under each, the timeline, then the checks as one line of counts and the
rows that are not OK (every row with --verbose)."""

from __future__ import annotations

import textwrap

from rldoctor.model import Report
from rldoctor.redact import redact
from rldoctor.report import sections
from rldoctor.report.render.formats import output_format
from rldoctor.report.render.text import (checks_line, folded_codes, mute_text, shown_checks,
                                         input_lines, source_line, summary_line,
                                         timeline_headline)
from rldoctor.report.timeline import when

_WIDTH = 100


def _wrap(text: str, indent: str) -> str:
    """`text` redacted, then wrapped: a secret split over two lines would escape the redactor
    that reads the finished report line by line."""
    return textwrap.fill(redact(text), width=_WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False)


@output_format("table", aliases=("text",), lint=False, order=0)
def render_table(report: Report) -> str:
    out = [f"rldoctor report for {source_line(report)}", summary_line(report),
           *input_lines(report), ""]
    if report.cluster is not None:
        from rldoctor.report.render.overview import table_lines

        out += table_lines(report.cluster) + [""]
    for declared in sections.found():  # the Training part and every declared section
        if report.parts.get(declared.name) is not None:
            out += declared.table(report.parts[declared.name]) + [""]
    findings = report.active_findings
    if findings:
        out += [f"Findings ({len(findings)}):"]
        for f in findings:
            out.append("")
            out.append(f"{f.severity.label.upper():<5} {f.label}  {f.subject}")
            out.append(_wrap(f.message, "      "))
            if f.fix:
                out.append(_wrap("fix: " + f.fix, "      "))
    else:
        out += ["No findings." if not report.muted_findings else "No findings that are not muted."]
    muted = report.muted_findings
    if muted:
        out += ["", f"Muted ({len(muted)}):"]
        out += [f"{f.severity.label.upper():<5} {f.label}  {f.subject}: "
                f"{textwrap.shorten(redact(f.message), 80, placeholder=' ...')} -- muted: {mute_text(f)}"
                for f in muted]
    if report.timeline is not None:
        out += ["", timeline_headline(report)]
        out += [_wrap(f"{when(e)}  {e['kind']}  {e['subject']}: {e['message']}", "  ")
                for e in report.timeline]
    out += ["", checks_line(report)]
    from tabulate import tabulate  # imported on use: `rldoctor --help` does not pay for it

    folded = folded_codes(report)
    rows = [[r.code, r.name, r.status.upper(), f"{r.duration_s:.2f}s",
             textwrap.shorten(redact(r.detail), 70, placeholder=" ...")]
            for r in shown_checks(report) if r.code not in folded]
    if rows:
        out.append(tabulate(rows, headers=["code", "check", "status", "time", "detail"],
                            tablefmt="simple"))
    out += [_wrap(group["line"], "") for group in report.folded_skips or []]
    for note in report.notes:
        out.append(_wrap("note: " + note, ""))
    text = "\n".join(out) + "\n"
    if report.figures:  # a smoke run's figures open its report
        from rldoctor.report.smoke import render_text

        text = render_text(report.figures) + text
    return text
