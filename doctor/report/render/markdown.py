"""Markdown report that pastes cleanly into an incident ticket.

Every text of the report may quote what the cluster wrote (a log line, an exception, a job's
command line), so none of it is pasted raw: `_cell` escapes what Markdown or HTML would act
on (`<`, `>`, `[`, `]`, backticks, backslashes, `|`), so a log line cannot close
`<details>`, open an HTML comment or add a `javascript:` link in the ticket; `_code` puts a
text in a code span fenced by more backticks than it holds; the evidence's JSON sits in a
fence longer than any run of backticks in it.
"""

from __future__ import annotations

import json
import re

from rldoctor.model import Report
from rldoctor.redact import redact
from rldoctor.report import sections
from rldoctor.report.render.formats import output_format
from rldoctor.report.render.text import (checks_line, folded_codes, mute_text, shown_checks,
                                         input_lines, source_line, status_word,
                                         summary_line, timeline_headline)
from rldoctor.report.timeline import when


_ACTIVE = re.compile(r"([\\`<>\[\]|])")


def _cell(text: str) -> str:
    """`text` redacted (before the escapes could hide a secret's shape), on one line, inert:
    Markdown's and HTML's active characters escaped."""
    return _ACTIVE.sub(r"\\\1", redact(str(text)).replace("\r", " ").replace("\n", " "))


def _fence(text: str, least: int = 1) -> str:
    """Backticks enough to fence `text`: one more than its longest run of them."""
    runs = re.findall(r"`+", text)
    return "`" * max(least, 1 + max((len(r) for r in runs), default=0))


def _code(text: str, table: bool = False) -> str:
    """`text` as a code span (shown as it is, never acted on), on one line; in a table
    row, `|` escaped too (a table splits its cells before it reads code spans)."""
    text = redact(str(text)).replace("\r", " ").replace("\n", " ")
    if table:
        text = text.replace("|", "\\|")
    fence = _fence(text)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _finding(f) -> list[str]:
    out = [f"#### {f.severity.label.upper()} {f.label} {_code(f.subject)}" + (" (muted)" if f.muted else "")]
    if f.muted:
        out += ["", f"**Muted:** {_cell(mute_text(f))}"]
    out += ["", _cell(f.message), ""]
    if f.fix:
        out += [f"**Fix:** {_cell(f.fix)}", ""]
    if f.evidence:
        evidence = redact(json.dumps(f.evidence, indent=2, default=str))  # as --format json has it
        fence = _fence(evidence, least=3)
        out += ["<details><summary>evidence</summary>", "", f"{fence}json", evidence, fence, "",
                "</details>", ""]
    return out


@output_format("markdown", order=20)
def render_markdown(report: Report) -> str:
    out = [f"## rldoctor report: {status_word(report)}", "",
           f"Source: {_code(source_line(report).strip())}  ", _cell(summary_line(report)),
           *([""] + [f"- {_cell(line)}" for line in input_lines(report)] if input_lines(report) else []),
           ""]
    if report.cluster is not None:
        from rldoctor.report.render.overview import markdown_lines

        out += ["### Cluster", ""] + markdown_lines(report.cluster, _cell) + [""]
    for declared in sections.found():  # the Training part and every declared section
        if report.parts.get(declared.name) is not None:
            out += declared.markdown(report.parts[declared.name], _cell) + [""]
    findings = report.active_findings
    out += [f"### Findings ({len(findings)})", ""]
    if not findings:
        out += ["No findings." if not report.muted_findings else "No findings that are not muted.", ""]
    for f in findings:
        out += _finding(f)
    muted = report.muted_findings
    if muted:
        out += [f"### Muted ({len(muted)})", "",
                "Accepted findings: kept here, counted apart, left out of the status and --fail-on.", ""]
    for f in muted:
        out += _finding(f)
    if report.timeline is not None:
        out += ["### Timeline", "", _cell(timeline_headline(report)), ""]
        if report.timeline:
            out += ["| time | kind | subject | what |", "|---|---|---|---|"]
            out += [f"| {_cell(when(e))} | {_cell(e['kind'])} | {_code(e['subject'], table=True)} | {_cell(e['message'])} |"
                    for e in report.timeline]
            out.append("")
    out += ["### Checks", "", _cell(checks_line(report)), ""]
    folded = folded_codes(report)
    rows = [r for r in shown_checks(report) if r.code not in folded]
    if rows:
        out += ["| code | check | status | time | detail |", "|---|---|---|---|---|"]
        for r in rows:
            out.append(f"| {_cell(r.code)} | {_cell(r.name)} | {r.status} | {r.duration_s:.2f}s | {_cell(r.detail)} |")
    if report.folded_skips:
        out += [""] + [_cell(group["line"]) + "  " for group in report.folded_skips]
    out.append("")
    if report.notes:
        out += ["### Notes", ""] + [f"- {_cell(n)}" for n in report.notes]
    text = "\n".join(out).rstrip() + "\n"
    if report.figures:  # a smoke run's figures close its report
        from rldoctor.report.smoke import render_markdown

        text += render_markdown(report.figures)
    return text
