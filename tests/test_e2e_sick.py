"""A doctor is run on sick clusters: a frozen raylet and a frozen dashboard, for real.

SIGSTOP freezes the process: the kernel still accepts TCP connections on its ports and
nothing answers (a gray failure). Every test resumes it with SIGCONT, even on failure.
"""

from __future__ import annotations

import pytest

from conftest import check_json
from localcluster import LocalCluster, NodeSpec, frozen

pytestmark = [pytest.mark.cluster,
              pytest.mark.serial]  # measures times (tests/suite_plan.py)
# Started before the module takes the lock: a cluster's start needs no quiet host
# (tests/suite_plan.py, serial_module_alone).
BEFORE_THE_LOCK = ("cluster",)


@pytest.fixture(scope="module")
def cluster():
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    with LocalCluster(specs, log_monitor=False) as c:
        yield c


@pytest.fixture(scope="module")
def healthy_s(cluster):
    """The wall time of a check on the healthy cluster (the better of two)."""
    times = []
    for _ in range(2):
        result = check_json(cluster)
        assert result.code == 0, result
        times.append(result.seconds)
    return min(times)


def test_a_frozen_raylet_is_named_not_answering_within_its_own_deadline(cluster, healthy_s):
    victim = cluster.nodes[2]
    with frozen(cluster.pids(2, "raylet")):
        result = check_json(cluster)
    assert result.code == 1, result
    [finding] = [f for f in result.findings("RLD101") if f["subject"] == f"node:{victim.node_id}"]
    assert finding["severity"] == "fail" and "is not answering" in finding["message"]
    assert finding["evidence"]["state"] == "not answering"
    assert "GetSystemConfig" in finding["message"]
    assert [f for f in result.findings("RLD101") if f["subject"] != f"node:{victim.node_id}"] == []
    # The healthy nodes were examined as usual.
    report = result.json()
    checks = {c["code"]: c["status"] for c in report["checks"]}
    assert checks["RLD201"] == "ok" and checks["RLD301"] == "ok" and checks["RLD303"] == "ok"
    assert result.seconds < max(2 * healthy_s, healthy_s + 4), (result.seconds, healthy_s)


def test_a_frozen_dashboard_is_named_and_the_rest_is_still_collected(cluster, healthy_s, tmp_path):
    with frozen(cluster.pids(0, "dashboard/dashboard.py")):
        result = check_json(cluster)
        snap = tmp_path / "snap.json"
        from conftest import run_rldoctor

        collected = run_rldoctor("collect", "--address", cluster.address, "--output", str(snap),
                                 env=cluster.client_env())
    assert result.code == 1, result
    [finding] = result.findings("RLD104")
    assert finding["subject"] == "dashboard" and finding["severity"] == "fail"
    assert "did not answer" in finding["message"]
    checks = {c["code"]: c for c in result.json()["checks"]}
    for code in ("RLD401", "RLD402", "RLD403", "RLD605"):
        assert checks[code]["status"] == "skipped" and "dashboard" in checks[code]["detail"]
    for code in ("RLD101", "RLD103", "RLD201", "RLD202", "RLD301", "RLD303"):
        assert checks[code]["status"] == "ok", checks[code]
    assert result.findings("RLD101") == []
    assert result.seconds < max(2 * healthy_s, healthy_s + 5), (result.seconds, healthy_s)
    import json

    assert collected.code == 0, collected
    doc = json.loads(snap.read_text())
    for section in ("nodes", "object_store", "versions", "hosts", "network", "demands"):
        assert doc["collectors"][section]["status"] == "ok", (section, doc["collectors"][section])
