"""Terminal report: a table of checks, then each finding with its fix under it."""

from __future__ import annotations

import textwrap

from rldoctor.model import Report
from rldoctor.report.render.text import folded_codes, mute_text, source_line, summary_line

_WIDTH = 100


def _wrap(text: str, indent: str) -> str:
    return textwrap.fill(text, width=_WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False)


def render_table(report: Report) -> str:
    out = [f"rldoctor report for {source_line(report)}", summary_line(report), ""]
    if report.cluster is not None:
        from rldoctor.report.render.overview import table_lines

        out += table_lines(report.cluster) + [""]
    if report.training is not None:
        from rldoctor.report.render.training import block_lines

        lines = block_lines(report.training)
        out += [f"Training ({len(report.training)} found):"] + \
            ["  " + line for line in lines or ["none: no RLlib env runner, learner or algorithm "
                                               "actor on the cluster"]] + [""]
    from tabulate import tabulate  # imported on use: `rldoctor --help` does not pay for it

    folded = folded_codes(report)
    rows = [[r.code, r.name, r.status.upper(), f"{r.duration_s:.2f}s",
             textwrap.shorten(r.detail, 70, placeholder=" ...")]
            for r in report.results if r.code not in folded]
    out.append(tabulate(rows, headers=["code", "check", "status", "time", "detail"],
                        tablefmt="simple"))
    out += [_wrap(group["line"], "") for group in report.folded_skips or []]
    findings = report.active_findings
    if findings:
        out += ["", f"Findings ({len(findings)}):"]
        for f in findings:
            out.append("")
            out.append(f"{f.severity.label.upper():<5} {f.code}  {f.subject}")
            out.append(_wrap(f.message, "      "))
            if f.fix:
                out.append(_wrap("fix: " + f.fix, "      "))
    else:
        out += ["", "No findings." if not report.muted_findings else "No findings that are not muted."]
    muted = report.muted_findings
    if muted:
        out += ["", f"Muted ({len(muted)}):"]
        out += [f"{f.severity.label.upper():<5} {f.code}  {f.subject}: "
                f"{textwrap.shorten(f.message, 80, placeholder=' ...')} -- muted: {mute_text(f)}"
                for f in muted]
    for note in report.notes:
        out.append(_wrap("note: " + note, ""))
    return "\n".join(out) + "\n"
