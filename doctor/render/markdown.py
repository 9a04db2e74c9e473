"""Markdown report that pastes cleanly into an incident ticket."""

from __future__ import annotations

import json

from rldoctor.model import Report
from rldoctor.render.text import source_line, summary_line


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    out = [f"## rldoctor report: {report.status.upper()}", "",
           f"Source: `{source_line(report).strip()}`  ", summary_line(report), ""]
    if report.training is not None:
        from rldoctor.training_view import headline, member_line, not_fine

        out += [f"### Training ({len(report.training)} found)", ""]
        if not report.training:
            out.append("No RLlib env runner, learner or algorithm actor on the cluster.")
        for t in report.training:
            out.append(f"- {_cell(headline(t))}")
            out += [f"  - {_cell(member_line(m))}"
                    for m in t.get("runners", []) + t.get("learner_actors", []) if not_fine(m)]
        out.append("")
    out += ["| code | check | status | time | detail |", "|---|---|---|---|---|"]
    for r in report.results:
        out.append(f"| {r.code} | {r.name} | {r.status} | {r.duration_s:.2f}s | {_cell(r.detail)} |")
    findings = report.findings
    out += ["", f"### Findings ({len(findings)})", ""]
    if not findings:
        out.append("No findings.")
    for f in findings:
        out.append(f"#### {f.severity.label.upper()} {f.code} `{f.subject}`")
        out += ["", _cell(f.message), ""]
        if f.fix:
            out += [f"**Fix:** {_cell(f.fix)}", ""]
        if f.evidence:
            out += ["<details><summary>evidence</summary>", "", "```json",
                    json.dumps(f.evidence, indent=2, default=str), "```", "", "</details>", ""]
    if report.notes:
        out += ["### Notes", ""] + [f"- {_cell(n)}" for n in report.notes]
    return "\n".join(out).rstrip() + "\n"
