"""RLD201-RLD203 thresholds on the recorded network-delayed cluster and edits of it."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES
from rldoctor.checks.network import cross_zone_spread, high_network_latency, slow_object_transfer
from rldoctor.model import Severity
from rldoctor.snapshot import Snapshot

SNAP = json.loads((FIXTURES / "network-delayed.json").read_text())
HEALTHY = json.loads((FIXTURES / "healthy-3node.json").read_text())
BY_IP = {n["ip"]: n["node_id"] for n in SNAP["nodes"]}
SLOW_CHUNKS, FAR = BY_IP["127.0.0.11"], BY_IP["127.0.0.12"]


def run(check, data, **params):
    return list(check(Snapshot(data), {**check.params, **params}))


def with_latency(data: dict, node_id: str, over_ms: float) -> dict:
    data = copy.deepcopy(data)
    net = data["network"]
    base = net["nodes"][net["baseline_node_id"]]["p50_ms"]
    net["nodes"][node_id]["p50_ms"] = base + over_ms
    return data


def test_rld201_names_the_delayed_node_only():
    [finding] = run(high_network_latency, SNAP)
    assert finding.subject == f"node:{FAR}" and finding.severity is Severity.FAIL
    assert finding.evidence["zone"] == "zone-b" and finding.evidence["over_baseline_ms"] > 20


@pytest.mark.parametrize("over,expected", [(1, None), (4.9, None), (5.5, Severity.WARN),
                                           (19.9, Severity.WARN), (20.5, Severity.FAIL)])
def test_rld201_thresholds(over, expected):
    data = with_latency(HEALTHY, HEALTHY["nodes"][2]["node_id"], over)
    findings = run(high_network_latency, data)
    assert [f.severity for f in findings] == ([expected] if expected else [])


def test_rld201_thresholds_are_settable():
    assert run(high_network_latency, SNAP, warn_ms=50, fail_ms=100) == []


def test_rld202_slow_transfers_compared_with_the_other_nodes():
    [finding] = run(slow_object_transfer, SNAP)
    assert finding.subject == f"node:{SLOW_CHUNKS}"
    assert finding.evidence["bandwidth_mib_s"] < 0.25 * finding.evidence["median_mib_s"]
    assert run(slow_object_transfer, SNAP, fraction_of_median=0.01) == []
    assert run(slow_object_transfer, HEALTHY) == []


def test_rld203_fails_when_slow_nodes_are_the_other_zone():
    [finding] = run(cross_zone_spread, SNAP)
    assert finding.severity is Severity.FAIL
    assert finding.evidence["zones"]["zone-b"] == [FAR]


def test_rld203_warns_when_zones_differ_but_latency_does_not():
    data = copy.deepcopy(HEALTHY)
    data["nodes"][2]["labels"]["ray.io/availability-zone"] = "zone-b"
    [finding] = run(cross_zone_spread, data)
    assert finding.severity is Severity.WARN and "spans 2 zones" in finding.message


def test_rld203_slow_node_inside_the_heads_zone_is_not_blamed_on_zones():
    data = with_latency(SNAP, SLOW_CHUNKS, 40)  # now a zone-a node is slow too
    [finding] = run(cross_zone_spread, data)
    assert finding.severity is Severity.WARN


def test_rld203_unlabelled_nodes_are_reported_not_guessed():
    data = copy.deepcopy(HEALTHY)
    del data["nodes"][1]["labels"]["ray.io/availability-zone"]
    [finding] = run(cross_zone_spread, data)
    assert finding.severity is Severity.INFO
    assert finding.evidence["unlabelled_nodes"] == [data["nodes"][1]["node_id"]]
    for node in data["nodes"]:
        node["labels"].pop("ray.io/availability-zone", None)
    assert run(cross_zone_spread, data) == []


def test_rld203_zone_label_is_settable():
    data = copy.deepcopy(SNAP)
    for node in data["nodes"]:
        node["labels"]["topology.example.com/rack"] = "r1"
    assert run(cross_zone_spread, data, zone_label="topology.example.com/rack") == []
