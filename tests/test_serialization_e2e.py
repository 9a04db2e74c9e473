"""RLD501 told the truth: the broken targets really break PPO on this RLlib; the fixed ones train.

One driver process starts a private local Ray (its own temp dir and token, no
dashboard, never the default ports), then:

1. registers the env creator that closes over a lock: `register_env` pickles it
   and fails with the lock error rldoctor reported (`env_creator -> closure 'lock'`);
2. builds PPO with the callbacks class holding a socket, shipped by value as a
   training script's classes are: `build_algo()` fails with the socket error
   (`MetricsCallbacks -> telemetry -> _socket`);
3. registers the fixed creator, builds PPO with the fixed callbacks and trains
   one iteration, which returns env runner results.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rldoctor.inputs.targets import collect, parse_target

TESTS = Path(__file__).resolve().parent

DRIVER = r'''
import json, os, sys, time
import ray, ray.cloudpickle
from ray.tune.registry import register_env
from ray.rllib.algorithms.ppo import PPOConfig
import targets.lock_env as broken_env
import targets.socket_callbacks as broken_callbacks
import targets.clean_env as clean

# As `python train.py` would: a script's classes and functions travel by value.
for module in (broken_env, broken_callbacks, clean):
    ray.cloudpickle.register_pickle_by_value(module)


def chain(exc):
    out = []
    while exc is not None:
        out.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return out


def ppo(env):
    return (PPOConfig().environment(env)
            .env_runners(num_env_runners=1, num_envs_per_env_runner=1, rollout_fragment_length=64)
            .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1))


out = {}
ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
         _temp_dir=os.environ["RAY_TMPDIR"] + "/ray")
try:
    out["gcs_address"] = ray.get_runtime_context().gcs_address
    try:
        register_env("rldoctor-e2e-lock-cartpole", broken_env.env_creator)
        ppo("rldoctor-e2e-lock-cartpole").build_algo().stop()
        out["lock"] = "built"
    except Exception as exc:
        out["lock"] = chain(exc)
    try:
        ppo("CartPole-v1").callbacks(broken_callbacks.MetricsCallbacks).build_algo().stop()
        out["socket"] = "built"
    except Exception as exc:
        out["socket"] = chain(exc)
    register_env("rldoctor-e2e-clean-cartpole", clean.env_creator)
    algo = ppo("rldoctor-e2e-clean-cartpole").callbacks(clean.MetricsCallbacks).build_algo()
    result = algo.train()
    out["trained"] = {k: result["env_runners"].get(k) for k in
                      ("num_env_steps_sampled_lifetime", "episode_return_mean", "num_episodes")}
    algo.stop()
finally:
    ray.shutdown()
print("RESULT " + json.dumps(out, default=float))
'''


@pytest.mark.cluster
def test_broken_targets_fail_in_rllib_and_fixed_ones_train(tmp_path):
    # rldoctor's diagnosis of the very objects the driver uses
    lock, callbacks = collect([parse_target("targets.lock_env:env_creator"),
                               parse_target(f"{TESTS / 'targets' / 'socket_callbacks.py'}:MetricsCallbacks")])
    assert lock["objects"][0]["culprits"][0]["path"] == "env_creator -> closure 'lock'"
    assert callbacks["objects"][0]["culprits"][0]["path"] == "MetricsCallbacks -> telemetry -> _socket"

    root = Path(tempfile.mkdtemp(prefix="rlds-", dir="/tmp"))  # short: Ray's socket paths
    token = root / "auth_token"
    token.write_text(secrets.token_hex(24))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(PYTHONPATH=str(TESTS), RAY_TMPDIR=str(root), RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN_PATH=str(token), TMPDIR=str(root))
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", DRIVER], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=150)
    finally:
        try:  # whatever is left of this driver's own Ray (same session), and nothing else
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(root, ignore_errors=True)
    took = time.monotonic() - started
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"driver failed (exit {proc.returncode}):\n{stderr[-4000:]}"
    out = json.loads(lines[-1][len("RESULT "):])

    assert not out["gcs_address"].endswith((":6379", ":8265"))
    assert out["lock"] != "built"
    assert any("cannot pickle '_thread.lock' object" in step for step in out["lock"]), out["lock"]
    assert out["socket"] != "built"
    assert any("cannot pickle 'socket' object" in step for step in out["socket"]), out["socket"]
    assert out["trained"]["num_env_steps_sampled_lifetime"] >= 128, out
    print(f"e2e driver took {took:.1f}s")
