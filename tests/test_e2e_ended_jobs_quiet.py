"""End to end: a healthy cluster after jobs that ended well is healthy (issue 48).

A real 2-node cluster (one CPU each) gets two `rldoctor check` runs (their drivers leave without
`ray.shutdown()`, which the GCS records as SYSTEM_ERROR "End of file"), then a short PPO job
(tests/failed_training.py, one iteration) that SUCCEEDED and one its user stops with `ray job
stop` after its first iteration (STOPPED). Neither `rldoctor check` on the live cluster nor
`check --from` its session directory (copied as a log volume keeps it) gives a warn or a fail:
the drivers' and the stopped job's ends are in the timeline, not in RLD403.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import check_json, run_rldoctor
from localcluster import LocalCluster, NodeSpec

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parent / "failed_training.py"
RAY = str(Path(sys.executable).parent / "ray")


def ray_cli(cluster, *args) -> str:
    done = subprocess.run([RAY, *args], env=cluster.client_env(), capture_output=True, text=True,
                          timeout=120)
    if done.returncode:
        raise RuntimeError(f"ray {' '.join(args)} failed: {done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    return done.stdout


def submit(cluster, sid: str, *args: str) -> None:
    ray_cli(cluster, "job", "submit", "--address", cluster.dashboard_url, "--no-wait",
            "--submission-id", sid, "--", sys.executable, str(SCRIPT), "--runners", "1", *args)


def wait_until(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout_s:.0f}s")
        time.sleep(2)


@pytest.fixture(scope="module")
def ended(tmp_path_factory):
    with LocalCluster([NodeSpec(num_cpus=1), NodeSpec(num_cpus=1)]) as cluster:
        for _ in range(2):  # rldoctor's own earlier runs: their drivers exit
            check_json(cluster)
        submit(cluster, "ppo-succeeds", "--iterations", "1")
        submit(cluster, "ppo-user-stops", "--iterations", "500")
        wait_until(lambda: cluster.job_status("ppo-succeeds") in ("SUCCEEDED", "FAILED", "STOPPED"),
                   300, "the one-iteration job did not end")
        assert cluster.job_status("ppo-succeeds") == "SUCCEEDED"
        wait_until(lambda: "=> iteration" in ray_cli(cluster, "job", "logs", "--address",
                                                     cluster.dashboard_url, "ppo-user-stops"),
                   240, "the job to stop did not finish an iteration")
        ray_cli(cluster, "job", "stop", "--address", cluster.dashboard_url, "ppo-user-stops")
        wait_until(lambda: cluster.job_status("ppo-user-stops") == "STOPPED", 90,
                   "the stopped job did not reach STOPPED")
        time.sleep(3)  # the GCS records the last exits
        live = check_json(cluster)
        session = (cluster.temp_dir / "session_latest").resolve()
        copy = tmp_path_factory.mktemp("volume") / session.name
        shutil.copytree(session, copy, symlinks=True, ignore=shutil.ignore_patterns("sockets"),
                        ignore_dangling_symlinks=True)
    logs = run_rldoctor("check", "--from", str(copy), "--format", "json")
    return live, logs


def _above_info(result) -> list[dict]:
    return [f for f in result.json()["findings"] if f["severity"] in ("warn", "fail")]


def test_the_live_cluster_after_jobs_that_ended_well_has_no_warn_or_fail(ended):
    live, _ = ended
    assert live.code == 0, live
    assert _above_info(live) == [], json.dumps(_above_info(live), indent=1)[:3000]
    kinds = {(e["kind"], e["subject"]) for e in live.json()["timeline"]}
    assert ("job_succeeded", "job:ppo-succeeds") in kinds and ("job_stopped", "job:ppo-user-stops") in kinds


def test_its_session_directory_has_no_warn_or_fail_and_tells_the_driver_exits(ended):
    _, logs = ended
    assert logs.code == 0, logs
    assert logs.json()["source"]["kind"] == "logs"
    assert _above_info(logs) == [], json.dumps(_above_info(logs), indent=1)[:3000]
    assert logs.findings("RLD403") == []
    drivers = [e for e in logs.json()["timeline"]
               if e["kind"] == "worker_ended" and "the driver of job" in e["message"]]
    assert len(drivers) >= 2, logs.json()["timeline"]  # the two earlier checks' drivers at least
