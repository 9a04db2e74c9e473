"""RLD301-RLD304 thresholds on the recorded memory-pressure cluster and edits of it."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES
from rldoctor.checks.memory.pressure import (node_memory_pressure, object_spilling, object_store_pressure,
                                    shm_too_small)
from rldoctor.model import Severity
from rldoctor.snapshot import Snapshot

SNAP = json.loads((FIXTURES / "memory-pressure.json").read_text())
BY_IP = {n["ip"]: n["node_id"] for n in SNAP["nodes"]}
FULL, NEAR = BY_IP["127.0.0.12"], BY_IP["127.0.0.11"]


def run(check, data, **params):
    return list(check(Snapshot(data), {**check.params, **params}))


def with_store_use(fraction: float) -> dict:
    data = copy.deepcopy(SNAP)
    store = data["object_store"]["nodes"][FULL]["store"]
    store["object_store_bytes_used"] = int(store["object_store_bytes_avail"] * fraction)
    return data


@pytest.mark.parametrize("fraction,expected", [
    (0.10, None), (0.69, None), (0.70, Severity.WARN), (0.89, Severity.WARN),
    (0.90, Severity.FAIL), (1.0, Severity.FAIL),
])
def test_rld301_thresholds(fraction, expected):
    findings = run(object_store_pressure, with_store_use(fraction))
    if expected is None:
        assert findings == []
    else:
        [finding] = findings
        assert finding.severity is expected and finding.subject == f"node:{FULL}"


def test_rld301_names_the_owning_actor_and_settable_thresholds():
    [finding] = run(object_store_pressure, with_store_use(0.95))
    assert "actor Hoarder" in finding.message
    assert finding.evidence["top_owners"][0]["num_owned_objects"] > 0
    assert run(object_store_pressure, with_store_use(0.95), warn_fraction=0.96, fail_fraction=0.99) == []


def test_rld302_spill_directory_and_disk():
    [finding] = run(object_spilling, SNAP)
    assert finding.severity is Severity.WARN and finding.subject == f"node:{FULL}"
    assert finding.evidence["spill_directory_is_default"] is True
    data = copy.deepcopy(SNAP)
    raylet = data["hosts"][FULL]["raylet"]
    raylet["spill_directory_free_bytes"] = int(raylet["spill_directory_total_bytes"] * 0.02)
    [finding] = run(object_spilling, data)
    assert finding.severity is Severity.FAIL and "98% full" in finding.message


def test_rld302_nothing_spilled_nothing_said():
    data = copy.deepcopy(SNAP)
    data["object_store"]["nodes"][FULL]["store"]["spilled_bytes_total"] = 0
    assert run(object_spilling, data) == []


@pytest.mark.parametrize("used,threshold,expected", [
    (0.50, "0.95", None), (0.84, None, None), (0.86, None, Severity.WARN),
    (0.93, None, Severity.FAIL), (0.97, None, Severity.FAIL), (0.25, "0.3", Severity.WARN),
])
def test_rld303_margins_to_the_threshold_in_force(used, threshold, expected):
    data = copy.deepcopy(SNAP)
    for node_id, host in data["hosts"].items():
        host["mem_available_bytes"] = int(host["mem_total_bytes"] * (1 - used))
        host["memory_monitor"]["RAY_memory_usage_threshold"] = threshold
    findings = run(node_memory_pressure, data)
    if expected is None:
        assert findings == []
    else:
        assert {f.severity for f in findings} == {expected}
        assert len(findings) == len(data["hosts"])


def test_rld304_disk_backed_store_and_small_shm():
    [finding] = run(shm_too_small, SNAP)
    assert finding.subject == f"node:{NEAR}" and finding.severity is Severity.WARN
    data = copy.deepcopy(SNAP)
    data["hosts"][NEAR]["raylet"]["plasma_directory"] = "/dev/shm"
    data["hosts"][NEAR]["shm_total_bytes"] = 64 * 2**20  # Docker's default
    [finding] = run(shm_too_small, data)
    assert finding.severity is Severity.FAIL and "64.0 MiB" in finding.message
