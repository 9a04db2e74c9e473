"""End to end: RLD204 on a cluster whose nodes are separate hosts, with real firewall rules.

Three hosts made of network namespaces joined by a bridge (tests/netns.py), one Ray node
on each; the rldoctor CLI runs on the head's host, as an on-call engineer would. Rules are
iptables in the target node's namespace, dropping new TCP connections (SYNs) to one Ray
port from some hosts or all: the cluster stays up, new connections fail. Every test removes
its rules, also when it fails; the namespaces go with the module. The last test adds a fourth
node, on a host of its own, registered with an address the others have no route to.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from conftest import check_json, run_rldoctor
from localcluster import LocalCluster, NodeSpec
from netns import Hosts, missing_tools

pytestmark = [pytest.mark.cluster,
              pytest.mark.serial]  # measures times (tests/suite_plan.py)
# Started before the module takes the lock: a cluster's start needs no quiet host
# (tests/suite_plan.py, serial_module_alone).
BEFORE_THE_LOCK = ("cluster",)


@pytest.fixture(scope="module")
def hosts():
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    assert missing_tools() is None, missing_tools()
    with Hosts(4) as made:  # host 3 stays empty until the last test
        yield made


@pytest.fixture(scope="module")
def cluster(hosts):
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}, ip=hosts.ip(i),
                      command_prefix=hosts.prefix(i)) for i in range(3)]
    with LocalCluster(specs, log_monitor=False) as made:
        yield made


@pytest.fixture
def rules(hosts):
    yield hosts
    hosts.unblock_all()


@pytest.fixture(scope="module")
def healthy(cluster, tmp_path_factory):
    """(the better of two healthy checks, its wall seconds, a snapshot of the healthy cluster)."""
    results = [check_json(cluster) for _ in range(2)]
    snap = tmp_path_factory.mktemp("ports") / "snap.json"
    collected = run_rldoctor("collect", "--address", cluster.address, "--output", str(snap),
                             env=cluster.client_env(), prefix=cluster.client_prefix)
    assert collected.code == 0, collected
    best = min(results, key=lambda r: r.seconds)
    return best, best.seconds, json.loads(snap.read_text())


def port_of(doc: dict, cluster: LocalCluster, index: int, name: str) -> int:
    [node] = [n for n in doc["nodes"] if n["node_id"] == cluster.nodes[index].node_id]
    return node["ports"][name]


def only_finding(result, code: str) -> dict:
    found = result.findings(code)
    assert len(found) == 1, result
    return found[0]


def test_a_healthy_multi_host_cluster_gives_no_finding(cluster, healthy):
    result, _, doc = healthy
    assert result.code == 0 and result.findings() == [], result
    checks = {c["code"]: c["status"] for c in result.json()["checks"]}
    for code in ("RLD101", "RLD201", "RLD202", "RLD203", "RLD204"):
        assert checks[code] == "ok", (code, checks[code])
    reach = doc["reach"]
    ids = {n.node_id for n in cluster.nodes}
    # Every node tried every other node's ports, the GCS and a worker port included.
    assert set(reach["sources"]) == ids and reach["failures"] == []
    assert reach["sampling"]["mode"] == "all pairs"
    head = cluster.nodes[0].node_id
    assert reach["endpoints"][head]["gcs"][1] == cluster.gcs_port
    for node_id in ids:
        assert reach["tried"][node_id]["worker"] == 2
        assert reach["tried"][node_id]["object_manager"] == 2
        assert reach["open"][node_id] == sum(reach["tried"][node_id].values())
    assert {n["ip"] for n in doc["nodes"]} == {"10.231.27.10", "10.231.27.11", "10.231.27.12"}
    assert doc["network"]["skipped_transfer"] == {}


def test_an_object_manager_port_dropped_from_one_peer_names_that_pair_and_port(
        cluster, healthy, rules):
    _, _, doc = healthy
    port = port_of(doc, cluster, 2, "object_manager")
    rules.block(2, port, sources=[1])
    result = check_json(cluster)
    finding = only_finding(result, "RLD204")
    worker1, worker2 = cluster.nodes[1].node_id, cluster.nodes[2].node_id
    assert finding["subject"] == f"node:{worker2}" and finding["severity"] == "warn"
    assert [(f["source"], f["target"], f["component"], f["port"], f["status"])
            for f in finding["evidence"]["failures"]] == [
        (worker1, worker2, "object_manager", port, "timeout")]
    assert f"port {port} of the raylet's object manager" in finding["message"]
    assert "10.231.27.11" in finding["message"] and "timed out" in finding["message"]
    assert "1 other node(s) reach it" in finding["message"]
    assert result.findings("RLD101") == [] and result.findings("RLD202") == []


def test_an_object_manager_port_dropped_from_every_host_is_a_fail_with_the_port_and_fix(
        cluster, healthy, rules):
    _, healthy_s, doc = healthy
    port = port_of(doc, cluster, 2, "object_manager")
    rules.block(2, port)
    result = check_json(cluster)
    assert result.code == 1, result
    finding = only_finding(result, "RLD204")
    assert finding["subject"] == f"node:{cluster.nodes[2].node_id}"
    assert finding["severity"] == "fail"
    assert {f["source"] for f in finding["evidence"]["failures"]} == {
        cluster.nodes[0].node_id, cluster.nodes[1].node_id}
    assert "from every node that tried (2)" in finding["message"]
    fix = finding["fix"]
    assert (f"Closed now: raylet's object manager port {port} on 10.231.27.12 from "
            "10.231.27.10, 10.231.27.11 (timeout)") in fix
    # The ports of this cluster, each with the flag that pins it.
    assert f"raylet's object manager {port} (--object-manager-port)" in fix
    assert f"GCS {cluster.gcs_port} (--port on the head)" in fix
    assert "worker ports 10002-19999 (--min-worker-port/--max-worker-port)" in fix
    # Not a busy node (RLD101), not a slow link (RLD202); the check pays the deadline once.
    assert result.findings("RLD101") == [] and result.findings("RLD202") == []
    assert result.seconds < 2 * healthy_s + 5, (result.seconds, healthy_s)


def test_a_node_manager_port_dropped_from_the_head_is_a_closed_port_not_a_frozen_raylet(
        cluster, healthy, rules):
    _, healthy_s, doc = healthy
    port = port_of(doc, cluster, 2, "node_manager")
    rules.block(2, port, sources=[0])
    result = check_json(cluster)
    assert result.code == 1, result
    finding = only_finding(result, "RLD204")
    assert finding["subject"] == f"node:{cluster.nodes[2].node_id}"
    assert finding["severity"] == "fail"
    assert [(f["source"], f["component"], f["port"]) for f in finding["evidence"]["failures"]] == [
        (cluster.nodes[0].node_id, "node_manager", port)]
    assert f"port {port} of the raylet's node manager" in finding["message"]
    assert f"node {cluster.nodes[0].node_id[:12]} (10.231.27.10, head)" in finding["message"]
    assert result.findings("RLD101") == [], result
    assert result.seconds < 2 * healthy_s + 5, (result.seconds, healthy_s)


def test_a_worker_port_range_closed_to_the_head_is_a_closed_port_not_a_busy_node(
        cluster, healthy, rules):
    """The GCS and the driver live on the head: no worker of node 2 can be reached from there,
    so its probe never starts; a task that a peer's probe places there listens instead."""
    rules.block(2, "10002:19999", sources=[0])
    result = check_json(cluster)
    assert result.code == 1, result
    finding = only_finding(result, "RLD204")
    assert finding["subject"] == f"node:{cluster.nodes[2].node_id}"
    assert finding["severity"] == "fail"
    [failure] = finding["evidence"]["failures"]
    assert (failure["source"], failure["component"], failure["status"]) == (
        cluster.nodes[0].node_id, "worker", "timeout")
    assert 10002 <= failure["port"] <= 19999
    assert "of the worker processes" in finding["message"]
    # Node 2's own probe never started: the listener was a task placed there by worker 1's.
    assert finding["evidence"]["worker_port_placed_by"] == cluster.nodes[1].node_id
    assert result.findings("RLD101") == [], result


def test_a_frozen_raylet_stays_not_answering(cluster, healthy):
    victim = cluster.nodes[2]
    pids = cluster.pids(2, "raylet")
    assert pids
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        result = check_json(cluster)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    [finding] = [f for f in result.findings("RLD101") if f["subject"] == f"node:{victim.node_id}"]
    assert "is not answering" in finding["message"], finding
    assert result.findings("RLD204") == [], result


def test_a_node_registered_with_an_address_the_others_cannot_reach_is_said_so(cluster, hosts):
    """A host with two addresses whose node registered with the one the cluster cannot route to
    (a wrong --node-ip-address): its raylet reaches the GCS, nothing reaches it back."""
    hosts.in_host(3, "ip", "addr", "add", "10.231.99.13/32", "dev", "lo")
    node = cluster.add_node(NodeSpec(labels={"ray.io/availability-zone": "zone-a"},
                                     ip="10.231.99.13", command_prefix=hosts.prefix(3)))
    result = check_json(cluster)
    assert result.code == 1, result
    finding = only_finding(result, "RLD204")
    assert finding["subject"] == f"node:{node.node_id}" and finding["severity"] == "fail"
    assert finding["evidence"]["state"] == "address"
    assert "(10.231.99.13) registered with an address the other nodes cannot reach" in finding[
        "message"]
    assert "any of the 3 node(s) that tried (no route to that address from there)" in finding[
        "message"]
    assert "--node-ip-address" in finding["fix"]
    assert result.findings("RLD101") == [], result
