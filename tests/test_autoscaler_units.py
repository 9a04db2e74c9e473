"""The autoscaler collector's pure parts, on lines Ray's own autoscaler wrote on a real fake-
provider cluster (tests/test_e2e_autoscaler.py runs the whole path)."""

from __future__ import annotations

import json

from rldoctor.lint.rules._kuberay import quantity
from rldoctor.cluster.autoscaler import _launch_events, _v1, monitor_log, v1_request_resources

QUOTA = ("Failed to launch 1 node(s) of type quota_worker. (QuotaExceeded): Quota 'CPUS' "
         "exceeded. Limit: 8.0 in region us-west-2.")


def test_launch_failures_and_removals_are_counted_from_the_event_log():
    events = [{"ts": "1796285533", "message": "Adding 2 node(s) of type cpu_worker."},
              {"ts": "1796285669", "message": QUOTA}, {"ts": "1796285705", "message": QUOTA},
              {"ts": "1796285699", "message": "Removing 1 nodes of type ghost_worker (lost contact with raylet)."},
              {"ts": "1796285700", "message": "Failed to launch 2 node(s) of type cpu_worker."}]
    summary = _launch_events(events)
    quota = next(f for f in summary["failed"] if f["node_type"] == "quota_worker")
    assert (quota["times"], quota["first"], quota["last"], quota["category"]) == (
        2, "1796285669", "1796285705", "QuotaExceeded")
    assert quota["reason"] == "Quota 'CPUS' exceeded. Limit: 8.0 in region us-west-2."
    plain = next(f for f in summary["failed"] if f["node_type"] == "cpu_worker")
    assert plain["reason"] is None and plain["nodes"] == 2  # a plain exception: no reason
    assert summary["removed"] == [{"node_type": "ghost_worker", "count": 1,
                                   "cause": "lost contact with raylet", "ts": "1796285699"}]


def test_v1_monitor_log_summary_lines_keep_their_time(tmp_path):
    log = tmp_path / "monitor.log"
    log.write_text("2026-12-03 08:04:39,292\tINFO monitor.py:438 -- :event_summary:" + QUOTA + "\n"
                   "2026-12-03 08:04:39,292\tINFO autoscaler.py:469 -- unrelated\n")
    lines, terminated = monitor_log(str(log), 10_000)
    assert len(lines) == 1 and lines[0]["message"] == QUOTA and lines[0]["ts"].isdigit()
    assert terminated == []


def test_v1_terminations_are_read_from_its_monitor_log_and_tied_to_the_dead_node(tmp_path):
    """v1 drains a node without a reason (the GCS records "Terminated by autoscaler."): its
    monitor.log line is where "(idle)" is said; the provider's id is the Ray node id on the fake
    provider, its ip the node's address on a cloud."""
    from rldoctor.cluster.autoscaler import assemble

    log = tmp_path / "monitor.log"
    fake = "f" * 51 + "00001"
    log.write_text(
        "2026-12-05 19:40:01,123\tINFO autoscaler.py:596 -- StandardAutoscaler: Terminating the "
        f"node with id {fake} and ip 192.0.2.2. (idle)\n"
        "2026-12-05 19:41:01,123\tINFO autoscaler.py:596 -- StandardAutoscaler: Terminating the "
        "node with id i-0abc and ip 10.0.0.7. (max workers)\n")
    events, terminated = monitor_log(str(log), 10_000)
    assert events == []
    assert [(t["id"], t["ip"], t["reason"]) for t in terminated] == [
        (fake, "192.0.2.2", "idle"), ("i-0abc", "10.0.0.7", "max workers")]
    nodes = [{"node_id": fake, "ip": "127.0.0.1", "alive": False},
             {"node_id": "b" * 56, "ip": "10.0.0.7", "alive": False},
             {"node_id": "c" * 56, "ip": "10.0.0.7", "alive": True}]
    section = assemble({}, {"monitor": {"pid": 1, "entrypoint": "v1", "config_path": "x"},
                            "terminated": terminated}, None, nodes, now=0)
    assert [(t["node_id"], t["reason"]) for t in section["terminated_nodes"]] == [
        (fake, "idle"), ("b" * 56, "max workers")]
    assert "no monitor process" not in section["decided_from"], section["decided_from"]


def test_v1_request_resources_bundles_are_counted_by_shape():
    raw = json.dumps([{"CPU": 1, "custom_accel": 1}, {"CPU": 1, "custom_accel": 1}, {"GPU": 1}]).encode()
    assert v1_request_resources(raw) == [{"shape": {"CPU": 1.0, "custom_accel": 1.0}, "count": 2},
                                         {"shape": {"GPU": 1.0}, "count": 1}]
    assert v1_request_resources(b"[]") == [] and v1_request_resources(None) == []


def test_v1_status_reason_of_a_refused_launch():
    status = {"time": 100.0, "autoscaler_report": {
        "active_nodes": {"cpu_worker": 2}, "pending_launches": {"quota_worker": 1},
        "pending_nodes": [], "failed_nodes": [],
        "node_availability_summary": {"node_availabilities": {"quota_worker": {
            "node_type": "quota_worker", "is_available": False, "last_checked_timestamp": 99,
            "unavailable_node_information": {"category": "QuotaExceeded",
                                             "description": "Quota 'CPUS' exceeded."}}}}}}
    v1 = _v1({"status": json.dumps(status).encode()}, now=110.0)
    assert v1["status_age_s"] == 10.0 and v1["pending_launches"] == [{"node_type": "quota_worker", "count": 1}]
    assert v1["unavailable_types"][0]["category"] == "QuotaExceeded"


def test_kubernetes_quantities():
    assert quantity("500m") == 0.5 and quantity("1") == 1 and quantity(2) == 2
    assert quantity("5Gi") == 5 * 2**30 and quantity("1G") == 10**9 and quantity("x") is None


def test_v2_launch_failures_are_read_from_its_monitor_log(tmp_path):

    log = tmp_path / "monitor.log"
    log.write_text("2026-12-03 10:54:26,754\tINFO node_provider.py:491 -- Failed to launch 1 nodes of "
                   "type quota_worker: Node Launch Exception (QuotaExceeded): Quota 'CPUS' exceeded. "
                   "Limit: 8.0 in region us-west-2.\n")
    summary = _launch_events(monitor_log(str(log), 10_000)[0])
    assert summary["failed"][0]["category"] == "QuotaExceeded"
    assert summary["failed"][0]["reason"] == "Quota 'CPUS' exceeded. Limit: 8.0 in region us-west-2."


def test_cluster_status_reply_as_a_dict_with_the_messages_own_api():
    from ray.core.generated.autoscaler_pb2 import GetClusterStatusReply

    from rldoctor.cluster.private import message_dict

    reply = GetClusterStatusReply()
    node = reply.cluster_resource_state.node_states.add()
    node.node_id, node.ray_node_type_name, node.idle_duration_ms = b"\xff\x01", "cpu_worker", 5
    node.total_resources["CPU"] = 1
    failed = reply.autoscaling_state.failed_instance_requests.add()
    failed.ray_node_type_name, failed.reason, failed.count = "q", "Quota", 1
    assert message_dict(reply) == {
        "cluster_resource_state": {"node_states": [{"node_id": "ff01", "ray_node_type_name": "cpu_worker",
                                                    "total_resources": {"CPU": 1.0}, "idle_duration_ms": 5}]},
        "autoscaling_state": {"failed_instance_requests": [{"ray_node_type_name": "q", "reason": "Quota",
                                                            "count": 1}]}}


def test_rld109_before_it_happens_on_ray_240_only_for_nodes_it_may_scale_down():
    """The recorded Ray 2.40 cluster (a paused training on a worker node where it holds no
    resource): warned; not on Ray 2.41 and later (a live actor keeps its node), not on a node of
    a type at its min_workers, not on a node the autoscaler did not launch."""
    import copy

    from conftest import FIXTURES
    from rldoctor.checks.cluster.autoscaler import nodes_removed_under_training
    from rldoctor.snapshot import Snapshot

    recorded = json.loads((FIXTURES / "autoscaler-idle-ray240-pause.json").read_text())

    def warned(data):
        return [f for f in nodes_removed_under_training(Snapshot(data), {})
                if "hold no resource there" in f.message]

    assert len(warned(recorded)) == 1
    newer = copy.deepcopy(recorded)
    newer["cluster"]["ray_version"] = "2.41.0"
    assert warned(newer) == []
    at_min = copy.deepcopy(recorded)
    for t in at_min["autoscaler"]["node_types"]:
        if t["name"] == "cpu_worker":
            t["min_workers"] = 1
    assert warned(at_min) == []
    by_hand = copy.deepcopy(recorded)
    by_hand["autoscaler"]["node_states"] = [s for s in by_hand["autoscaler"]["node_states"]
                                            if s["node_type"] != "cpu_worker"]
    assert warned(by_hand) == []


def test_rld109_counts_the_env_runners_of_an_algorithm_lost_with_the_node_wherever_they_ran():
    """Recorded: both env runners on the head, the algorithm on the node v1 removed; they died
    as OWNER_DIED and REF_DELETED, and both are the removal's."""
    from conftest import FIXTURES
    from rldoctor.checks.cluster.autoscaler import nodes_removed_under_training
    from rldoctor.snapshot import Snapshot

    data = json.loads((FIXTURES / "autoscaler-idle-ray240-runners-elsewhere.json").read_text())
    [found] = list(nodes_removed_under_training(Snapshot(data), {}))
    assert "terminated by the autoscaler as idle" in found.message
    assert "2 env runner(s) and 1 other RLlib actor(s) lost with it" in found.message, found.message
    assert sorted(m["role"] for m in found.evidence["lost"]) == ["algorithm", "env runner", "env runner"]


def test_rld108_and_rld109_fixes_are_their_tables_cases_the_idle_by_resources_one_joined():
    """Each RLD108 finding's fix is its cause's case (no autoscaler included, a path no
    recorded fixture takes), and RLD109's warning before a node with no resource in use is
    removed is its own case joined with the removal's: what `explain` prints, filled in."""
    import copy

    from conftest import FIXTURES
    from rldoctor.checks.cluster.autoscaler import nodes_removed_under_training, scale_up_blocked
    from rldoctor.engine.registry import fix_pattern
    from rldoctor.snapshot import Snapshot

    blocked = json.loads((FIXTURES / "autoscaler-blocked-v1.json").read_text())
    none_runs = copy.deepcopy(blocked)
    none_runs["autoscaler"]["running"] = False
    for data in (blocked, none_runs):
        found = list(scale_up_blocked(Snapshot(data), {}))
        assert found and all(fix_pattern(scale_up_blocked.fixes).fullmatch(f.fix) for f in found)
    [nothing_adds] = [f for f in scale_up_blocked(Snapshot(none_runs), {}) if f.subject == "autoscaler"]
    assert nothing_adds.fix in scale_up_blocked.fixes.values() and "Nothing adds nodes" in nothing_adds.fix

    paused = json.loads((FIXTURES / "autoscaler-idle-ray240-pause.json").read_text())
    [early] = [f for f in nodes_removed_under_training(Snapshot(paused), {})
               if "hold no resource there" in f.message]
    removed, resource = nodes_removed_under_training.fixes.values()
    assert early.fix == f"{resource} {removed}" and len(nodes_removed_under_training.fixes) == 2
