"""End to end: restarts, crashes and memory kills on a real cluster give RLD401-403.

Node 2 runs with RAY_memory_usage_threshold=0.02, so Ray's own memory monitor kills
what runs there; everything else is pinned to node 1 with label selectors.
"""

from __future__ import annotations

import pytest

from conftest import wait_for_findings
from faults import (actor_that_crashes_three_times, task_on_memory_starved_node,
                    worker_killed_with_sigkill)
from localcluster import LocalCluster, NodeSpec

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def faulty_cluster():
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    specs[2].env["RAY_memory_usage_threshold"] = "0.02"
    with LocalCluster(specs, log_monitor=False) as cluster:
        yield cluster


def test_actor_crashing_three_times_gives_rld401_fail(faulty_cluster):
    node1 = faulty_cluster.nodes[1].node_id
    actor_id = actor_that_crashes_three_times(faulty_cluster, node1)
    result, found = wait_for_findings(faulty_cluster, "RLD401", lambda f: f["subject"] == f"actor:{actor_id}")
    assert found, result
    finding = found[0]
    assert finding["severity"] == "fail"
    assert finding["evidence"]["num_restarts"] == 3
    assert finding["evidence"]["node_id"] == node1
    assert finding["evidence"]["class_name"] == "EnvSimulator"
    assert finding["evidence"]["last_death"]["exit_type"] == "SYSTEM_ERROR"
    assert "crash loop" in finding["message"] and "'flaky-sim'" in finding["message"]
    assert "max_restarts" in finding["fix"]


def test_worker_killed_with_sigkill_gives_rld403(faulty_cluster):
    node1 = faulty_cluster.nodes[1].node_id
    pid = worker_killed_with_sigkill(faulty_cluster, node1)
    result, found = wait_for_findings(faulty_cluster, "RLD403",
                              lambda f: pid in f["evidence"]["pids"])
    assert found, result
    finding = found[0]
    assert finding["subject"] == f"node:{node1}"
    assert "SIGKILL" in finding["message"]
    assert "dmesg" in finding["fix"] and "ray logs worker-" in finding["fix"]
    # A SIGKILL is not a memory kill by Ray: no RLD402 on node 1.
    assert not [f for f in result.findings("RLD402") if f["subject"] == f"node:{node1}"]


def test_task_killed_by_rays_memory_monitor_gives_rld402(faulty_cluster):
    node2 = faulty_cluster.nodes[2].node_id
    assert task_on_memory_starved_node(faulty_cluster, node2) == "OutOfMemoryError"
    result, found = wait_for_findings(faulty_cluster, "RLD402", lambda f: f["subject"] == f"node:{node2}")
    assert found, result
    finding = found[0]
    assert finding["severity"] == "fail"
    assert finding["evidence"]["kill_threshold"] == pytest.approx(0.02)
    assert finding["evidence"]["memory_used_gb"] > 0
    assert any("hog" in t for t in finding["evidence"]["killed_tasks"])
    assert "object_store_memory" in finding["fix"] and "num_env_runners" in finding["fix"]
    # Memory kills on node 2 are not blamed on the other nodes.
    assert {f["subject"] for f in result.findings("RLD402")} == {f"node:{node2}"}
