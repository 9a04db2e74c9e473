"""The shipped alert rules (alerts/rldoctor.rules.yml), judged by Prometheus's own promtool.

`promtool check rules` validates them; `promtool test rules` runs their unit tests
(alerts/rldoctor.rules.test.yml: page after two rounds, ticket for warnings, the
finding's message in the annotation, resolved when the series goes). The metric names
the rules use must be ones `rldoctor watch` serves. `make test` installs promtool
(`make system-tools`).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import ROOT
from test_watch_units import fixture, scrape, watch_of

ALERTS = ROOT / "alerts"
PROMTOOL = shutil.which("promtool")

needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool missing: run `make system-tools`")


@needs_promtool
def test_promtool_accepts_the_rules():
    proc = subprocess.run([PROMTOOL, "check", "rules", str(ALERTS / "rldoctor.rules.yml")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 3 rules found" in proc.stdout


@needs_promtool
def test_promtool_unit_tests_of_the_rules_pass():
    proc = subprocess.run([PROMTOOL, "test", "rules", "rldoctor.rules.test.yml"], cwd=ALERTS,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_every_metric_the_rules_use_is_served_by_watch():
    rules = (ALERTS / "rldoctor.rules.yml").read_text()
    used = set(re.findall(r"\b(rldoctor_[a-z_]+)\b", rules))
    watch, metrics, _ = watch_of([fixture("training-hung")])
    watch.run(max_rounds=1)
    served = set(re.findall(r"^(rldoctor_[a-z_]+)", scrape(metrics), re.MULTILINE))
    assert used and used <= served, used - served
