"""The rendered reports of every fixture (table, Markdown, JSON) equal their golden files.

The fixture tests pin each finding's code, severity and subject; these pin the words and the
layout around them: a message, a fix, a renderer or a report part that changes shows up as a
failing comparison here and as a diff of fixtures/golden/ once regenerated on purpose
(`make golden`, tests/golden.py).
"""

from __future__ import annotations

import pytest

import golden

CASES = [(s, f) for s in golden.snapshots() for f in golden.FORMATS]


@pytest.fixture(scope="module")
def reports():
    return {}


def _report(reports, snapshot):
    if snapshot not in reports:
        reports[snapshot] = golden.report_of(snapshot)
    return reports[snapshot]


def test_every_fixture_has_a_golden_file_in_every_format_and_no_more():
    want = {golden.golden_path(s, f).name for s, f in CASES}
    have = {p.name for p in golden.GOLDEN.iterdir()}
    assert golden.snapshots() and want == have, (sorted(want - have), sorted(have - want))


@pytest.mark.parametrize("snapshot, fmt", CASES, ids=lambda v: getattr(v, "stem", v))
def test_the_rendered_report_is_the_golden_one(reports, snapshot, fmt):
    got = golden.render(snapshot, fmt, _report(reports, snapshot))
    want = golden.golden_path(snapshot, fmt).read_text(encoding="utf-8")
    assert got == want, (f"{golden.golden_path(snapshot, fmt).name} differs; if the change is "
                         "meant, run `make golden` and review the diff")


def test_a_changed_word_or_a_timing_is_caught_or_pinned(reports):
    """The comparison fails on a reworded fix; a check's timing never enters a golden file."""
    snapshot = golden.FIXTURES / "node-dead.json"
    report = golden.report_of(snapshot)
    finding = next(f for r in report.results for f in r.findings)
    finding.fix = finding.fix.replace(" ", "  ", 1)
    for fmt in golden.FORMATS:
        assert golden.render(snapshot, fmt, report) != golden.golden_path(snapshot, fmt).read_text()
    again = golden.report_of(snapshot)
    assert all(r.duration_s == 0.0 for r in again.results)
    assert golden.render(snapshot, "json", again) == golden.golden_path(snapshot, "json").read_text()
