"""RLD204 (and RLD101's deference to it) on the recorded ports-closed cluster and edits of it;
the connect planner and the node-side connects on real sockets."""

from __future__ import annotations

import copy
import json
import socket
import time

import pytest

from conftest import FIXTURES
from rldoctor.checks.cluster.nodes import node_dead
from rldoctor.checks.network.links import port_unreachable
from rldoctor.node import portprobe
from rldoctor.cluster.reach import ALL_PAIRS_UP_TO, PEERS_PER_NODE, blocked_object_pairs, plan
from rldoctor.model import Severity
from rldoctor.snapshot import Snapshot

SNAP = json.loads((FIXTURES / "ports-closed.json").read_text())
BY_IP = {n["ip"]: n["node_id"] for n in SNAP["nodes"]}
HEAD, W1, W2 = BY_IP["10.231.27.10"], BY_IP["10.231.27.11"], BY_IP["10.231.27.12"]


def run(check, data):
    return list(check(Snapshot(data), dict(check.params)))


def healthy() -> dict:
    """The recorded cluster with every connect succeeding."""
    data = copy.deepcopy(SNAP)
    reach = data["reach"]
    for target, counts in reach["tried"].items():
        reach["open"][target] = sum(counts.values())
    reach["failures"], reach["failed"] = [], {}
    return data


def with_failures(data: dict, failures: list[tuple[str, str, str, str]]) -> dict:
    """`failures`: (source, target, component, status); counts follow."""
    reach = data["reach"]
    for source, target, component, status in failures:
        host, port = reach["endpoints"][target][component]
        reach["failures"].append({"source": source, "target": target, "component": component,
                                  "host": host, "port": port, "status": status, "ms": 1000.0})
        reach["failed"].setdefault(target, {})[component] = (
            reach["failed"].get(target, {}).get(component, 0) + 1)
        reach["open"][target] -= 1
    return data


def test_the_recorded_closed_ports_are_named_per_node_pair_and_port():
    found = {f.subject: f for f in run(port_unreachable, SNAP)}
    assert set(found) == {f"node:{W1}", f"node:{W2}"}
    dropped = found[f"node:{W2}"]
    assert dropped.severity is Severity.FAIL
    om = SNAP["reach"]["endpoints"][W2]["object_manager"][1]
    assert f"port {om} of the raylet's object manager" in dropped.message
    assert "from every node that tried (2)" in dropped.message and "timed out" in dropped.message
    assert {(f["source"], f["status"]) for f in dropped.evidence["failures"]} == {
        (HEAD, "timeout"), (W1, "timeout")}
    assert (f"Closed now: raylet's object manager port {om} on 10.231.27.12 from 10.231.27.10, "
            "10.231.27.11 (timeout)") in dropped.fix
    rejected = found[f"node:{W1}"]
    assert rejected.severity is Severity.WARN  # an agent's port, from one peer
    [pair] = rejected.evidence["failures"]
    assert (pair["source"], pair["component"], pair["status"]) == (
        W2, "dashboard_agent_http", "refused")
    assert "refused (nothing listens there, or a reject rule)" in rejected.message
    assert "--dashboard-agent-listen-port" in rejected.fix


def test_a_healthy_cluster_has_no_finding():
    assert run(port_unreachable, healthy()) == []


def test_a_core_port_closed_from_the_head_alone_is_a_fail_from_a_peer_alone_a_warn():
    [from_head] = run(port_unreachable,
                      with_failures(healthy(), [(HEAD, W2, "node_manager", "timeout")]))
    # The head named the way every message names a node (rldoctor.words.node_label).
    assert from_head.severity is Severity.FAIL and f"node {HEAD[:12]} (10.231.27.10, head)" in from_head.message
    assert "1 other node(s) reach it" in from_head.message
    [from_peer] = run(port_unreachable, with_failures(healthy(), [(W1, W2, "worker", "timeout")]))
    assert from_peer.severity is Severity.WARN
    assert "the worker processes" in from_peer.message


def _unreachable_address(data: dict, target: str) -> dict:
    everything = [(s, target, c, "timeout") for s in (HEAD, W1, W2) if s != target
                  for c in data["reach"]["endpoints"][target]]
    data = with_failures(data, [f for f in everything
                                if data["reach"]["tried"][target].get(f[2])])
    data["reach"]["open"][target] = 0
    return data


def test_a_node_no_other_node_can_reach_at_its_address_is_said_so():
    data = _unreachable_address(healthy(), W2)
    data["hosts"][W2]["listening"]["host_addresses"] = ["127.0.0.1", "192.168.77.5"]
    [finding] = run(port_unreachable, data)
    assert finding.severity is Severity.FAIL and finding.evidence["state"] == "address"
    assert "registered with an address the other nodes cannot reach" in finding.message
    assert "10.231.27.12 is not an address of any of its interfaces" in finding.message
    assert "--node-ip-address" in finding.fix


def test_a_node_nothing_reaches_and_whose_probe_is_silent_is_left_to_rld101():
    data = _unreachable_address(healthy(), W2)
    data["hosts"].pop(W2)
    data["reach"]["sources"].remove(W2)
    data["versions"]["failed"] = {W2: {"kind": "timeout", "error": "no answer within 8s"}}
    assert run(port_unreachable, data) == []
    [dead] = run(node_dead, data)
    assert dead.subject == f"node:{W2}"


def _silent(data: dict, node_id: str) -> dict:
    data["versions"]["failed"] = {node_id: {"kind": "silent", "error": "not waited for",
                                            "raylet": "no answer to a ping"}}
    data["control_plane"]["raylets"][node_id] = {"error": "no answer", "waited_s": 2.0,
                                                  "rpc": "GetSystemConfig"}
    return data


def test_rld101_defers_to_a_closed_port_but_not_for_a_frozen_raylet():
    closed = _silent(with_failures(healthy(), [(HEAD, W2, "node_manager", "timeout")]), W2)
    assert run(node_dead, closed) == []
    [finding] = run(port_unreachable, closed)
    assert finding.subject == f"node:{W2}"
    frozen = _silent(healthy(), W2)  # a stopped raylet's ports still accept connections
    [finding] = run(node_dead, frozen)
    assert finding.subject == f"node:{W2}" and "is not answering" in finding.message
    # A closed metrics port beside a frozen raylet explains nothing: both are reported.
    both = _silent(with_failures(healthy(), [(HEAD, W2, "metrics_export", "timeout")]), W2)
    [finding] = run(node_dead, both)
    assert "is not answering" in finding.message
    [closed] = run(port_unreachable, both)
    assert closed.severity is Severity.WARN


def test_rld204_is_skipped_without_the_reach_section():
    from rldoctor.engine.runner import run_checks

    data = copy.deepcopy(SNAP)
    data.pop("reach")
    [result] = run_checks([port_unreachable], Snapshot(data))
    assert result.status == "skipped"


def test_object_pulls_skip_exactly_the_pairs_whose_object_managers_cannot_connect():
    assert blocked_object_pairs(SNAP["reach"]) == {frozenset((HEAD, W2)), frozenset((W1, W2))}
    assert blocked_object_pairs(healthy()["reach"]) == set()


def test_small_clusters_try_every_pair_large_ones_grow_linearly():
    ids = [f"{i:04x}" for i in range(10)]
    pairs = plan(ids, ids, ids[0])
    assert all(sorted(targets) == sorted(set(ids) - {s}) for s, targets in pairs.items())
    for n in (ALL_PAIRS_UP_TO + 1, 200, 1000):
        ids = [f"{i:04x}" for i in range(n)]
        pairs = plan(ids, ids, ids[0])
        total = sum(len(t) for t in pairs.values())
        assert total <= (PEERS_PER_NODE + 1) * n
        tried_from = {}
        for source, targets in pairs.items():
            for target in targets:
                assert target != source
                tried_from.setdefault(target, set()).add(source)
        for target in ids:  # every node: from the head and from PEERS_PER_NODE peers
            expected = PEERS_PER_NODE + (target != ids[0])
            assert len(tried_from[target]) == expected, target
            assert target == ids[0] or ids[0] in tried_from[target]
        # No peer carries more than its share (the head aside; the head is one target more).
        assert max(len(t) for s, t in pairs.items() if s != ids[0]) <= PEERS_PER_NODE + 1


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_connects_on_real_sockets_open_and_refused():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    try:
        started = time.monotonic()
        answers = portprobe.connect_all([["127.0.0.1", listener.getsockname()[1]],
                                         ["127.0.0.1", closed_port]], 1.0)
        assert time.monotonic() - started < 0.5
    finally:
        listener.close()
    assert [a[0] for a in answers] == ["open", "refused"]


def test_a_worker_port_listener_answers_then_goes_away():
    answer = portprobe.listen_briefly(40000, 40999, 0.6)
    port = answer["port"]
    assert answer["in_range"] and 40900 <= port <= 40999
    assert portprobe.connect_all([["127.0.0.1", port]], 1.0)[0][0] == "open"
    time.sleep(1.0)
    assert portprobe.connect_all([["127.0.0.1", port]], 1.0)[0][0] == "refused"


def test_no_route_to_a_node_from_anywhere_is_its_address_even_when_its_probe_is_silent():
    data = healthy()
    data["hosts"].pop(W2)
    data["reach"]["sources"].remove(W2)
    data = with_failures(data, [(s, W2, c, "no-route") for s in (HEAD, W1)
                                for c in data["reach"]["endpoints"][W2] if c != "worker"])
    data["reach"]["open"][W2] = 0
    data = _silent(data, W2)
    [finding] = run(port_unreachable, data)
    assert finding.evidence["state"] == "address"
    assert "no route to that address from there" in finding.message
    assert run(node_dead, data) == []


def test_a_sampled_cluster_says_how_many_peers_tried_each_node():
    data = with_failures(healthy(), [(W1, W2, "object_manager", "timeout")])
    data["reach"]["sampling"] = {"mode": "head and peers", "nodes": 400, "all_pairs_up_to": 32,
                                 "peers_per_node": PEERS_PER_NODE}
    [finding] = [f for f in run(port_unreachable, data) if hasattr(f, "severity")]  # and a note
    assert f"on 400 nodes each node is tried from the head and {PEERS_PER_NODE} peers" in (
        finding.message)
    assert finding.evidence["sampling"]["peers_per_node"] == PEERS_PER_NODE


def test_a_sampled_cluster_says_so_even_when_no_port_is_closed():
    """Past 32 nodes the pairs are a sample; a clean result says what it could not see."""
    from rldoctor.engine.runner import run_check
    from rldoctor.snapshot import Snapshot

    data = healthy()
    data["reach"]["sampling"] = {"mode": "head and peers", "nodes": 400, "all_pairs_up_to": 32,
                                 "peers_per_node": PEERS_PER_NODE}
    result = run_check(port_unreachable, Snapshot(data), port_unreachable.params)
    assert result.findings == [] and [n.subject for n in result.notes] == ["snapshot.reach"]
    assert f"tried on 400 nodes from the head and {PEERS_PER_NODE} peers each" in result.notes[0].message
    assert run_check(port_unreachable, Snapshot(healthy()), port_unreachable.params).notes == []
