"""Markdown report that pastes cleanly into an incident ticket."""

from __future__ import annotations

import json

from rldoctor.model import Report
from rldoctor.report.render.text import (checks_line, folded_codes, mute_text, shown_checks,
                                         source_line, status_word, summary_line, timeline_headline)
from rldoctor.report.timeline import when


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _finding(f) -> list[str]:
    out = [f"#### {f.severity.label.upper()} {f.label} `{f.subject}`" + (" (muted)" if f.muted else "")]
    if f.muted:
        out += ["", f"**Muted:** {_cell(mute_text(f))}"]
    out += ["", _cell(f.message), ""]
    if f.fix:
        out += [f"**Fix:** {_cell(f.fix)}", ""]
    if f.evidence:
        out += ["<details><summary>evidence</summary>", "", "```json",
                json.dumps(f.evidence, indent=2, default=str), "```", "", "</details>", ""]
    return out


def render_markdown(report: Report) -> str:
    out = [f"## rldoctor report: {status_word(report)}", "",
           f"Source: `{source_line(report).strip()}`  ", summary_line(report), ""]
    if report.cluster is not None:
        from rldoctor.report.render.overview import markdown_lines

        out += ["### Cluster", ""] + markdown_lines(report.cluster, _cell) + [""]
    if report.training is not None:
        from rldoctor.report.render.training import headline, member_line
        from rldoctor.report.training import not_fine

        out += [f"### Training ({len(report.training)} found)", ""]
        if not report.training:
            out.append("No RLlib env runner, learner or algorithm actor on the cluster.")
        for t in report.training:
            out.append(f"- {_cell(headline(t))}")
            out += [f"  - {_cell(member_line(m))}"
                    for m in t.get("runners", []) + t.get("learner_actors", []) if not_fine(m, t.get("long_call_s"))]
        out.append("")
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
            out += [f"| {_cell(when(e))} | {e['kind']} | `{_cell(e['subject'])}` | {_cell(e['message'])} |"
                    for e in report.timeline]
            out.append("")
    out += ["### Checks", "", _cell(checks_line(report)), ""]
    folded = folded_codes(report)
    rows = [r for r in shown_checks(report) if r.code not in folded]
    if rows:
        out += ["| code | check | status | time | detail |", "|---|---|---|---|---|"]
        for r in rows:
            out.append(f"| {r.code} | {r.name} | {r.status} | {r.duration_s:.2f}s | {_cell(r.detail)} |")
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
