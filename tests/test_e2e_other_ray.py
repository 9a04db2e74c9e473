"""End to end: a cluster of another Ray release, diagnosed through its dashboard address.

A 3-node cluster started from a venv of Ray 2.40.0, then one of 2.55.0 (tests/ray_venvs.py: built once per
machine, cached outside the clone), with a detached actor that crash-loops on one node.
rldoctor (the pinned Ray on this side) reaches it only over HTTP: the collectors run inside
the cluster as a job with the cluster's own Ray, and the report lists every node
with its version, names the crash loop (RLD401) on the right actor, fits its security fix
to a Ray without token authentication, and leaves no job and no probe actor behind.

A live PPO job of the cluster's own release (tests/ppo_job.py run by the venv's Python: its
RLlib, its API) whose env runner 1 blocks forever in `env.step()` is diagnosed as RLD605 with
the frame it is stuck in (taken by py-spy inside the cluster), through the dashboard address
and through the GCS address alike.

`rldoctor preflight` of a CartPole config against that release's cluster, through both
addresses: every preflight check runs, with the probes in the cluster's own Ray, and a config
asking for more env runners than the cluster holds fails.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request

import pytest

from conftest import PPOJob, run_rldoctor
from localcluster import LocalCluster, NodeSpec
from faults import PIN_BY_AFFINITY, actor_that_crashes_three_times
from ray_venvs import ray_venv
from test_e2e_dashboard import assert_no_output_left
from test_e2e_preflight import CONFIGS, one, preflight

pytestmark = pytest.mark.cluster

VERSIONS = ("2.40.0", "2.55.0")  # the oldest supported, and one 2.5x with token auth

LEFTOVERS = """
import json
from ray.util.state import list_actors
alive = [a for a in list_actors(limit=10000, raise_on_missing_output=False)
         if (a.ray_namespace or "").startswith("rldoctor-") and a.state != "DEAD"]
print("=>", len(alive))
"""


@pytest.fixture(scope="module", params=VERSIONS)
def cluster(request):
    bin_dir = ray_venv(request.param)
    with LocalCluster([NodeSpec() for _ in range(3)], token_auth=False, bin_dir=bin_dir) as made:
        made.ray_version = request.param
        yield made


@pytest.fixture(scope="module")
def crash_loop(cluster):
    return actor_that_crashes_three_times(cluster, cluster.nodes[2].node_id, pin=PIN_BY_AFFINITY)


@pytest.fixture(scope="module")
def hung_training(cluster):
    """The cluster's own RLlib, 2 env runners, runner 1 stuck in step() after 50 steps.

    Started before the first test of the module, so that its runner has been stuck long
    enough (RLD605's 20 s floor) by the time the test that diagnoses it runs."""
    with PPOJob(cluster, "--runners", "2", "--hang-runner", "1", env=cluster.client_env()) as job:
        yield job


def _nothing_left_behind(cluster, report: dict | None = None) -> None:
    """No rldoctor job in the cluster's job list, no rldoctor actor alive, and no copy of
    the job's output (`report`'s) in the head's logs folder."""
    with urllib.request.urlopen(cluster.dashboard_url + "/api/jobs/", timeout=10) as resp:
        assert [j for j in json.load(resp) if (j.get("submission_id") or "").startswith("rldoctor-")] == []
    assert cluster.run_driver(LEFTOVERS).strip() == "0"
    if report is not None:
        assert_no_output_left(cluster, report["source"]["job"])


def laptop_env(cluster) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(cluster.home)
    return env


def test_preflight_with_that_releases_own_ray_through_both_addresses(cluster):
    """The first test of the module: the healthy config asks for the 3 CPUs the cluster has,
    which the PPO job of the tests below (hung_training) then holds 2 of."""
    VERSION = cluster.ray_version
    preflights = {"RLD90" + str(i) for i in range(1, 8)}
    for address in (cluster.dashboard_url, cluster.address):
        result, report = preflight(cluster, f"{CONFIGS}:healthy", address=address)
        assert result.code == 0, result
        assert [f for f in report["findings"] if f["severity"] in ("warn", "fail")] == [], result
        ran = {c["code"]: c for c in report["checks"] if c["code"] in preflights}
        assert set(ran) == preflights, report["checks"]
        assert {c["status"] for c in ran.values()} == {"ok"}, ran
        # every node answered: the env built on each (RLD902's note names them)
        [built] = ran["RLD902"]["notes"]
        assert sorted(built["evidence"]["nodes"]) == sorted(n.node_id[:8] for n in cluster.nodes)
        # the probes ran inside the cluster, with its own Ray
        assert report["source"]["path"] == "dashboard", report["source"]
        assert report["source"]["cluster_ray_version"] == VERSION, report["source"]
        assert any(f"with the cluster's own Ray {VERSION}" in n for n in report["notes"]), report["notes"]
        assert not [f for f in report["findings"] if f["code"] == "RLD102"], report["findings"]
    assert any("went through the cluster's dashboard" in n for n in report["notes"]), report["notes"]
    result, report = preflight(cluster, f"{CONFIGS}:too_many_runners", address=cluster.dashboard_url)
    assert result.code == 1, result
    finding = one(report, "RLD901")
    assert finding["severity"] == "fail" and "never placeable" in finding["message"], finding
    assert "asks for {CPU: 41} in all; the cluster has {CPU: 3" in finding["message"], finding
    _nothing_left_behind(cluster, report)


def test_a_cluster_of_another_ray_through_its_dashboard(cluster, crash_loop, hung_training,
                                                        tmp_path):
    VERSION = cluster.ray_version
    out = tmp_path / "report.json"
    result = run_rldoctor("check", "--address", cluster.dashboard_url, "--format", "json",
                          "--output", str(out), env=laptop_env(cluster))
    assert result.code in (0, 1), result
    report = json.loads(out.read_text())
    assert report["source"]["path"] == "dashboard"
    assert report["source"]["cluster_ray_version"] == VERSION
    rows = report["cluster"]["rows"]
    assert {r["node_id"] for r in rows} == {n.node_id for n in cluster.nodes}
    assert report["cluster"]["ray_version"] == VERSION
    # measured inside the cluster: the probes ran on every node of the old release
    assert all(r["rtt_p50_ms"] is not None for r in rows), rows
    [restarts] = [f for f in report["findings"] if f["code"] == "RLD401"]
    assert crash_loop in restarts["subject"], restarts
    assert cluster.nodes[2].node_id in json.dumps(restarts["evidence"])
    # no finding about the laptop's Ray differing from the cluster's
    assert not [f for f in report["findings"] if f["code"] == "RLD102"], report["findings"]
    [auth] = [f for f in report["findings"] if f["code"] == "RLD701"]
    if VERSION < "2.52":
        assert f"Ray {VERSION}, which has no token authentication" in auth["fix"]
    else:
        assert "ray get-auth-token --generate" in auth["fix"]
    _nothing_left_behind(cluster, report)


def test_its_gcs_address_goes_through_the_dashboard_on_its_own(cluster, crash_loop, tmp_path):
    out = tmp_path / "report.json"
    result = run_rldoctor("check", "--address", cluster.address, "--format", "json",
                          "--output", str(out), env=laptop_env(cluster))
    assert result.code in (0, 1), result
    report = json.loads(out.read_text())
    assert report["source"]["path"] == "dashboard", report["source"]
    assert any("went through the cluster's dashboard" in n and cluster.ray_version in n
               for n in report["notes"]), report["notes"]
    [restarts] = [f for f in report["findings"] if f["code"] == "RLD401"]
    assert crash_loop in restarts["subject"]
    assert not [f for f in report["findings"] if f["code"] == "RLD102"], report["findings"]
    _nothing_left_behind(cluster, report)


def _stacks_taken(findings: list[dict]) -> bool:
    return bool(findings) and all(f["evidence"].get("user_frames") for f in findings)


def _hung_runner_finding(cluster, timeout_s: float = 150, address: str | None = None,
                         *args: str) -> tuple[dict, dict]:
    """Check until RLD605 names a runner (the hang needs its 20 s) with its stack taken: on a
    loaded 2-core host a probe of this release can start later than its peers' grace (the
    finding then says "its stack could not be taken: no probe on the node"), which is the
    honest report of that run, not the one this test is about."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = run_rldoctor("check", "--address", address or cluster.dashboard_url,
                              "--format", "json", *args, env=laptop_env(cluster))
        assert result.code in (0, 1), result
        if _stacks_taken(result.findings("RLD605")) or time.monotonic() > deadline:
            return result, result.findings("RLD605")
        time.sleep(3)


def _assert_hung_runner_named_with_its_frame(report: dict, findings: list[dict]) -> None:
    [finding] = findings
    [training] = report["training"]
    runners = {m["actor_id"]: m for m in training["runners"]}
    assert len(runners) == 2, training
    # a bare algo.train() loop in its driver: named from what the cluster shows
    assert (training["algorithm"], training["env"]) == ("PPO", "user_cartpole"), training
    assert "PPO in its driver" in finding["message"]
    hung = runners[finding["subject"][len("actor:"):]]
    evidence = finding["evidence"]
    assert evidence["pid"] == hung["pid"] and evidence["node_id"] == hung["node_id"]
    assert "UserCartPole.step (ppo_job.py:" in finding["message"], finding["message"]
    assert any(f["function"] == "UserCartPole.step" and f["file"].endswith("ppo_job.py")
               for f in evidence["user_frames"]), evidence
    assert hung["stuck_in"].startswith("UserCartPole.step")
    # the healthy runner is not named
    assert [m for m in runners.values() if m["stuck_in"]] == [hung]


def test_a_live_training_of_that_release_stuck_in_env_step(cluster, hung_training, tmp_path):
    result, findings = _hung_runner_finding(cluster)
    report = result.json()
    assert report["source"]["path"] == "dashboard"
    _assert_hung_runner_named_with_its_frame(report, findings)
    # the same through the GCS address (which goes through the dashboard on its own); RLD608
    # judges runners of any age here, so whether it could compare them does not depend on
    # how fast the machine got the runners to 30 s (its default min_age_s)
    result, findings = _hung_runner_finding(cluster, 90, cluster.address,
                                            "--set", "RLD608.min_age_s=0")
    _assert_hung_runner_named_with_its_frame(result.json(), findings)
    [throughput] = [c for c in result.json()["checks"] if c["code"] == "RLD608"]
    if cluster.ray_version < "2.5":  # no env-step counter in this RLlib: said, not hidden
        assert "were not compared live" in throughput["detail"], throughput
        assert f"Ray {cluster.ray_version}" in throughput["detail"], throughput
    assert hung_training.proc.poll() is None  # rldoctor never called into the training
    _nothing_left_behind(cluster, result.json())
