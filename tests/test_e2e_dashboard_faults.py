"""End to end: faults while the dashboard path's job collects inside the cluster.

A 2-node cluster (the pinned Ray, token auth), reached through its dashboard address. Each
test starts `rldoctor check --address http://...` and strikes once rldoctor's job is
RUNNING on the cluster, that is while its driver collects:
- Ctrl-C to the client: one "interrupted" line, exit 130, and by then the job is stopped
  and deleted and no rldoctor actor is alive;
- the worker node's raylet frozen (SIGSTOP): reported as on the GCS path, RLD101 "not
  answering" on that node and on no other;
- the worker node killed (every process, SIGKILL): RLD101 fail on that node. Last, since
  the node stays dead.
And the GCS address from a machine that is not one of the cluster's nodes (a PID namespace
of its own: no raylet of the cluster in sight): through the dashboard, on rldoctor's own.
After each run: no rldoctor job listed, no rldoctor actor alive.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest

from conftest import RLDOCTOR, interruptible
from localcluster import LocalCluster, NodeSpec, frozen
from test_e2e_dashboard import assert_no_output_left
from test_e2e_reliability import wait_clean

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster([NodeSpec(labels={"ray.io/availability-zone": "zone-a"})
                       for _ in range(2)], log_monitor=False) as made:
        yield made


def laptop_env(cluster) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(cluster.home)
    env["RAY_AUTH_TOKEN_PATH"] = str(cluster.token_path)
    return env


def rldoctor_jobs(cluster) -> list[dict]:
    req = urllib.request.Request(cluster.dashboard_url + "/api/jobs/", headers={
        "Authorization": f"Bearer {cluster.token}", "User-Agent": "rldoctor-tests"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return [j for j in json.load(resp) if (j.get("submission_id") or "").startswith("rldoctor-")]


def start_check(cluster, out) -> subprocess.Popen:
    """`rldoctor check` through the dashboard, started (Ctrl-C at its default: it can be
    pressed)."""
    return subprocess.Popen([RLDOCTOR, "check", "--address", cluster.dashboard_url,
                             "--format", "json", "--output", str(out)],
                            env=laptop_env(cluster), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                            preexec_fn=interruptible)


def check_until_the_job_runs(cluster, out) -> subprocess.Popen:
    """`rldoctor check` through the dashboard, returned once its job is RUNNING."""
    proc = start_check(cluster, out)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        running = [j for j in rldoctor_jobs(cluster) if j.get("status") == "RUNNING"]
        if running:
            proc.submission_id = running[0]["submission_id"]
            return proc
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"rldoctor's job never ran: {proc.communicate()}")


def assert_nothing_left(cluster) -> None:
    assert rldoctor_jobs(cluster) == []  # deleted before rldoctor exited
    assert not any(wait_clean(cluster).values())


def job_drivers(cluster) -> list[int]:
    """Pids of rldoctor's job driver on this cluster (its raylet's child: the cluster's marker)."""
    found = []
    for pid in cluster.processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"rldoctor.job.main" in f.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def test_ctrl_c_while_the_job_collects_stops_and_deletes_it(cluster, tmp_path):
    out = tmp_path / "r.json"
    proc = start_check(cluster, out)
    # The job's driver is paused as soon as it exists (its collection takes seconds), so the
    # Ctrl-C surely comes while it collects, however fast or slow this host is today.
    deadline, drivers = time.monotonic() + 60, []
    while not drivers and time.monotonic() < deadline and proc.poll() is None:
        drivers = job_drivers(cluster)
        time.sleep(0.01)
    assert drivers, f"rldoctor's job never ran: {proc.poll()}"
    with frozen(drivers):  # (Ray may not have marked the job RUNNING yet: any status will do)
        jobs = rldoctor_jobs(cluster)
        assert len(jobs) == 1, jobs
        submission_id = jobs[0]["submission_id"]
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
    stdout, stderr = proc.communicate(timeout=40)
    assert proc.returncode == 130, (stdout, stderr)
    assert stderr.strip().splitlines() == [
        "rldoctor: interrupted: probes stopped and removed, no report written"], stderr
    assert not out.exists()
    assert_nothing_left(cluster)
    # stopped while it collected: no output of the job's on the head (a stop that comes
    # before its Python runs leaves Ray's own two lines, "Running entrypoint ...")
    assert_no_output_left(cluster, submission_id)


def test_a_node_frozen_while_the_job_collects_is_named_not_answering(cluster, tmp_path):
    victim = cluster.nodes[1]
    pids = cluster.pids(1, "raylet")
    assert pids
    out = tmp_path / "r.json"
    proc = check_until_the_job_runs(cluster, out)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    assert proc.returncode == 1, (stdout, stderr)
    report = json.loads(out.read_text())
    assert report["source"]["path"] == "dashboard"
    found = [f for f in report["findings"] if f["code"] == "RLD101"]
    assert [f["subject"] for f in found] == [f"node:{victim.node_id}"], found
    assert found[0]["severity"] == "fail" and "is not answering" in found[0]["message"]
    assert found[0]["evidence"]["state"] == "not answering"
    assert_nothing_left(cluster)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="a PID namespace of its own needs root and unshare")
def test_the_gcs_address_from_a_machine_that_is_not_a_node(cluster, tmp_path):
    """In a PID namespace of its own, rldoctor sees none of the cluster's raylets, as on a
    laptop: Ray would wait 60 s for one and then refuse the driver. rldoctor finds that
    before `ray.init` and goes through the dashboard the head records, on its own."""
    out = tmp_path / "r.json"
    started = time.monotonic()
    proc = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", RLDOCTOR, "check",
                           "--address", cluster.address, "--format", "json", "--output",
                           str(out)], env=laptop_env(cluster), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode in (0, 1), proc
    assert time.monotonic() - started < 30, "waited for a local raylet"
    report = json.loads(out.read_text())
    assert report["source"]["path"] == "dashboard"
    assert report["source"]["requested_address"] == cluster.address
    assert any("this machine is not one of the cluster's nodes" in n
               and f"--address {cluster.dashboard_url}" in n for n in report["notes"]), report["notes"]
    assert {r["node_id"] for r in report["cluster"]["rows"]} == {n.node_id for n in cluster.nodes}
    assert_nothing_left(cluster)


def test_a_node_killed_while_the_job_collects_is_rld101(cluster, tmp_path):
    """Last: the node stays dead."""
    out = tmp_path / "r.json"
    proc = check_until_the_job_runs(cluster, out)
    killed = cluster.kill_node(1)
    stdout, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 1, (stdout, stderr)
    report = json.loads(out.read_text())
    found = [f for f in report["findings"] if f["code"] == "RLD101"]
    assert [f["subject"] for f in found] == [f"node:{killed}"], found
    assert found[0]["severity"] == "fail" and killed[:12] in found[0]["message"]
    assert_nothing_left(cluster)
