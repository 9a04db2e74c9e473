"""Idle scale-down under a real training, on Ray 2.40's autoscaler v1 (tests/autoscaling.py
with a venv of Ray 2.40.0, tests/ray_venvs.py).

v1 of Ray 2.40 counts a node used only while one of its resources is in use (2.41 and v2
count a node busy while an actor lives there). A PPO training whose algorithm and env runners ask
for no CPU (`num_cpus_per_env_runner=0`) runs on a node the autoscaler launched for a 1-CPU
actor; once that actor is gone, nothing on the node holds a resource, and when the training
pauses (an evaluation, a checkpoint upload) longer than `idle_timeout_minutes`, the
autoscaler removes the node with the algorithm on it, and the env runners die with it.
Ray 2.40's v1 drains it without a reason (the GCS records "Terminated by autoscaler."): only
its monitor.log says "(idle)". rldoctor, through the cluster's dashboard (its collectors run
inside with Ray 2.40), names the node before it goes (RLD109 warn) and, once it is gone, the
node, why, and the env runners lost with it (RLD109).
"""

from __future__ import annotations

import json
import select
from pathlib import Path
import subprocess
import time

import pytest

from autoscaling import autoscaling_cluster, worker_type
from conftest import run_rldoctor
from ray_venvs import ray_venv
from test_e2e_autoscaler import _stop

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

# A minute: the check that names the node before it goes (about 5 s on a quiet host, 15-25 s on
# a loaded one) always ends before the node is removed.
IDLE_TIMEOUT_MIN = 1.0
PAUSE_S = IDLE_TIMEOUT_MIN * 60 + 40  # the training's pause, longer than the idle timeout
TRAINING = r"""
import ray, sys, time
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address=sys.argv[1], namespace="rl")

@ray.remote(num_cpus=1)
class Holder:  # the demand that makes the autoscaler launch a worker node
    def node(self):
        return ray.get_runtime_context().get_node_id()

@ray.remote(num_cpus=0)
class PPO:  # the algorithm in an actor of its own, as Tune runs it, on that node, holding no resource
    def __init__(self):
        from ray.rllib.algorithms.ppo import PPOConfig
        config = (PPOConfig().environment("CartPole-v1")
                  .env_runners(num_env_runners=2, num_cpus_per_env_runner=0)
                  .learners(num_learners=0)
                  .training(train_batch_size=200, minibatch_size=64, num_epochs=1))
        self.algo = config.build()
    def train(self):
        return self.algo.train()["training_iteration"]

holder = Holder.remote()
node = ray.get(holder.node.remote())
trainer = PPO.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
for _ in range(3):
    ray.get(trainer.train.remote())
ray.kill(holder)
print("=> training", node, flush=True)
time.sleep(float(sys.argv[2]))  # the training's pause: an evaluation, a checkpoint upload
try:
    ray.get(trainer.train.remote())
    print("=> kept", flush=True)
except Exception as exc:
    print("=> lost", type(exc).__name__, flush=True)
while True:
    time.sleep(60)
"""


def _line(proc: subprocess.Popen, word: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        line = proc.stdout.readline()
        if line.startswith("=> ") and not line.startswith(f"=> {word}"):
            raise AssertionError(f"the training driver printed {line.strip()!r}, not {word!r}")
        if line.startswith(f"=> {word}"):
            return line.split(None, 2)[2].strip() if len(line.split()) > 2 else ""
        if not line and proc.poll() is not None:
            raise RuntimeError(f"training driver exited {proc.returncode}")
    raise RuntimeError(f"training driver never printed {word!r}")


def _rld109(cluster, address: str, node_id: str, keep: Path) -> tuple[list, dict]:
    """A snapshot of the cluster (kept: tests/record_fixtures.py copies such snapshots into
    fixtures/), then RLD109 on it."""
    done = run_rldoctor("collect", "--address", address, "--output", str(keep),
                        env=cluster.client_env(), timeout=240)
    assert done.code == 0, done
    result = run_rldoctor("check", "--from", str(keep), "--format", "json", "--only", "RLD109")
    assert result.code in (0, 1), result
    return [f for f in result.findings("RLD109") if f["subject"] == f"node:{node_id}"], result.json()


@pytest.fixture(scope="module")
def scaled_down(tmp_path_factory):
    kept = tmp_path_factory.mktemp("snapshots")
    # 4 logical CPUs: with the 1-CPU demand on it the node stays under Ray's spread threshold,
    # so the env runners the training creates there stay there (a busier node sends them away)
    cluster = autoscaling_cluster({"cpu_worker": worker_type(4, max_workers=1)},
                                  bin_dir=ray_venv("2.40.0"), token_auth=False,
                                  idle_timeout_minutes=IDLE_TIMEOUT_MIN)
    with cluster:
        # The dashboard starts its jobs' driver on the first job submitted. On this one machine
        # it may attach to a fake node's raylet (every node is local here) if one exists by
        # then, and the GCS marks that driver's job finished when the node is removed, which
        # breaks every later job of the dashboard (Ray 2.40's JobSupervisor class is dropped
        # with it). On real hosts the dashboard's only local raylet is the head's: submit
        # the first job before any worker node exists, as such a cluster would have it.
        first = run_rldoctor("check", "--address", cluster.dashboard_url, "--format", "json",
                             "--only", "RLD108", env=cluster.client_env(), timeout=240)
        assert first.json()["autoscaler"]["version"] == "v1", first
        proc = subprocess.Popen([cluster.python, "-u", "-c", TRAINING, cluster.address,
                                 str(PAUSE_S)],
                                env=cluster.client_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            node_id = _line(proc, "training", 300)
            started = time.monotonic()
            before, before_report = _rld109(cluster, cluster.dashboard_url, node_id,
                                            kept / "before.json")
            took_s = time.monotonic() - started
            assert _line(proc, "lost", PAUSE_S + 120) == "ActorDiedError"
            after, after_report = _rld109(cluster, cluster.address, node_id, kept / "after.json")
        finally:
            _stop(proc)
    return {"kept": kept, "node_id": node_id, "before": before, "before_report": before_report,
            "took_s": took_s, "after": after, "after_report": after_report}


def test_a_training_on_a_node_v1_counts_idle_is_named_before_it_goes(scaled_down):
    # the snapshot was taken while the node was still there (idle, not yet removed)
    assert scaled_down["took_s"] < IDLE_TIMEOUT_MIN * 60, scaled_down["took_s"]
    found = scaled_down["before"]
    assert len(found) == 1, scaled_down["before_report"]["findings"]
    f = found[0]
    assert f["severity"] == "warn", f
    assert "hold no resource there" in f["message"] and "Ray 2.40.0" in f["message"], f
    # Ray places a zero-resource actor on a random node: the algorithm is there, the env
    # runners it made may be there or on the head
    assert "PPO" in f["message"], f
    assert f"longer than the idle timeout ({IDLE_TIMEOUT_MIN * 60:.0f} s) removes the node" in f["message"], f
    assert "num_cpus_per_env_runner" in f["fix"]
    section = scaled_down["before_report"]["autoscaler"]
    assert section["version"] == "v1" and section["running"], section


def test_the_node_removed_as_idle_names_the_env_runners_lost(scaled_down):
    found = scaled_down["after"]
    report = scaled_down["after_report"]
    snapshot = json.loads((scaled_down["kept"] / "after.json").read_text())
    assert snapshot["source"]["path"] == "dashboard"  # a GCS address of Ray 2.40 goes through it
    assert len(found) == 1, report["findings"]
    f = found[0]
    assert "was terminated by the autoscaler as idle while a training ran there" in f["message"], f
    assert "2 env runner(s)" in f["message"] and "SingleAgentEnvRunner" in f["message"], f
    assert f["evidence"]["removed"] == "terminated by the autoscaler as idle"
    assert len([m for m in f["evidence"]["lost"] if m["role"] == "env runner"]) == 2, f
    section = report["autoscaler"]
    ended = [t for t in section["terminated_nodes"] if t["node_id"] == scaled_down["node_id"]]
    assert ended and ended[0]["reason"] == "idle", section
