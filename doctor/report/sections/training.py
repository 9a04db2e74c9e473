"""The Training part of a report: the RLlib trainings found on the cluster (built by
rldoctor.report.training), a block in the table and Markdown reports, the JSON report's
top-level `training` list."""

from __future__ import annotations

from rldoctor.report.render.training import block_lines, headline, member_line
from rldoctor.report.sections import report_section
from rldoctor.report.training import not_fine, summarize

_NONE = "none: no RLlib env runner, learner or algorithm actor on the cluster"


def table_lines(trainings: list[dict]) -> list[str]:
    return [f"Training ({len(trainings)} found):"] + \
        ["  " + line for line in block_lines(trainings) or [_NONE]]


def markdown_lines(trainings: list[dict], cell) -> list[str]:
    out = [f"### Training ({len(trainings)} found)", ""]
    if not trainings:
        out.append("No RLlib env runner, learner or algorithm actor on the cluster.")
    for t in trainings:
        out.append(f"- {cell(headline(t))}")
        out += [f"  - {cell(member_line(m))}" for m in t.get("runners", []) + t.get("learner_actors", [])
                if not_fine(m, t.get("long_call_s"))]
    return out


@report_section("training", table=table_lines, markdown=markdown_lines, order=20)
def build(snap, report) -> list[dict] | None:
    """The trainings of a snapshot that has a `training` section, with the findings about them."""
    return summarize(snap["training"], report.findings) if snap.has("training") else None
