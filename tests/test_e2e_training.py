"""End to end: the user's own RLlib trainings, diagnosed from outside while they run.

Real PPO jobs (tests/ppo_job.py) run as their own driver processes on a real 3-node
cluster: one whose env runner blocks forever inside `env.step()`, one that loses a
runner to SIGKILL with restarts off, a healthy one, and Tune runs whose result.json
files `check --run` judges (lr 0, NaN rewards, healthy).
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from conftest import PPOJob, check_json, run_rldoctor
from localcluster import LocalCluster, NodeSpec

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster():
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    with LocalCluster(specs) as c:
        yield c


def _trainings(result) -> list[dict]:
    return result.json()["training"]


def _wait_for(cluster, predicate, timeout_s: float = 90):
    deadline = time.monotonic() + timeout_s
    while True:
        result = check_json(cluster)
        if predicate(result) or time.monotonic() > deadline:
            return result
        time.sleep(2)


def test_a_runner_stuck_in_env_step_is_named_with_its_frame(cluster):
    with PPOJob(cluster, "--runners", "2", "--hang-runner", "1") as job:
        result = _wait_for(cluster, lambda r: r.findings("RLD605"))
        [finding] = result.findings("RLD605")
        [training] = _trainings(result)
        hung = [m for m in training["runners"] if m["actor_id"] == finding["subject"][6:]]
        healthy = [m for m in training["runners"] if m["actor_id"] != finding["subject"][6:]]
        assert hung and len(healthy) == 1, training
        evidence = finding["evidence"]
        assert finding["severity"] == "fail"
        assert evidence["pid"] == hung[0]["pid"] and evidence["node_id"] == hung[0]["node_id"]
        assert hung[0]["actor_id"][:12] in finding["message"] and str(hung[0]["pid"]) in finding["message"]
        assert "UserCartPole.step (ppo_job.py:" in finding["message"], finding["message"]
        assert any(f["function"] == "UserCartPole.step" and f["file"].endswith("ppo_job.py")
                   for f in evidence["user_frames"])
        assert evidence["call"]["age_s"] >= 20 and evidence["peer_calls"]["count"] >= 1
        # The healthy runner is not named by RLD605 and the block shows the stuck one.
        assert all(f["subject"] != f"actor:{healthy[0]['actor_id']}" for f in result.findings("RLD605"))
        assert hung[0]["stuck_in"].startswith("UserCartPole.step") and "RLD605" in hung[0]["findings"]
        table = run_rldoctor("check", "--address", cluster.address, env=cluster.client_env())
        assert "Training (1 found):" in table.stdout and "stuck in UserCartPole.step" in table.stdout
        assert "PPO (user_cartpole), job" in table.stdout, table.stdout  # its driver named it
        assert job.proc.poll() is None  # rldoctor never called into the training


def test_a_healthy_job_is_listed_then_a_killed_runner_is_reported_lost(cluster):
    with PPOJob(cluster, "--runners", "2", "--no-restarts") as job:
        job.wait_iterations(2)
        result = check_json(cluster)
        [training] = _trainings(result)
        assert training["runners_configured"] == 2 and training["runners_alive"] == 2
        assert training["runs_in"] == "driver" and training["entrypoint"].endswith("--no-restarts")
        # no algorithm actor names it: the driver's stack and script do, without a call into it
        assert (training["algorithm"], training["env"]) == ("PPO", "user_cartpole"), training
        assert training["identified_from"]["env"] == "the driver's script", training
        assert training["identified_from"]["algorithm"] in ("the driver's stack",
                                                            "the driver's script"), training
        assert {m["state"] for m in training["runners"]} == {"ALIVE"}
        assert all(m["node_id"] and m["pid"] for m in training["runners"])
        bad = [f for f in result.findings() if f["code"].startswith("RLD60")
               and f["severity"] in ("warn", "fail")]
        assert bad == [], bad
        victim = training["runners"][0]
        os.kill(victim["pid"], signal.SIGKILL)
        result = _wait_for(cluster, lambda r: r.findings("RLD606"), 30)
        [finding] = result.findings("RLD606")
        assert finding["subject"] == training["subject"]
        [lost] = finding["evidence"]["lost"]
        assert lost["actor_id"] == victim["actor_id"] and lost["node_id"] == victim["node_id"]
        assert victim["actor_id"][:12] in finding["message"] and "1 of 2" in finding["message"]
        assert lost["death_cause"]["reason"] == "WORKER_DIED"
        job.wait_iterations(job.iterations + 1, 60)  # RLlib goes on with one runner


@pytest.fixture(scope="module")
def tune_runs(cluster, tmp_path_factory):
    """Four real Tune trials: lr 1e-3 or 0, rewards real or NaN (25 iterations each)."""
    storage = tmp_path_factory.mktemp("tune")
    with PPOJob(cluster, "--runners", "0", "--tune", str(storage), "--name", "grid", "--grid",
                "--iterations", "25") as job:
        job.wait_for(lambda j: any(line.startswith("=> done") for line in j.lines), 300, "the end")
    trials = {p.name: p for p in (storage / "grid").iterdir() if p.is_dir()}
    assert len(trials) == 4, trials
    return storage / "grid", trials


def _trial(trials: dict, nan: bool, lr: str):
    [path] = [p for name, p in trials.items() if f"nan_rewards={nan}" in name and f"lr={lr}" in name]
    return path


def test_check_run_judges_real_tune_results(tune_runs):
    experiment, trials = tune_runs
    result = run_rldoctor("check", "--run", str(experiment), "--format", "json")
    assert result.code == 1, result
    by_run = {}
    for f in result.findings():
        by_run.setdefault(f["subject"], []).append((f["code"], f["severity"]))
    healthy, lr0 = _trial(trials, False, "0.0010"), _trial(trials, False, "0.0000")
    nan = _trial(trials, True, "0.0010")
    # A healthy run: no problem. 25 short iterations may end on a noisy stretch, which
    # RLD601 may note as flat since it improved (an info), never as a stall.
    assert set(by_run.get(f"run:{healthy}", [])) <= {("RLD601", "info")}, by_run
    assert ("RLD601", "fail") in by_run[f"run:{lr0}"]
    assert ("RLD607", "fail") in by_run[f"run:{nan}"]
    [stall] = [f for f in result.findings("RLD601") if f["subject"] == f"run:{lr0}"]
    assert "learning rate is 0" in stall["message"] and stall["evidence"]["rows_read"] == 25
    [bad] = [f for f in result.findings("RLD607") if f["subject"] == f"run:{nan}"]
    assert bad["evidence"]["metrics"]["env_runners/episode_return_mean"]["first"] == 1
    # A single trial directory and a result.json file work as well; no cluster is contacted.
    one = run_rldoctor("check", "--run", str(lr0 / "result.json"), "--only", "RLD601",
                       "--format", "json")
    assert one.code == 1 and [f["code"] for f in one.findings()] == ["RLD601"], one
    assert result.json()["source"]["kind"] == "runs"


def test_check_run_never_prints_config_values(tune_runs, tmp_path):
    """Result rows embed the whole config; only a few training settings may show."""
    experiment, trials = tune_runs
    result = run_rldoctor("check", "--run", str(experiment), "--format", "json")
    text = result.stdout
    assert "hang_runner" not in text and "nan_rewards\": " not in text
    assert '"lr": 0.0' in text  # the setting a fix needs is there
