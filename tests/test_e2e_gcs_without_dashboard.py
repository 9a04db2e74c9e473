"""End to end: the GCS address of a cluster of another Ray release that has no dashboard.

A one-node cluster started from the cached venv of Ray 2.55.0 (tests/ray_venvs.py) with
`--include-dashboard=false`. rldoctor (the pinned Ray 2.60.0) reads the versions the head
recorded in the GCS before `ray.init`, sees that Ray would refuse it as a driver, finds no
dashboard to go through, and says so in one line that names both versions and what to do
instead: exit 3, no traceback, no RLD102 report about the machine rldoctor runs on, and
none of Ray's waiting (its handshake, or 60 s for a local raylet).
"""

from __future__ import annotations

import os
import platform

import pytest

from conftest import run_rldoctor
from localcluster import LocalCluster, NodeSpec
from ray_venvs import ray_venv

pytestmark = pytest.mark.cluster

CLUSTER_RAY = "2.55.0"


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster([NodeSpec()], dashboard=False, token_auth=False,
                      bin_dir=ray_venv(CLUSTER_RAY), log_monitor=False) as made:
        yield made


def client_env(cluster) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(cluster.home)
    return env


@pytest.mark.parametrize("command", [("check",), ("collect", "--output", "snap.json")])
def test_another_ray_without_a_dashboard_is_one_line_naming_both_versions(cluster, command,
                                                                          tmp_path):
    args = [a if a != "snap.json" else str(tmp_path / a) for a in command]
    result = run_rldoctor(*args, "--address", cluster.address, env=client_env(cluster),
                          timeout=60)
    lines = result.stderr.strip().splitlines()
    assert result.code == 3, result
    assert len(lines) == 1 and "Traceback" not in result.stderr, result
    line = lines[0]
    python = platform.python_version()
    assert f"runs Ray {CLUSTER_RAY} with Python {python}" in line, line
    assert f"rldoctor runs Ray 2.60.0 with Python {python}" in line, line
    assert "no dashboard" in line and "--address http://" in line, line
    assert result.seconds < 15, result
    assert result.stdout.strip() == "", result  # no partial report, no RLD102
    assert not (tmp_path / "snap.json").exists()
