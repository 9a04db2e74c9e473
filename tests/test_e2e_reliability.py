"""A doctor is run when things are already broken: it must not hang, crash, lie by
omission or make the patient worse. Real clusters, real signals, real faults.

Tests in the `faults` cluster run in file order; the last one kills a node.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from conftest import RLDOCTOR, PPOJob, interruptible, run_rldoctor
from localcluster import LocalCluster, NodeSpec, frozen

pytestmark = pytest.mark.cluster

LEFTOVERS = """
from ray.util.state import list_actors, list_placement_groups, list_tasks
addr = {dashboard!r}
actors = [a for a in list_actors(address=addr, limit=10000, raise_on_missing_output=False)
          if (a.ray_namespace or "").startswith("rldoctor-") and a.state != "DEAD"]
groups = [g for g in list_placement_groups(address=addr, raise_on_missing_output=False)
          if g.state != "REMOVED"]
tasks = [t for t in list_tasks(address=addr, limit=10000, raise_on_missing_output=False)
         if t.name.startswith("rldoctor") and t.state not in ("FINISHED", "FAILED")]
print("=>", json.dumps({{"actors": len(actors), "placement_groups": len(groups), "tasks": len(tasks)}}))
"""


def leftovers(cluster: LocalCluster) -> dict:
    """rldoctor's actors, tasks and placement groups still alive, through Ray's state API."""
    out = cluster.run_driver("import json\n" + LEFTOVERS.format(dashboard=cluster.dashboard_url))
    return json.loads(out)


def probes_running(cluster: LocalCluster) -> bool:
    """Is any rldoctor probe actor's worker process of `cluster` up? (cheap, for polling)"""
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().startswith(b"ray::NodeProbe") and cluster.owns(int(pid)):
                    return True
        except OSError:
            continue
    return False


def ray_workers(cluster: LocalCluster) -> set[int]:
    """Pids of `cluster`'s Ray worker processes, from their start (cheap, for polling; the
    suite runs other clusters beside this one)."""
    found = set()
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if (cmdline.startswith(b"ray::") or b"default_worker.py" in cmdline) \
                and cluster.owns(int(pid)):
            found.add(int(pid))
    return found


def wait_for_probe_workers(cluster, proc, before: set[int], timeout_s: float = 30) -> bool:
    """Until a Ray worker that was not there before `proc` started is up: the probes' workers
    start about 0.5 s into a check that lasts about 2.5 s here, where the probe actors'
    own titles (wait_for_probes) show up in its last few tenths of a second."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if ray_workers(cluster) - before:
            return True
        time.sleep(0.02)
    return False


def wait_for_probes(cluster, proc, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if probes_running(cluster):
            return True
        time.sleep(0.05)
    return False


def wait_clean(cluster: LocalCluster, timeout_s: float = 20) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        found = leftovers(cluster)
        if not any(found.values()) or time.monotonic() > deadline:
            return found
        time.sleep(1)


@pytest.fixture(scope="module")
def cluster():
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    with LocalCluster(specs) as c:
        yield c


def test_two_runs_at_once_do_not_see_each_other(cluster):
    env = cluster.client_env()
    args = [RLDOCTOR, "check", "--address", cluster.address, "--format", "json"]
    procs = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=90) for p in procs]
    for proc, (stdout, stderr) in zip(procs, outputs):
        assert proc.returncode == 0, (stdout[-2000:], stderr[-2000:])
        report = json.loads(stdout)
        assert report["findings"] == [], report["findings"]
        assert {c["code"]: c["status"] for c in report["checks"]}["RLD401"] == "ok"
    assert wait_clean(cluster) == {"actors": 0, "placement_groups": 0, "tasks": 0}


def test_sigint_mid_probe_exits_cleanly_and_leaves_nothing(cluster):
    before = ray_workers(cluster)
    proc = subprocess.Popen([RLDOCTOR, "check", "--address", cluster.address],
                            env=cluster.client_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    assert wait_for_probe_workers(cluster, proc, before), "rldoctor's probes never showed up"
    # The probes' workers are paused as they start, so the Ctrl-C surely comes while the
    # check waits for them, however fast this host is today; they go on right after it.
    with frozen(list(ray_workers(cluster) - before)):
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, (stdout, stderr)
    assert stderr.strip().splitlines() == [
        "rldoctor: interrupted: probes stopped and removed, no report written"], stderr
    assert "Traceback" not in stderr
    assert wait_clean(cluster) == {"actors": 0, "placement_groups": 0, "tasks": 0}


def test_more_than_100_actors_are_all_seen(cluster, tmp_path):
    cluster.run_driver(
        "@ray.remote(resources={'pending_forever': 1}, num_cpus=0)\n"
        "class Waiting:\n    pass\n"
        "for i in range(150):\n"
        "    Waiting.options(name=f'w{i}', namespace='many', lifetime='detached').remote()\n")
    snap = tmp_path / "snap.json"
    result = run_rldoctor("collect", "--output", str(snap), "--address", cluster.address,
                          env=cluster.client_env())
    assert result.code == 0, result
    actors = json.loads(snap.read_text())["actors"]
    waiting = [a for a in actors["items"] if a["class_name"] == "Waiting"]
    assert len(waiting) == 150
    assert actors["truncated"] is False and actors["listed"] == actors["total"]
    cluster.run_driver("for i in range(150):\n"
                       "    ray.kill(ray.get_actor(f'w{i}', namespace='many'))\n")


def test_check_while_a_ppo_job_keeps_every_cpu_busy_gives_no_network_finding(cluster):
    """Three env runners fill the cluster's three CPUs (on a 2-core host) and the learner
    trains in the driver: latency and bandwidth jitter, but no link is slow."""
    with PPOJob(cluster, "--runners", "3") as job:
        job.wait_iterations(2)
        for _ in range(2):
            result = run_rldoctor("check", "--address", cluster.address, "--format", "json",
                                  env=cluster.client_env())
            assert result.code in (0, 1), result
            assert result.findings("RLD201") == [] and result.findings("RLD202") == [], result
            assert [f for f in result.findings() if f["code"].startswith("RLD1")] == [], result
        assert job.proc.poll() is None and job.iterations > 2


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_node_killed_while_probing_is_reported_without_hanging(cluster):
    victim = cluster.nodes[2]
    proc = subprocess.Popen([RLDOCTOR, "check", "--address", cluster.address, "--format", "json"],
                            env=cluster.client_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    assert wait_for_probes(cluster, proc), "rldoctor's probes never showed up"
    cluster.kill_node(2)
    stdout, stderr = proc.communicate(timeout=60)
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, (stdout[-2000:], stderr[-2000:])
    assert elapsed < 35, elapsed  # within its 30 s limit plus start-up
    report = json.loads(stdout)
    found = [f for f in report["findings"]
             if f["code"] == "RLD101" and f["subject"] == f"node:{victim.node_id}"]
    assert found and found[0]["severity"] == "fail", report["findings"]
    others = {f"node:{n.node_id}" for n in cluster.nodes[:2]}
    assert not [f for f in report["findings"] if f["code"] == "RLD101" and f["subject"] in others]


@pytest.fixture(scope="module")
def headless():
    """A head started without the dashboard: no state API."""
    with LocalCluster([NodeSpec(), NodeSpec()], dashboard=False) as c:
        yield c


def test_no_dashboard_runs_what_the_gcs_can_and_skips_the_rest_with_the_way_out(headless):
    result = run_rldoctor("check", "--address", headless.address, "--format", "json",
                          env=headless.client_env())
    assert result.code == 0, result
    statuses = {c["code"]: c for c in result.json()["checks"]}
    for code in ("RLD101", "RLD102", "RLD103", "RLD201", "RLD301", "RLD303"):
        assert statuses[code]["status"] == "ok", statuses[code]
    for code in ("RLD401", "RLD402", "RLD403"):
        assert statuses[code]["status"] == "skipped", statuses[code]
        assert "--include-dashboard=True" in statuses[code]["detail"]

