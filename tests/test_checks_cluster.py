"""RLD101, RLD102, RLD103 on recorded snapshots and on small edits of them."""

from __future__ import annotations

import copy
import json

from conftest import FIXTURES
from rldoctor.checks.cluster.nodes import node_dead, unschedulable_demand, version_mismatch
from rldoctor.model import Severity
from rldoctor.snapshot import Snapshot


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def run(check, data: dict):
    return list(check(Snapshot(data)))


def test_rld101_names_the_dead_node_with_rays_reason():
    data = fixture("node-dead")
    dead = next(n for n in data["nodes"] if not n["alive"])
    [finding] = run(node_dead, data)
    assert finding.severity is Severity.FAIL
    assert finding.subject == f"node:{dead['node_id']}"
    assert "UNEXPECTED_TERMINATION" in finding.message
    assert finding.evidence["death_message"] == dead["death_message"]
    assert dead["node_id"] in finding.fix


def test_rld101_idle_scale_down_is_info_and_preemption_is_warn():
    data = fixture("node-dead")
    dead = next(n for n in data["nodes"] if not n["alive"])
    dead["death_reason"] = "AUTOSCALER_DRAIN_IDLE"
    assert run(node_dead, data)[0].severity is Severity.INFO
    dead["death_reason"] = "AUTOSCALER_DRAIN_PREEMPTED"
    assert run(node_dead, data)[0].severity is Severity.WARN


def test_rld101_alive_node_that_missed_the_probe_is_a_warning():
    data = fixture("healthy-3node")
    silent = data["nodes"][1]["node_id"]
    data["versions"]["failed"] = {silent: {"kind": "timeout", "error": "no answer within 8s"}}
    [finding] = run(node_dead, data)
    assert finding.severity is Severity.WARN and finding.subject == f"node:{silent}"
    assert "did not answer" in finding.message
    # With its raylet unreachable too, the node is gone even if the GCS has not noticed.
    data["object_store"] = {"nodes": {}, "failed": {silent: "RpcError: failed to connect"}}
    [finding] = run(node_dead, data)
    assert finding.severity is Severity.FAIL and "stopped answering" in finding.message
    del data["object_store"]
    data["versions"]["failed"][silent]["raylet"] = "RpcError: failed to connect to all addresses"
    assert run(node_dead, data)[0].severity is Severity.FAIL  # the collector's own second look
    data["versions"]["failed"][silent]["raylet"] = "answers"
    assert run(node_dead, data)[0].severity is Severity.WARN  # alive, just slow
    # Whatever error the probe got, a raylet that no longer answers makes the node gone.
    data["versions"]["failed"][silent] = {"kind": "error", "raylet": "RpcError: unavailable",
                                          "error": "ActorUnschedulableError: node no longer exists"}
    assert run(node_dead, data)[0].severity is Severity.FAIL
    # Lost in the middle of the round trips counts like a probe that got no answer.
    data["versions"]["failed"][silent] = {"kind": "lost", "error": "during round trips: x"}
    assert run(node_dead, data)[0].severity is Severity.WARN
    # A probe the node answered with an error is not a dead node.
    data["versions"]["failed"] = {silent: {"kind": "error", "error": "OutOfMemoryError: 1 worker(s)"}}
    assert run(node_dead, data) == []


def test_rld102_healthy_cluster_agrees():
    assert run(version_mismatch, fixture("healthy-3node")) == []


def test_rld102_names_the_odd_node_and_both_versions():
    data = fixture("version-mismatch")
    [finding] = run(version_mismatch, data)
    assert finding.severity is Severity.WARN  # gymnasium: behaviour may change, Ray still runs
    assert "1.0.0" in finding.message and "1.2.2" in finding.message
    assert finding.evidence["component"] == "gymnasium"


def test_rld102_ray_or_python_mismatch_or_missing_package_fails():
    data = fixture("healthy-3node")
    node = sorted(data["versions"]["nodes"])[1]
    edited = copy.deepcopy(data)
    edited["versions"]["nodes"][node]["python"] = "3.11.9"
    [finding] = run(version_mismatch, edited)
    assert finding.severity is Severity.FAIL and finding.subject == f"node:{node}"
    edited = copy.deepcopy(data)
    edited["versions"]["nodes"][node]["torch"] = None
    [finding] = run(version_mismatch, edited)
    assert finding.severity is Severity.FAIL and "not installed" in finding.message


def test_rld103_infeasible_actor_and_placement_group():
    data = fixture("infeasible-demands")
    findings = run(unschedulable_demand, data)
    by_subject = {f.subject.split(":")[0]: f for f in findings}
    actor = by_subject["actor"]
    assert "NeedsAccelerator" in actor.message and "infeasible" in actor.message
    pg = by_subject["placement_group"]
    assert "ppo-runners" in pg.message and "STRICT_PACK" in pg.message
    assert all(f.severity is Severity.FAIL for f in findings)


def test_rld103_feasible_but_waiting_demand_is_a_warning():
    data = fixture("infeasible-demands")
    data["demands"]["task_actor"] = [{"shape": {"CPU": 1.0}, "count": 4}]
    data["demands"]["placement_groups"][0]["strategy"] = "PACK"  # 2 x 1 CPU over 3 nodes fits
    findings = run(unschedulable_demand, data)
    assert [f.severity for f in findings] == [Severity.WARN, Severity.WARN]
    assert "waiting" in findings[0].message


def test_rld103_ignores_dead_nodes_when_judging_feasibility():
    data = fixture("infeasible-demands")
    data["demands"]["placement_groups"] = []
    gone = data["nodes"][2]
    gone["resources_total"]["no_such_accelerator"] = 1.0
    assert run(unschedulable_demand, data)[0].severity is Severity.WARN  # alive: just busy
    gone["alive"] = False
    [finding] = run(unschedulable_demand, data)
    assert finding.severity is Severity.FAIL


# -- a silent raylet, a slow control plane (RLD101 "not answering", RLD104) -----------------

def _with_silent_raylet(data: dict, node_id: str, answered_ms: float | None = None) -> dict:
    data = copy.deepcopy(data)
    why = "no answer to a ping (GetSystemConfig) within 2s"
    data["versions"]["failed"][node_id] = {"kind": "silent", "error": "not waited for: its "
                                           "raylet is not answering", "raylet": why}
    data["object_store"]["failed"][node_id] = why
    ping = {"rpc": "GetSystemConfig"}
    ping.update({"ms": answered_ms} if answered_ms is not None else
                {"error": "no answer to GetSystemConfig within 3.1s", "waited_s": 3.1})
    data["control_plane"] = {"gcs": {"first_call_ms": 4.0, "rpc": "GetClusterId"},
                             "dashboard": {"ms": 5.0, "url": "127.0.0.1:1"},
                             "raylets": {node_id: ping}}
    return data


def test_rld101_a_silent_raylet_is_not_answering_not_dead():
    data = fixture("healthy-3node")
    node_id = data["nodes"][2]["node_id"]
    [finding] = run(node_dead, _with_silent_raylet(data, node_id))
    assert finding.severity is Severity.FAIL and finding.subject == f"node:{node_id}"
    assert "is not answering" in finding.message and "within 3.1s" in finding.message
    assert finding.evidence["state"] == "not answering" and "SIGCONT" in finding.fix


def test_a_raylet_that_answered_late_is_rld104_slow_not_rld101():
    from rldoctor.checks.cluster.control_plane import control_plane_slow

    data = fixture("healthy-3node")
    node_id = data["nodes"][2]["node_id"]
    late = _with_silent_raylet(data, node_id, answered_ms=2600.0)
    assert run(node_dead, late) == []
    [finding] = run(control_plane_slow, late)
    assert finding.subject == f"node:{node_id}" and "2600 ms" in finding.message


def test_rld104_names_a_dashboard_that_does_not_answer_and_a_slow_gcs():
    from rldoctor.checks.cluster.control_plane import control_plane_slow

    data = _with_silent_raylet(fixture("healthy-3node"), fixture("healthy-3node")["nodes"][1]["node_id"], 3.0)
    assert run(control_plane_slow, data) == []  # a healthy control plane
    data["control_plane"]["dashboard"] = {"error": "no answer within 3.0s", "url": "127.0.0.1:1",
                                          "waited_s": 3.0}
    data["control_plane"]["gcs"]["first_call_ms"] = 4000.0
    found = {f.subject: f for f in run(control_plane_slow, data)}
    assert found["dashboard"].severity is Severity.FAIL and "did not answer" in found["dashboard"].message
    assert found["cluster"].severity is Severity.FAIL and "4000 ms" in found["cluster"].message
    assert "--num-cpus=0" in found["dashboard"].fix


def test_rld105_reads_the_node_state_so_a_dead_node_is_rld101s_alone():
    """RLD105 asks node_state (AUTH MISMATCH), not the raw probe failure: a node that refused
    rldoctor's credentials is RLD105's while it lives, and only RLD101's once the GCS lists it dead."""
    from rldoctor.checks.cluster.nodes import auth_mismatch

    doc = fixture("healthy-3node")
    worker = doc["nodes"][1]["node_id"]
    doc["versions"]["failed"][worker] = {"kind": "auth", "error": "AuthenticationError: refused",
                                         "auth": "its raylet refused rldoctor's token"}
    doc["cluster"]["client_auth"] = {"mode": "token", "why": "the head asked for it"}
    [finding] = run(auth_mismatch, doc)
    assert finding.subject == f"node:{worker}" and finding.severity is Severity.FAIL
    assert f"node {worker[:12]} (127.0.0.11) disagrees with rldoctor" in finding.message
    node = next(n for n in doc["nodes"] if n["node_id"] == worker)
    node.update(alive=False, death_reason="UNEXPECTED_TERMINATION")
    assert run(auth_mismatch, doc) == []
    assert [f.subject for f in run(node_dead, doc)] == [f"node:{worker}"]


def test_rld101_rld103_to_rld105_fixes_beyond_the_recorded_fixtures_are_their_tables_cases():
    """Each fix is its check's `fixes` table filled in (what `explain` prints), on the paths no
    recorded fixture takes: a silent raylet (its case with the dead node's fix written in), a
    probe with no answer, a node whose workers never start, a busy demand, a slow control plane
    and a node that refuses rldoctor's token."""
    from rldoctor.checks.cluster.control_plane import control_plane_slow
    from rldoctor.checks.cluster.nodes import auth_mismatch
    from rldoctor.engine.registry import fix_pattern

    def says_its_table(check, findings):
        assert findings and all(fix_pattern(check.fixes).fullmatch(f.fix) for f in findings), findings
        return findings

    data = fixture("healthy-3node")
    node_id = data["nodes"][2]["node_id"]
    [silent] = says_its_table(node_dead, run(node_dead, _with_silent_raylet(data, node_id)))
    [dead_fix] = [t for t in node_dead.fixes.values() if "Read why the node went away" in t]
    assert silent.fix.endswith(f"({dead_fix.format(node_id=node_id)})")
    assert "(<the fix for a node that died>)" in node_dead.doc["Fix"]
    data["versions"]["failed"] = {node_id: {"kind": "timeout", "error": "no answer within 8s"}}
    [no_answer] = says_its_table(node_dead, run(node_dead, data))
    assert f"--node-id {node_id}`" in no_answer.fix
    data["versions"]["failed"][node_id]["raylet"] = "answers"
    [not_starting] = says_its_table(node_dead, run(node_dead, data))
    assert not_starting.evidence["workers_start"] is False and not_starting.fix in node_dead.fixes.values()

    demands = fixture("infeasible-demands")
    demands["demands"]["task_actor"] = [{"shape": {"CPU": 1.0}, "count": 4}]
    demands["demands"]["placement_groups"][0]["strategy"] = "PACK"
    busy = says_its_table(unschedulable_demand, run(unschedulable_demand, demands))
    assert all("but they are busy" in f.fix for f in busy)

    slow = _with_silent_raylet(fixture("healthy-3node"), node_id, 2600.0)
    slow["control_plane"]["gcs"]["first_call_ms"] = 4000.0
    assert len(says_its_table(control_plane_slow, run(control_plane_slow, slow))) == 2

    doc = fixture("healthy-3node")
    doc["versions"]["failed"][node_id] = {"kind": "auth", "error": "AuthenticationError: refused",
                                          "auth": "its raylet refused rldoctor's token"}
    says_its_table(auth_mismatch, run(auth_mismatch, doc))
