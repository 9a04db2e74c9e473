"""RLD305, RLD107, RLD106 and RLD404 on the recorded node-faults and workers-not-starting
clusters, and edits of them."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES
from rldoctor.checks.cluster.nodes import node_dead
from rldoctor.checks.memory.disk import disk_pressure
from rldoctor.checks.cluster.limits import open_files_limit, workers_not_starting
from rldoctor.checks.workers.runtime_env import reason_in, runtime_env_failed
from rldoctor.model import Severity
from rldoctor.snapshot import Snapshot

SNAP = json.loads((FIXTURES / "node-faults.json").read_text())
BY_IP = {n["ip"]: n["node_id"] for n in SNAP["nodes"]}
HEAD, HEALTHY, FULL = BY_IP["127.0.0.10"], BY_IP["127.0.0.11"], BY_IP["127.0.0.12"]
HUNG_SNAP = json.loads((FIXTURES / "workers-not-starting.json").read_text())
HUNG = next(iter(HUNG_SNAP["versions"]["failed"]))


def run(check, data, **params):
    return list(check(Snapshot(data), {**check.params, **params}))


def full_fs(data: dict) -> dict:
    return data["hosts"][FULL]["disk"]["filesystems"][0]


@pytest.mark.parametrize("used,expected", [(0.50, None), (0.849, None), (0.85, Severity.WARN),
                                          (0.949, Severity.WARN), (0.95, Severity.FAIL)])
def test_rld305_thresholds_around_rays_default(used, expected):
    data = copy.deepcopy(SNAP)
    full_fs(data)["used_fraction"] = used
    findings = run(disk_pressure, data)
    assert [f.severity for f in findings] == ([] if expected is None else [expected])


def large_disk(data: dict, total_gib: float, used: float, store_gib: float | None = None) -> None:
    fs = full_fs(data)
    fs["total_bytes"] = int(total_gib * 2**30)
    fs["free_bytes"] = int(total_gib * 2**30 * (1 - used))
    fs["used_fraction"] = used
    if store_gib is not None:
        node = next(n for n in data["nodes"] if n["node_id"] == FULL)
        node["resources_total"]["object_store_memory"] = store_gib * 2**30


def test_rld305_a_large_disk_near_the_line_with_tens_of_gib_to_go_is_no_finding():
    # A CI host's 252 GiB disk at 85.5 % (by Ray's arithmetic: available against capacity)
    # still has 24 GiB before Ray's 0.95: that is how many nodes run, not a warning.
    data = copy.deepcopy(SNAP)
    large_disk(data, 252, 0.855)
    assert run(disk_pressure, data) == []
    large_disk(data, 252, 0.92)  # 7.6 GiB to go: under the 10 GiB floor
    [finding] = run(disk_pressure, data)
    assert finding.severity is Severity.WARN and "7.6 GiB left before it, less than 10.0 GiB" in finding.message
    assert 7 * 2**30 < finding.evidence["headroom_bytes"] < 8 * 2**30
    large_disk(data, 1000, 0.90, store_gib=60)  # 50 GiB to go, but the store can spill 60 at once
    [finding] = run(disk_pressure, data)
    assert finding.severity is Severity.WARN and "object store" in finding.message, finding.message
    large_disk(data, 1000, 0.97)  # over the line: a fail, however much is left
    [finding] = run(disk_pressure, data)
    assert finding.severity is Severity.FAIL


def test_rld305_reads_the_threshold_from_the_cluster_first_then_the_node_env():
    data = copy.deepcopy(SNAP)
    data["hosts"][FULL]["disk"]["threshold_env"] = "0.99"
    [finding] = run(disk_pressure, data)
    assert finding.severity is Severity.WARN and finding.evidence["threshold"] == 0.99
    assert finding.evidence["threshold_source"] == "RAY_local_fs_capacity_threshold on the node"
    data["control_plane"]["raylets"][FULL]["system_config"] = {"local_fs_capacity_threshold": 0.9}
    [finding] = run(disk_pressure, data)  # _system_config wins over the environment, as in Ray
    assert finding.severity is Severity.FAIL and finding.evidence["threshold"] == 0.9
    assert finding.evidence["threshold_source"].startswith("_system_config")


def test_rld305_names_what_fills_the_disk_and_what_is_safe_to_delete():
    data = copy.deepcopy(SNAP)
    entries = full_fs(data)["contents"]["temp_dir_entries"]
    entries.append({"name": "session_2026-01-01_00-00-00_000000_1", "bytes": 40 * 2**20,
                    "files": 300, "complete": True, "dir": True, "kind": "old session"})
    [finding] = run(disk_pressure, data)
    assert "filler.bin (file) 62.0 MiB" in finding.message
    assert "session_2026-01-01_00-00-00_000000_1 (old session) 40.0 MiB" in finding.message
    assert "delete the old session dirs" in finding.fix and "session_2026-01-01" in finding.fix
    assert "--temp-dir" in finding.fix and "--object-spilling-directory" in finding.fix


def test_rld305_without_disk_facts_or_with_an_unreadable_dir_does_not_break():
    data = copy.deepcopy(SNAP)
    data["hosts"][FULL]["disk"] = {"status": "unavailable", "filesystems": []}
    del data["hosts"][HEAD]["disk"]
    assert run(disk_pressure, data) == []
    data = copy.deepcopy(SNAP)
    data["hosts"][FULL]["disk"]["errors"] = ["temp_dir /x: Permission denied"]
    [finding] = run(disk_pressure, data)
    assert finding.evidence["errors"] == ["temp_dir /x: Permission denied"]


def test_rld107_the_hosts_default_of_20000_on_a_small_cluster_is_no_finding():
    findings = run(open_files_limit, SNAP)
    assert {f.subject for f in findings} == {f"node:{HEAD}"}
    healthy = SNAP["hosts"][HEALTHY]["open_files"]["processes"]
    assert {p["soft"] for p in healthy if p["role"] == "raylet"} == {20000}


def test_rld107_a_process_over_80_percent_of_its_limit_fails_and_quotes_ray():
    data = copy.deepcopy(SNAP)
    raylet = next(p for p in data["hosts"][HEALTHY]["open_files"]["processes"]
                  if p["role"] == "raylet")
    raylet["open"] = int(raylet["soft"] * 0.85)
    data["hosts"][HEALTHY]["ray_logs"]["signals"]["too_many_open_files"] = {
        "count": 2, "lines": ["raylet.cc:1 accept: Too many open files"], "file": "raylet.1.out"}
    found = [f for f in run(open_files_limit, data) if f.subject == f"node:{HEALTHY}"]
    [finding] = found
    assert finding.severity is Severity.FAIL and "85%" in finding.message
    assert 'Too many open files" 2x' in finding.message


def test_rld107_a_limit_the_clusters_workers_outgrow_warns_even_at_20000():
    data = copy.deepcopy(SNAP)
    for node_id in data["hosts"]:
        data["hosts"][node_id]["open_files"]["workers_total"] = 1500  # 4500 workers in all
    findings = run(open_files_limit, data)
    gcs = [f for f in findings if f.evidence["role"] == "gcs"]
    assert gcs and gcs[0].evidence["workers_wanted"] == 4 * 4500


def test_rld106_names_the_hung_node_with_rays_line_and_rld101_steps_aside():
    [finding] = run(workers_not_starting, HUNG_SNAP)
    assert finding.subject == f"node:{HUNG}" and finding.severity is Severity.FAIL
    assert "have not registered within the timeout" in finding.message
    assert "3x" in finding.message
    assert run(node_dead, HUNG_SNAP) == []
    # Without Ray's line, the old RLD101 warn stands and RLD106 says nothing.
    data = copy.deepcopy(HUNG_SNAP)
    data["versions"]["failed"][HUNG]["ray_logs"] = {"signals": {}, "files": ["raylet.2.out"]}
    assert run(workers_not_starting, data) == []
    assert [f.severity for f in run(node_dead, data)] == [Severity.WARN]
    # ... and says the node's workers do not start, not that it is busy (issue 37): Ray's
    # raylet says why only RAY_worker_register_timeout_seconds after a worker's start.
    [early] = run(node_dead, data)
    assert "worker processes do not start" in early.message and "busy" not in early.message
    assert "has not said why yet (read: raylet.2.out)" in early.message
    assert "RAY_worker_register_timeout_seconds (60 s by default)" in early.message
    assert "RLD106" in early.fix and early.evidence["workers_start"] is False
    data["versions"]["failed"][HUNG]["ray_logs"] = {"error": "log listing: timed out"}
    [unread] = run(node_dead, data)
    assert "its raylet log could not be read: log listing: timed out" in unread.message


def test_rld106_from_a_probe_that_did_start_is_a_warn():
    data = copy.deepcopy(SNAP)
    data["hosts"][HEALTHY]["ray_logs"]["signals"]["no_available_ports"] = {
        "count": 1, "lines": ["Failed to register worker ... No available ports."], "file": "x"}
    [finding] = run(workers_not_starting, data)
    assert finding.severity is Severity.WARN and finding.subject == f"node:{HEALTHY}"
    assert "--min-worker-port" in finding.fix


def test_rld404_names_the_actor_and_the_job_with_their_nodes_and_never_env_vars():
    findings = {f.subject: f for f in run(runtime_env_failed, SNAP)}
    actor = next(f for s, f in findings.items() if s.startswith("actor:"))
    assert actor.evidence["nodes"] == [HEALTHY]
    assert findings["job:needs-a-package"].evidence["nodes"] == [HEAD]
    assert "not-for-the-fixture" not in json.dumps(SNAP)


def test_rld404_a_job_still_waiting_for_its_env_is_a_warn():
    data = copy.deepcopy(SNAP)
    job = data["runtime_envs"]["jobs"][0]
    job.update(status="PENDING", error_type=None, pending_s=30.0, message=(
        "Job has not started yet. It may be waiting for the runtime environment to be set up."))
    data["hosts"] = {}  # no agent saw it fail yet
    assert [f for f in run(runtime_env_failed, data) if f.subject.startswith("job:")] == []
    job["pending_s"] = 300.0  # a build that takes five minutes: pip hanging without internet
    [finding] = [f for f in run(runtime_env_failed, data) if f.subject.startswith("job:")]
    assert finding.severity is Severity.WARN and "has waited 300s" in finding.message


@pytest.mark.parametrize("message,reason", [
    ("Traceback\n  ERROR: Could not find a version\n  ERROR: No matching distribution found for x\n",
     "ERROR: No matching distribution found for x"),
    ("Failed to upload: Package size (600.00MiB) exceeds the maximum size of 512.00MiB. You can",
     "Package size (600.00MiB) exceeds the maximum size of 512.00MiB."),
    ("something else\nlast words", "last words"),
])
def test_rld404_reason_is_pips_last_error_line(message, reason):
    assert reason_in(message) == reason
