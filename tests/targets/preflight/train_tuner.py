"""A training script as users write it: registers its env, builds the config, fits a Tuner.

`rldoctor preflight train_tuner.py` runs it with the training's entry points replaced: it stops
at `tune.Tuner(...)`, having recorded the config and the run config (storage_path)."""

import os

import gymnasium as gym
import ray
from ray import tune
from ray.rllib.algorithms.ppo import PPOConfig
from ray.tune.registry import register_env


def make_env(env_config):
    return gym.make("CartPole-v1")


register_env("cartpole-from-script", make_env)

if __name__ == "__main__":
    ray.init()
    config = (PPOConfig().environment("cartpole-from-script")
              .env_runners(num_env_runners=1))
    tuner = tune.Tuner("PPO", param_space=config,
                       run_config=tune.RunConfig(storage_path=os.environ["PF_STORAGE"],
                                                 stop={"training_iteration": 1}))
    tuner.fit()
    raise SystemExit("preflight must never get here: the script trained")
