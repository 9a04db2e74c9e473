"""The part of `rldoctor smoke-train` that runs on the cluster: one actor hosting RLlib PPO.

The actor lives in bundle 0 of a placement group that rldoctor creates with one
bundle per env runner after it, and it captures its child tasks, so RLlib puts
env runner i into bundle i (RLlib's own rule when an Algorithm runs inside a
placement group, the way Tune runs it). The group's strategy is SPREAD, so the
runners land on different nodes. The learner runs in this actor (num_learners=0).

This module is shipped to the cluster by value (see `register`): nodes need
nothing of rldoctor installed. At module level it imports only the standard library
and rldoctor.metric_numbers (the result-row reader) and rldoctor.words (standard library only,
shipped by value with it); ray, RLlib, torch and gymnasium are imported inside the methods,
on the node. It must not
import any other part of rldoctor.
"""

from __future__ import annotations

import os
import time

from rldoctor.metric_numbers import json_number, point_of
from rldoctor.words import last_line


def build_config(settings: dict, num_env_runners: int, runner_cpus: float, main_cpus: float):
    """The PPOConfig of a smoke run, from the plain settings dict (see rldoctor.cluster.smoke.SmokeSettings)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    config = (
        PPOConfig()
        .environment(settings["env"])
        .env_runners(num_env_runners=num_env_runners,
                     num_envs_per_env_runner=settings["envs_per_env_runner"],
                     num_cpus_per_env_runner=runner_cpus)
        .learners(num_learners=0)
        .resources(num_cpus_for_main_process=main_cpus, placement_strategy="SPREAD")
        .training(lr=settings["lr"], gamma=settings["gamma"], lambda_=settings["gae_lambda"],
                  train_batch_size_per_learner=settings["train_batch_size"],
                  minibatch_size=settings["minibatch_size"], num_epochs=settings["num_epochs"],
                  vf_loss_coeff=settings["vf_loss_coeff"], entropy_coeff=settings["entropy_coeff"],
                  clip_param=settings["clip_param"])
        .rl_module(model_config=DefaultModelConfig(
            fcnet_hiddens=list(settings["hiddens"]), fcnet_activation=settings["activation"],
            vf_share_layers=settings["vf_share_layers"]))
        .reporting(metrics_num_episodes_for_smoothing=settings["smoothing_episodes"])
        .fault_tolerance(restart_failed_env_runners=True,
                         max_num_env_runner_restarts=settings["max_env_runner_restarts"])
    )
    if settings.get("seed") is not None:
        config = config.debugging(seed=int(settings["seed"]))
    return config


class SmokeTrainer:
    """Hosts one PPO Algorithm for the smoke run; every method returns plain data."""

    def __init__(self):
        self.algo = None
        self.settings = None

    def build(self, settings: dict, num_env_runners: int, runner_cpus: float,
              main_cpus: float) -> dict:
        import logging

        logging.getLogger("ray.rllib").setLevel(logging.ERROR)
        started = time.perf_counter()
        self.settings = settings
        self.algo = build_config(settings, num_env_runners, runner_cpus, main_cpus).build_algo()
        return {"build_s": time.perf_counter() - started}

    def placement(self) -> dict:
        """Where the learner and each env runner run, asked of the actors themselves."""
        import ray

        def where(runner):
            import os as _os

            import ray as _ray

            return {"worker_index": int(getattr(runner, "worker_index", -1)),
                    "node_id": _ray.get_runtime_context().get_node_id(),
                    "pid": _os.getpid(),
                    "weights_seq_no": getattr(runner, "_weights_seq_no", None)}

        runners = self.algo.env_runner_group.foreach_env_runner(where, local_env_runner=False)
        learner_seq = None
        try:
            learner_seq = self.algo.learner_group.foreach_learner(
                lambda learner: learner._weights_seq_no)[0]
        except Exception:  # private attribute: best effort
            pass
        return {"learner_node_id": ray.get_runtime_context().get_node_id(),
                "learner_pid": os.getpid(),
                "learner_weights_seq_no": learner_seq,
                "env_runners": sorted(runners, key=lambda r: r["worker_index"])}

    def train(self) -> dict:
        """One iteration, read by the one result-row reader: the smoke curve's point is a run
        record's point as it stands (NaN kept as text, for RLD607)."""
        result = self.algo.train()
        return point_of(result) or {"iteration": json_number(result.get("training_iteration")), "learners": {}}

    def round_trip(self, episodes: int, seed: int) -> dict:
        """Save the algorithm, stop it, restore a fresh one from the checkpoint, act with it.

        Actions come from the restored RLModule's `forward_inference` (the replacement
        for the removed `compute_single_action`), greedily (argmax of the logits).
        """
        import shutil
        import tempfile

        import gymnasium as gym
        import numpy as np
        import torch
        from ray.rllib.algorithms.algorithm import Algorithm

        out: dict = {"status": "failed", "step": "save"}
        path = tempfile.mkdtemp(prefix="rldoctor-smoke-ckpt-")
        try:
            started = time.perf_counter()
            self.algo.save_to_path(path)
            out["save_s"] = time.perf_counter() - started
            out["checkpoint_bytes"] = sum(os.path.getsize(os.path.join(d, f))
                                          for d, _, files in os.walk(path) for f in files)
            self.algo.stop()
            self.algo = None
            out["step"] = "restore"
            started = time.perf_counter()
            restored = Algorithm.from_checkpoint(path)
            out["restore_s"] = time.perf_counter() - started
            try:
                out["step"] = "compute actions"
                module = restored.get_module()
                env = gym.make(self.settings["env"])
                returns = []
                started = time.perf_counter()
                for episode in range(episodes):
                    obs, _ = env.reset(seed=seed + episode)
                    total, done = 0.0, False
                    while not done:
                        with torch.no_grad():
                            batch = {"obs": torch.from_numpy(np.asarray([obs], dtype=np.float32))}
                            logits = module.forward_inference(batch)["action_dist_inputs"]
                        obs, reward, terminated, truncated, _ = env.step(int(logits.argmax(-1)[0]))
                        total += float(reward)
                        done = terminated or truncated
                    returns.append(total)
                env.close()
                out["act_s"] = time.perf_counter() - started
                out["returns"] = returns
                out["mean_return"] = sum(returns) / len(returns) if returns else None
                out["status"] = "ok"
                out.pop("step")
            finally:
                restored.stop()
        except Exception as exc:
            out["error"] = last_line(exc, 500)
        finally:
            shutil.rmtree(path, ignore_errors=True)
        return out

    def stop(self) -> None:
        if self.algo is not None:
            self.algo.stop()
            self.algo = None


BY_VALUE = (__name__, "rldoctor.metric_numbers", "rldoctor.words")


def register() -> None:
    """Pickle this module and the one it reads numbers with by value, so the actor runs on
    nodes without rldoctor."""
    import sys

    import ray

    for name in BY_VALUE:
        ray.cloudpickle.register_pickle_by_value(sys.modules[name])
