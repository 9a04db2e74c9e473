"""The snapshot's per-node views: what one node's host facts, probe failure, raylet ping,
object store, network figures, Ray log signals, name and state are, read from recorded
fixtures and edits of them; {} where the snapshot knows nothing (never a KeyError)."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from rldoctor import node_state
from rldoctor.snapshot import Snapshot


def _load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


HEALTHY = _load("healthy-3node.json")
HEAD, W1, W2 = (n["node_id"] for n in HEALTHY["nodes"])
NOT_STARTING = _load("workers-not-starting.json")
STUCK = next(iter(NOT_STARTING["versions"]["failed"]))


def test_the_views_read_the_sections_of_one_node():
    snap = Snapshot(HEALTHY)
    assert snap.host(W1) is HEALTHY["hosts"][W1] and "mem_total_bytes" in snap.host(W1)
    assert snap.store(W1) is HEALTHY["object_store"]["nodes"][W1] and "store" in snap.store(W1)
    assert snap.network(W1) is HEALTHY["network"]["nodes"][W1] and snap.network(W1)["p50_ms"] >= 0
    assert snap.probe_failure(W1) == {}  # its probe answered


def test_a_node_the_snapshot_does_not_know_reads_as_empty():
    snap = Snapshot(HEALTHY)
    for view in (snap.host, snap.probe_failure, snap.raylet_ping, snap.store, snap.network,
                 snap.log_signals):
        assert view("no-such-node") == {} and view(None) == {}
    assert snap.state("no-such-node") is None
    assert snap.label("f" * 56) == "node ffffffffffff (?)"


@pytest.mark.parametrize("section", ["hosts", "versions", "control_plane", "object_store", "network"])
def test_a_section_the_collector_could_not_fill_reads_as_empty(section):
    doc = json.loads(json.dumps(HEALTHY))
    doc[section] = None
    snap = Snapshot(doc)
    assert (snap.host(W1), snap.probe_failure(W1), snap.raylet_ping(W1), snap.store(W1),
            snap.network(W1))[["hosts", "versions", "control_plane", "object_store",
                               "network"].index(section)] == {}


def test_probe_failure_raylet_ping_and_log_signals_of_a_node_whose_workers_do_not_start():
    snap = Snapshot(NOT_STARTING)
    failure = snap.probe_failure(STUCK)
    assert failure["kind"] == "timeout" and failure["raylet"] == "answers"
    assert snap.raylet_ping(STUCK) is NOT_STARTING["control_plane"]["raylets"][STUCK]
    # Its probe never started, so its Ray log lines came with the failure, read from outside.
    assert snap.log_signals(STUCK) is failure["ray_logs"]["signals"]
    assert "workers_not_registered" in snap.log_signals(STUCK)


def test_log_signals_come_from_the_host_facts_when_the_probe_answered():
    doc = json.loads(json.dumps(HEALTHY))
    doc["hosts"][W2]["ray_logs"] = {"signals": {"disk_over_capacity": {"count": 1, "lines": ["x"]}}}
    assert Snapshot(doc).log_signals(W2) == {"disk_over_capacity": {"count": 1, "lines": ["x"]}}
    assert Snapshot(doc).log_signals(W1) == {}


def test_label_names_a_node_as_every_message_does():
    snap = Snapshot(HEALTHY)
    assert snap.label(W1) == f"node {W1[:12]} (127.0.0.11)"
    assert snap.label(HEAD) == f"node {HEAD[:12]} (127.0.0.10)"
    assert snap.label(HEAD, head=True) == f"node {HEAD[:12]} (127.0.0.10, head)"
    assert snap.label(W1, head=True) == f"node {W1[:12]} (127.0.0.11)"
    assert snap.label(W1, "zone a") == f"node {W1[:12]} (127.0.0.11, zone a)"


@pytest.mark.parametrize("fixture", ["healthy-3node.json", "node-dead.json", "workers-not-starting.json",
                                     "version-mismatch.json", "node-faults.json"])
def test_state_is_node_state_of(fixture):
    doc = _load(fixture)
    snap = Snapshot(doc)
    for node in doc["nodes"]:
        assert snap.state(node["node_id"]) == node_state.of(doc, node)


def test_state_of_a_dead_and_of_a_probe_less_node():
    dead = _load("node-dead.json")
    gone = [n["node_id"] for n in dead["nodes"] if not n.get("alive")]
    assert gone and all(Snapshot(dead).state(n).state == node_state.DEAD for n in gone)
    assert Snapshot(NOT_STARTING).state(STUCK).kind == "no_probe"
