"""`rldoctor lint` on public files of projects it was not built against (fixtures/lint/public/).

Each fixture is a public file (its repository, path and commit in the file's first line and in
its .expected.json), with line-exact expectations written from reading the file against what
Ray 2.60 does, before the rules that find them were written. Recall over all of them must be at
least 90 %, and the files expected clean must give no finding at all.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from conftest import lint_paths

PUBLIC = Path(__file__).resolve().parent.parent / "fixtures" / "lint" / "public"
EXPECTED = sorted(PUBLIC.glob("*/*.expected.json"))


def _run(expected_path: Path):
    expected = json.loads(expected_path.read_text())
    report, problems, _ = lint_paths([str(expected_path.parent / expected["file"])])
    assert problems == [] and report.errored == []
    got = collections.Counter((f.code, f.severity.label, f.location["line"]) for f in report.findings)
    want = collections.Counter((e["code"], e["severity"], e["line"]) for e in expected["findings"])
    return expected, got, want


def test_the_public_fixtures_name_their_source_and_span_projects_and_kinds():
    assert len(EXPECTED) >= 20
    repos = set()
    kinds = set()
    yaml_kinds = set()
    for path in EXPECTED:
        expected = json.loads(path.read_text())
        source = expected["source"]
        assert len(source["commit"]) == 40 and source["repo"] and source["path"]
        first = (path.parent / expected["file"]).read_text().splitlines()[0]
        assert source["repo"] in first and source["commit"] in first
        repos.add(source["repo"])
        kinds.add(Path(expected["file"]).suffix)
        text = (path.parent / expected["file"]).read_text()
        if expected["file"].endswith(".yaml"):
            yaml_kinds.add("kuberay" if "kind: RayCluster" in text else "launcher")
    assert len(repos) == len(EXPECTED) and {".py", ".yaml"} <= kinds
    assert yaml_kinds == {"kuberay", "launcher"}


def test_recall_on_public_files_and_no_finding_on_clean_ones():
    matched = wanted = 0
    extra = {}
    for path in EXPECTED:
        expected, got, want = _run(path)
        matched += sum((got & want).values())
        wanted += sum(want.values())
        if got - want:
            extra[expected["file"]] = dict(got - want)
        if not expected["findings"]:
            assert not got, (expected["file"], dict(got))
    recall = matched / wanted
    print(f"public lint fixtures: recall {matched}/{wanted} = {recall:.0%}, findings not expected: {extra}")
    assert recall >= 0.9, (recall, extra)


@pytest.mark.parametrize("expected_path", EXPECTED, ids=lambda p: p.parent.name)
def test_each_public_fixture(expected_path):
    """Per file, so that a change names the file it changed (recall per file is not required)."""
    expected, got, want = _run(expected_path)
    assert sum((got & want).values()) >= 0.5 * sum(want.values()), (dict(got), dict(want))
