"""End to end: the real `rldoctor` CLI against a real 3-node Ray cluster with token auth.

The tests in this module share one cluster and run in file order: healthy first,
then an infeasible actor, then a worker node killed with SIGKILL.
"""

from __future__ import annotations

import json
import time

import pytest

from conftest import run_driver, run_rldoctor, wait_for_findings

pytestmark = pytest.mark.cluster


def test_healthy_cluster_gives_exit_0_and_no_warn_or_fail(cluster3):
    result = run_rldoctor("check", "--address", cluster3.address, "--format", "json",
                          env=cluster3.client_env())
    assert result.code == 0, result
    report = result.json()
    assert report["schema"] == "rldoctor.report/v1"
    assert report["summary"]["status"] == "ok"
    assert [f for f in report["findings"] if f["severity"] in ("warn", "fail")] == []
    statuses = {c["code"]: c["status"] for c in report["checks"]}
    # cluster, network, memory, workers, security, and the live trainings (none here)
    live = {code for code in statuses if code[3] in "12347"} | {"RLD605", "RLD606", "RLD608"}
    assert live >= {"RLD101", "RLD102", "RLD103", "RLD201", "RLD202", "RLD203", "RLD301",
                    "RLD302", "RLD303", "RLD304", "RLD401", "RLD402", "RLD403", "RLD701",
                    "RLD702"}
    assert report["training"] == []  # a live check always says which trainings it found
    assert {statuses[code] for code in live} == {"ok"}, report["checks"]
    # What a live check does not collect is skipped, saying what would fill it.
    details = {c["code"]: c["detail"] for c in report["checks"] if c["status"] == "skipped"}
    assert set(details) == set(statuses) - live
    assert "--target" in details["RLD501"] and "smoke-train" in details["RLD601"]


def test_snapshot_sees_every_node_with_versions_and_zone(cluster3, tmp_path):
    out = tmp_path / "snap.json"
    result = run_rldoctor("collect", "--output", str(out), "--address", cluster3.address,
                          env=cluster3.client_env())
    assert result.code == 0, result
    snap = json.loads(out.read_text())
    assert snap["schema"] == "rldoctor.snapshot/v1"
    ids = {n.node_id for n in cluster3.nodes}
    assert {n["node_id"] for n in snap["nodes"]} == ids
    assert all(n["alive"] and n["labels"]["ray.io/availability-zone"] == "zone-a"
               for n in snap["nodes"])
    assert set(snap["versions"]["nodes"]) == ids
    for versions in snap["versions"]["nodes"].values():
        assert versions["ray"] == "2.60.0" and versions["rllib"] == "2.60.0"
        assert versions["torch"].startswith("2.13.0") and versions["gymnasium"]
    assert set(snap["network"]["nodes"]) == ids
    assert all(entry["p50_ms"] > 0 for entry in snap["network"]["nodes"].values())
    assert snap["network"]["baseline_node_id"] in ids
    assert snap["collectors"]["network"]["duration_s"] < 3.0
    assert set(snap["object_store"]["nodes"]) == ids and set(snap["hosts"]) == ids
    assert snap["cluster"]["auth_mode"] == "token"
    assert snap["cluster"]["state_api"] is True
    heads = [n for n in snap["nodes"] if n["is_head"]]
    assert [h["node_id"] for h in heads] == [cluster3.nodes[0].node_id]


def test_token_cluster_on_loopback_has_no_security_finding(cluster3, tmp_path):
    """Ray's GCS, raylets and workers listen on every interface even here; with token
    authentication on that is Ray's design, counted in RLD702's notes, not reported."""
    snap_path = tmp_path / "snap.json"
    collected = run_rldoctor("collect", "--output", str(snap_path), "--address", cluster3.address,
                             env=cluster3.client_env())
    assert collected.code == 0, collected
    result = run_rldoctor("check", "--from", str(snap_path), "--only", "RLD701,RLD702",
                          "--format", "json")
    assert result.code == 0 and result.findings() == [], result
    checks = {c["code"]: c for c in result.json()["checks"]}
    assert checks["RLD701"]["status"] == checks["RLD702"]["status"] == "ok"
    [quiet] = checks["RLD702"]["notes"]
    assert f"[::]:{cluster3.gcs_port} GCS" in quiet["evidence"]["ports"][cluster3.nodes[0].node_id]
    snap = json.loads(snap_path.read_text())
    ours = set(cluster3.processes())
    for node in cluster3.nodes:
        table = snap["hosts"][node.node_id]["listening"]
        assert table["status"] == "ok", table
        assert {s["pid"] for s in table["sockets"]} <= ours
        roles = {s["role"] for s in table["sockets"]}
        assert {"raylet", "dashboard_agent"} <= roles
        assert ("gcs" in roles) == (node.index == 0)
    dashboard = [s for s in snap["hosts"][cluster3.nodes[0].node_id]["listening"]["sockets"]
                 if s["port"] == cluster3.dashboard_port]
    assert [s["address"] for s in dashboard] == ["127.0.0.1"]


def test_probes_run_on_a_node_without_rldoctor(cluster3, tmp_path):
    """Node 1 cannot import rldoctor, yet its versions were read: probes travel by value."""
    node1 = cluster3.nodes[1].node_id
    out = run_driver(cluster3, (
        "@ray.remote(num_cpus=0)\n"
        "def try_import():\n"
        "    try:\n        import rldoctor\n        return 'importable'\n"
        "    except ImportError as exc:\n        return 'blocked'\n"
        f"print('=>', ray.get(try_import.options(label_selector={{'ray.io/node-id': {node1!r}}}).remote()))\n"))
    assert out.strip() == "blocked"
    snap = tmp_path / "snap.json"
    result = run_rldoctor("collect", "--address", cluster3.address, "--output", str(snap),
                          env=cluster3.client_env())
    assert result.code == 0, result
    versions = json.loads(snap.read_text())["versions"]
    assert versions["failed"] == {}
    assert versions["nodes"][node1]["ray"] == "2.60.0"


# A driver that publishes a cluster error event every 0.5 s for 8 s (Ray's listener subscribes
# in a thread of its own, some time after init: an event published before is lost), stopping
# once it is printed, then waits 3 s more.
RELAYED = """
import sys, time
{join}
import ray
from ray._private.utils import publish_error_to_driver

class Stdout:
    printed = False
    def __init__(self, stream):
        self.stream = stream
    def write(self, text):
        Stdout.printed = Stdout.printed or "RELAYED-EVENT" in text
        return self.stream.write(text)
    def __getattr__(self, name):
        return getattr(self.stream, name)

sys.stdout = Stdout(sys.stdout)
deadline = time.monotonic() + 8
while not Stdout.printed and time.monotonic() < deadline:
    publish_error_to_driver("rldoctor_test", "RELAYED-EVENT: a node was marked dead",
                            ray._private.worker.global_worker.gcs_client)
    time.sleep(0.5)
time.sleep(3)
sys.stdout.write("END\\n")
"""


@pytest.mark.parametrize("join, relayed", [
    ("import ray, logging; ray.init(address=sys.argv[1], log_to_driver=False, "
     "logging_level=logging.ERROR)", True),  # what Ray does to any driver
    ("from rldoctor.cluster.connect import join; join(sys.argv[1])", False),
])
def test_cluster_events_never_reach_rldoctors_stdout(cluster3, join, relayed):
    """Ray prints the cluster's error events ("(raylet) The node ... has been marked dead")
    to every driver's stdout, at any moment until it exits: rldoctor's driver does not."""
    import subprocess
    import sys

    code = RELAYED.format(join=join)
    proc = subprocess.run([sys.executable, "-c", code, cluster3.address], capture_output=True,
                          text=True, env=cluster3.client_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.endswith("END\n"), proc.stdout
    assert ("RELAYED-EVENT" in proc.stdout) is relayed, proc.stdout


def test_private_ray_calls_still_work_on_this_ray(cluster3):
    """Each function of rldoctor.cluster.private against the pinned Ray."""
    out = run_driver(cluster3, (
        "import json\n"
        "from rldoctor.cluster import private\n"
        "per_node = private.available_resources_per_node()\n"
        "demands = private.resource_demands(ray.get_runtime_context().gcs_address, 5)\n"
        "stats = {n['NodeID']: private.raylet_node_stats(n['NodeManagerAddress'], "
        "n['NodeManagerPort'], 5) for n in ray.nodes()}\n"
        "import os\n"
        "modes = [private.auth_mode_in_effect()]\n"
        "os.environ['RAY_AUTH_MODE'] = 'disabled'; private.refresh_auth_config()\n"
        "modes.append(private.auth_mode_in_effect())\n"
        "os.environ['RAY_AUTH_MODE'] = 'token'; private.refresh_auth_config()\n"
        "modes.append(private.auth_mode_in_effect())\n"
        "scaler = private.autoscaler_state(ray.get_runtime_context().gcs_address, 5)\n"
        "scaler = {'flag': repr(scaler['v2_flag']), 'v1': sorted(scaler['v1']), "
        "'nodes': len(scaler['cluster_status']['cluster_resource_state']['node_states'])}\n"
        "print('=>', json.dumps({'per_node': per_node, 'demands': demands, 'stats': stats, "
        "'modes': modes, 'scaler': scaler}))\n"))
    found = json.loads(out.strip())
    assert found["modes"] == ["token", "disabled", "token"]  # refresh_auth_config takes effect
    assert set(found["stats"]) == {n.node_id for n in cluster3.nodes}
    for stats in found["stats"].values():
        assert stats["store"]["object_store_bytes_avail"] == 100 * 2**20  # the capacity
        assert "spilled_bytes_total" in stats["store"]
    assert set(found["per_node"]) == {n.node_id for n in cluster3.nodes}
    assert all(v["CPU"] == 1.0 for v in found["per_node"].values())
    assert set(found["demands"]) >= {"task_actor", "placement_groups"}
    # the autoscaler's state: the v2 flag the GCS wrote (no autoscaler here: v1's default),
    # v1's keys, and the cluster status reply with every node's state
    assert found["scaler"] == {"flag": "b'0'", "v1": ["error", "request_resources", "status"],
                               "nodes": 3}, found["scaler"]
    env = cluster3.client_env()
    code = ("from rldoctor.cluster.private import resolve_local_address\n"
            "print(resolve_local_address('auto'))\n")
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.stdout.strip().endswith(f":{cluster3.gcs_port}"), proc.stderr


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_probe_fan_out_answers_every_call_once_within_its_timeout(cluster3):
    """fleet.ask, the one fan-out to the probes (facts, stacks, bundle host facts, Tune tails,
    port listeners and connects, ping rounds): an answer per call, ok, raised, timed out or
    without a probe, each with its own duration, never longer than asked."""
    ids = [n.node_id for n in cluster3.nodes]
    out = run_driver(cluster3, (
        "import json, os, time\n"
        "from rldoctor.cluster.session import Budget\n"
        "from rldoctor.cluster.fleet import Fleet\n"
        f"ids = {ids!r}\n"
        "fleet = Fleet()\n"
        "fleet.start(ids)\n"
        "fleet.gather(Budget(60))\n"
        "calls = {f'pid:{n}': (n, 'call_here', os.getpid) for n in ids}\n"
        "calls['missing'] = ('ff' * 28, 'call_here', os.getpid)\n"
        "calls['raises'] = (ids[1], 'call_here', int, 'not a number')\n"
        "calls['slow'] = (ids[2], 'call_here', time.sleep, 30)\n"
        "calls['nap'] = (ids[0], 'call_here', time.sleep, 1.5)\n"
        "t = time.monotonic()\n"
        "answers = fleet.ask(calls, 4.0)\n"
        "took = time.monotonic() - t\n"
        "fleet.shutdown()\n"
        "print('=>', json.dumps({'took': took, 'facts': sorted(fleet.facts), 'answers': "
        "{k: [a.kind, a.node_id, a.error, a.value, a.took_s] for k, a in answers.items()}}))\n"))
    found = json.loads(out.strip())
    answers = found["answers"]
    assert found["facts"] == sorted(ids)  # the facts round itself went through the same fan-out
    assert set(answers) == {f"pid:{n}" for n in ids} | {"missing", "raises", "slow", "nap"}
    for n in ids:
        kind, node, error, pid, took_s = answers[f"pid:{n}"]
        assert (kind, node, error) == ("ok", n, None) and pid > 0
        assert took_s < 1.0  # its own time, not the slowest call's (a ping's round trip)
    assert answers["nap"][0] == "ok" and 1.4 < answers["nap"][4] < 3.0
    assert len({answers[f"pid:{n}"][3] for n in ids}) == 3  # one probe per node, each its own
    assert answers["missing"][:2] == ["no_probe", "ff" * 28]
    assert answers["raises"][0] == "error" and "ValueError" in answers["raises"][2]
    assert answers["slow"][0] == "timeout"
    assert 3.5 < found["took"] < 8.0  # waited for the slow call, and only as long as asked


def test_auto_address_finds_the_cluster_on_this_machine(cluster3):
    result = run_rldoctor("check", "--address", "auto", "--format", "json", env=cluster3.client_env())
    assert result.code == 0, result
    assert result.json()["source"]["address"].endswith(f":{cluster3.gcs_port}")


def test_token_never_appears_in_any_output(cluster3, tmp_path):
    token = cluster3.token
    env = cluster3.client_env()
    texts = []
    for fmt in ("table", "json", "markdown"):
        r = run_rldoctor("check", "--address", cluster3.address, "--format", fmt, env=env)
        assert r.code == 0, r
        texts += [r.stdout, r.stderr]
    snap = tmp_path / "snap.json"
    r = run_rldoctor("collect", "--output", str(snap), "--address", cluster3.address, env=env)
    texts += [r.stdout, r.stderr, snap.read_text()]
    # The token reached rldoctor as an environment variable too: still never printed.
    env_with_token = {**env, "RAY_AUTH_TOKEN": token}
    env_with_token.pop("RAY_AUTH_TOKEN_PATH")
    r = run_rldoctor("check", "--address", cluster3.address, "--format", "json", env=env_with_token)
    assert r.code == 0, r
    texts += [r.stdout, r.stderr]
    assert all(token not in t for t in texts)


def test_cluster_with_token_auth_refuses_rldoctor_without_token(cluster3):
    env = cluster3.client_env()
    env.pop("RAY_AUTH_TOKEN_PATH")
    env["HOME"] = "/nonexistent-home"  # no ~/.ray/auth_token either
    env["RAY_AUTH_MODE"] = "token"
    result = run_rldoctor("check", "--address", cluster3.address, env=env, timeout=60)
    assert result.code == 3, result
    assert len(result.stderr.strip().splitlines()) == 1, result
    assert "token" in result.stderr and "Traceback" not in result.stderr
    # With no auth mode chosen and no token anywhere, Ray keeps retrying the refusal:
    # still one line about the token, within 15 s.
    env.pop("RAY_AUTH_MODE")
    result = run_rldoctor("check", "--address", cluster3.address, env=env, timeout=60)
    assert result.code == 3 and result.seconds < 15, result
    assert "token authentication" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_infeasible_actor_gives_rld103_naming_the_actor(cluster3):
    actor_id = run_driver(cluster3, (
        "@ray.remote(resources={'no_such_accelerator': 1})\n"
        "class NeedsAccelerator:\n    pass\n"
        "a = NeedsAccelerator.options(name='hungry', lifetime='detached', namespace='e2e').remote()\n"
        "print('=>', a._actor_id.hex())\n")).strip()
    result, found = wait_for_findings(cluster3, "RLD103")
    assert result.code == 1, result
    assert len(found) == 1, found
    finding = found[0]
    assert finding["severity"] == "fail"
    assert finding["subject"] == f"actor:{actor_id}"
    assert "NeedsAccelerator" in finding["message"] and "'hungry'" in finding["message"]
    assert "infeasible" in finding["message"]
    assert finding["evidence"]["shape"]["no_such_accelerator"] == 1.0
    assert "no_such_accelerator" in finding["fix"]
    # Nothing else is wrong with the cluster; RLD108 only says, at info, that no autoscaler
    # runs while the demand waits (issue 33: that is one of its causes, never a warn).
    others = [f for f in result.findings() if f["code"] != "RLD103"]
    assert all(f["code"] == "RLD108" and f["severity"] == "info" and "no autoscaler" in f["message"]
               for f in others), others
    run_driver(cluster3, "ray.kill(ray.get_actor('hungry', namespace='e2e'))\n")


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_worker_node_killed_gives_rld101_naming_it(cluster3):
    killed = cluster3.kill_node(2)
    assert killed
    deadline = time.monotonic() + 60
    while True:
        result = run_rldoctor("check", "--address", cluster3.address, "--format", "json",
                              env=cluster3.client_env(), timeout=60)
        assert result.seconds < 30, result  # never hangs on the dead node
        found = [f for f in result.findings("RLD101") if f["subject"] == f"node:{killed}"]
        # Before the GCS gives up on the node, RLD101 already reports it from its silence;
        # once the GCS marks it dead, Ray's own death reason is there.
        assert found, result
        if "death_reason" in found[0]["evidence"] or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert result.code == 1, result
    assert found and found[0]["severity"] == "fail", result
    finding = found[0]
    assert finding["evidence"]["death_reason"] == "UNEXPECTED_TERMINATION"
    assert "heartbeat" in finding["evidence"]["death_message"]
    assert killed[:12] in finding["message"]
    assert "raylet.out" in finding["fix"]
    other_nodes = {n.node_id for n in cluster3.nodes} - {killed}
    assert not [f for f in result.findings("RLD101") if f["subject"] in
                {f"node:{n}" for n in other_nodes}]
