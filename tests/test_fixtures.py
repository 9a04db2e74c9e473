"""Every check over every recorded fixture, compared with the findings expected of it."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from rldoctor.engine.registry import load_registry
from rldoctor.engine.runner import run_checks
from rldoctor.snapshot import load

SNAPSHOTS = sorted(p for p in FIXTURES.glob("*.json") if not p.name.endswith(".expected.json"))


def test_every_fixture_has_expectations():
    assert SNAPSHOTS, "no fixtures found"
    for snap in SNAPSHOTS:
        assert snap.with_name(snap.stem + ".expected.json").exists(), snap


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.stem)
def test_fixture_gives_exactly_the_expected_findings(path):
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    registry = load_registry(include_plugins=False)
    results = run_checks(registry.checks, load(path))
    assert [r for r in results if r.status == "error"] == []
    got = sorted((f.code, f.severity.label, f.subject) for r in results for f in r.findings)
    want = sorted((f["code"], f["severity"], f["subject"]) for f in expected["findings"])
    assert got == want
    for result in results:
        for finding in result.findings:
            assert finding.message and finding.fix, finding
