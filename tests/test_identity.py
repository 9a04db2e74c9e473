"""A training's algorithm and env from what the cluster shows (rldoctor.cluster.identity):
the job's entrypoint, a driver's py-spy stack, the driver's script read from its process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rldoctor.cluster.identity import (algorithm_in_stack, entrypoint_facts, names_in_source,
                                       script_facts)
from rldoctor.cluster.stacks import parse_py_spy

SITE = "/venv/lib/python3.11/site-packages"

# A bare algo.train() driver, as `py-spy dump --full-filenames` prints it: waiting in
# PPO.training_step for its env runners' samples.
DRIVER_SAMPLING = f"""Process 4242: python train.py
Python v3.11.7 (/venv/bin/python3.11)

Thread 4242 (idle): "MainThread"
    get_objects ({SITE}/ray/_private/worker.py:893)
    get ({SITE}/ray/_private/worker.py:2782)
    wrapper ({SITE}/ray/_private/client_mode_hook.py:104)
    foreach_actor ({SITE}/ray/rllib/utils/actor_manager.py:530)
    synchronous_parallel_sample ({SITE}/ray/rllib/execution/rollout_ops.py:101)
    PPO.training_step ({SITE}/ray/rllib/algorithms/ppo/ppo.py:409)
    Algorithm._run_one_training_iteration ({SITE}/ray/rllib/algorithms/algorithm.py:3800)
    Algorithm.step ({SITE}/ray/rllib/algorithms/algorithm.py:1008)
    Trainable.train ({SITE}/ray/tune/trainable/trainable.py:331)
    main (/home/me/train.py:41)
    <module> (/home/me/train.py:50)
"""

# The same driver updating its model (num_learners=0: the learner runs in the driver).
DRIVER_LEARNING = f"""Thread 4242 (active): "MainThread"
    PPOTorchLearner.compute_loss_for_module ({SITE}/ray/rllib/algorithms/ppo/torch/ppo_torch_learner.py:60)
    TorchLearner.compute_losses ({SITE}/ray/rllib/core/learner/torch/torch_learner.py:120)
    Learner.update ({SITE}/ray/rllib/core/learner/learner.py:1000)
    Algorithm._run_one_training_iteration ({SITE}/ray/rllib/algorithms/algorithm.py:3800)
    main (/home/me/train.py:41)
"""

# Between iterations, in the user's own code: nothing names the algorithm.
DRIVER_IN_USER_CODE = """Thread 4242 (active): "MainThread"
    save_report (/home/me/train.py:20)
    main (/home/me/train.py:44)
"""


def test_the_algorithm_in_a_driver_stack():
    assert algorithm_in_stack(parse_py_spy(DRIVER_SAMPLING)) == "PPO"
    assert algorithm_in_stack(parse_py_spy(DRIVER_LEARNING)) == "PPO"
    assert algorithm_in_stack(parse_py_spy(DRIVER_IN_USER_CODE)) is None
    appo = DRIVER_SAMPLING.replace("PPO.training_step", "APPO.training_step").replace(
        "algorithms/ppo/ppo.py", "algorithms/appo/appo.py")
    assert algorithm_in_stack(parse_py_spy(appo)) == "APPO"


def test_the_names_a_training_script_gives():
    mine = (Path(__file__).parent / "ppo_job.py").read_text()
    assert names_in_source(mine) == {"algorithm": "PPO", "env": "user_cartpole"}
    script = ("from ray.rllib.algorithms.dqn import DQNConfig\n"
              "from ray.rllib.algorithms.algorithm_config import AlgorithmConfig\n"
              "config = (DQNConfig()\n    .environment(env='CartPole-v1', env_config={})\n)\n")
    assert names_in_source(script) == {"algorithm": "DQN", "env": "CartPole-v1"}
    script = ("from ray.rllib.algorithms.ppo import PPOConfig as Cfg\nclass MyEnv: pass\n"
              "config = PPOConfig().environment(MyEnv, env_config={'a': 1})\n")
    assert names_in_source(script) == {"algorithm": "PPO", "env": "MyEnv"}
    script = "from ray import tune\ntune.Tuner('APPO', param_space={})\n"
    assert names_in_source(script) == {"algorithm": "APPO"}
    # a config class that is not RLlib's names nothing
    assert names_in_source("from mylib import TrainerConfig\nTrainerConfig()\n") == {}


def test_the_names_an_entrypoint_gives():
    assert entrypoint_facts("rllib train --algo PPO --env CartPole-v1 --stop '{}'") == {
        "algorithm": "PPO", "env": "CartPole-v1"}
    assert entrypoint_facts("/opt/venv/bin/rllib train --run=APPO --env=Pong") == {
        "algorithm": "APPO", "env": "Pong"}
    assert entrypoint_facts("python train.py --algo PPO") == {}
    assert entrypoint_facts(None) == {}


@pytest.fixture
def running_script(tmp_path):
    """A real process `python -u train.py` started in its own directory (a relative path)."""
    (tmp_path / "train.py").write_text(  # never builds: importing RLlib would take seconds
        "import time\ndef build():\n    from ray.rllib.algorithms.ppo import PPOConfig\n"
        "    return PPOConfig().environment('CartPole-v1')\nprint('ready', flush=True)\n"
        "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-u", "train.py"], cwd=tmp_path,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc.pid, tmp_path / "train.py"
    finally:
        proc.kill()
        proc.wait(10)


def test_the_driver_script_is_read_from_the_process(running_script):
    pid, path = running_script
    assert script_facts(pid) == {"script": str(path), "algorithm": "PPO", "env": "CartPole-v1"}


def test_a_driver_without_a_script_says_why():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.2)
        assert "runs no .py script" in script_facts(proc.pid)["error"]
    finally:
        proc.kill()
        proc.wait(10)
    assert "runs no .py script" in script_facts(2**22 + 12345)["error"]  # no such pid


def test_a_real_py_spy_dump_of_an_algorithm_in_training_step(tmp_path):
    """py-spy prints qualified names (`PPO.training_step`) and full paths: what
    algorithm_in_stack reads, checked on a real process laid out like RLlib's package."""
    from rldoctor.node.py_spy import py_spy_dump

    package = tmp_path / "site-packages" / "ray" / "rllib" / "algorithms" / "ppo"
    package.mkdir(parents=True)
    (package / "ppo.py").write_text(
        "import time\nclass PPO:\n    def training_step(self):\n        while True:\n"
        "            time.sleep(0.05)\n")
    (tmp_path / "train.py").write_text(
        f"import sys\nsys.path.insert(0, {str(package)!r})\nimport ppo\nppo.PPO().training_step()\n")
    proc = subprocess.Popen([sys.executable, str(tmp_path / "train.py")])
    try:
        for _ in range(50):  # until the child is in training_step (not Python's start-up)
            reply = py_spy_dump(proc.pid, 2.0)
            if "training_step" in reply.get("text", ""):
                break
            time.sleep(0.1)
        assert algorithm_in_stack(parse_py_spy(reply["text"])) == "PPO", reply
    finally:
        proc.kill()
        proc.wait(10)


def test_a_node_without_py_spy_says_so(monkeypatch):
    """ray[default] brings py-spy; a node whose Python lacks it gets the reason, not a crash."""
    from rldoctor.node import py_spy

    monkeypatch.setattr(py_spy, "py_spy_path", lambda: None)
    reply = py_spy.py_spy_dump(os.getpid(), 1.0)
    assert reply["status"] == "failed" and reply["error"].startswith("py-spy missing on the node")


class _NoProbes:
    """A fleet without probes: no probe anywhere (a node Ray refuses us on)."""
    actors: dict = {}
    failed = {"n1": {"error": "Ray refused rldoctor as a driver", "kind": "refused"}}


def _section(entrypoint: str) -> dict:
    return {"trainings": [{"id": "job:02000000", "runs_in": "driver", "algorithm": None,
                           "env": None, "job": {"entrypoint": entrypoint},
                           "driver": {"node_id": "n1", "pid": 4242, "ip": "127.0.0.10"}}]}


def test_identify_without_probes_says_why_and_still_reads_the_entrypoint():
    from rldoctor.cluster.session import Budget
    from rldoctor.cluster.identity import identify

    section = _section("python train.py")
    identify(section, _NoProbes(), Budget(5))
    [training] = section["trainings"]
    assert training["algorithm"] is None and training["env"] is None
    assert "the driver's stack: no probe on the node: Ray refused rldoctor as a driver" in \
        training["identity_unknown"], training
    assert "the driver's script:" in training["identity_unknown"]
    section = _section("rllib train --algo APPO --env Pong-v5")
    identify(section, _NoProbes(), Budget(5))
    [training] = section["trainings"]
    assert (training["algorithm"], training["env"]) == ("APPO", "Pong-v5")
    assert training["identified_from"] == {"algorithm": "the job's entrypoint",
                                           "env": "the job's entrypoint"}
    assert "identity_unknown" not in training


def test_a_training_named_by_its_algorithm_actor_says_so():
    from rldoctor.cluster.session import Budget
    from rldoctor.cluster.identity import identify

    section = {"trainings": [
        {"id": "pg:1", "runs_in": "actor", "algorithm": "PPO", "env": "CartPole-v1",
         "configured_from": "the algorithm's own repr"},
        {"id": "pg:2", "runs_in": "actor", "algorithm": "DQN", "env": None,
         "configured_from": "the env runner actors the job created"}]}
    identify(section, _NoProbes(), Budget(5))
    tune, bare_repr = section["trainings"]
    assert tune["identified_from"] == {"algorithm": "the algorithm's own repr",
                                       "env": "the algorithm's own repr"}
    assert "identity_unknown" not in tune
    assert bare_repr["identified_from"] == {"algorithm": "the algorithm actor's class"}
    assert bare_repr["identity_unknown"] == "nothing the cluster shows names it"
