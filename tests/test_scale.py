"""Scale without a big cluster: 1,000 nodes and 20,000 actors through every check."""

from __future__ import annotations

import json
import time

import pytest

from conftest import run_rldoctor
from rldoctor.engine.registry import load_registry
from rldoctor.engine.runner import run_checks
from rldoctor.snapshot import Snapshot
from synthetic import big_snapshot


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_every_check_over_1000_nodes_and_20000_actors_in_under_2s():
    snap = Snapshot(big_snapshot(1000, 20000))
    checks = load_registry(include_plugins=False).checks
    started = time.perf_counter()
    results = run_checks(checks, snap)
    elapsed = time.perf_counter() - started
    assert elapsed < 2.0, [(r.code, round(r.duration_s, 3)) for r in results]
    assert [r for r in results if r.status == "error"] == []
    found = {f.code for r in results for f in r.findings}
    # the sick nodes and actors planted in the synthetic cluster are all found
    assert {"RLD101", "RLD102", "RLD103", "RLD201", "RLD202", "RLD401", "RLD402", "RLD403"} <= found
    dead = [f for r in results for f in r.findings if f.code == "RLD101"]
    assert len(dead) == 4  # nodes 7, 257, 507, 757
    restarted = [f for r in results for f in r.findings if f.code == "RLD401"]
    assert sum(1 for f in restarted if f.subject.startswith("actor:")) == 10  # 5 per class shown
    assert any("more" in f.message for f in restarted)  # and the rest summarised


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_cli_from_a_20000_actor_snapshot(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(big_snapshot(1000, 20000)))
    result = run_rldoctor("check", "--from", str(path), "--format", "json", "--output",
                          str(tmp_path / "report.json"))
    assert result.code == 1, result
    assert result.seconds < 5, result  # interpreter start, 17 MB of JSON, every check
