"""A user's Tune PPO job on CartPole-v1 that carries secrets, for the incident-bundle tests.

    BUNDLE_ENV_SECRET=... BUNDLE_CONFIG_SECRET=... python tests/bundle_ppo_job.py ADDRESS STORAGE_DIR

Run as its own driver process. The job's runtime_env env_vars hold BUNDLE_ENV_SECRET (as
an API key would be passed, and inside a URL's credentials), and the training config holds
BUNDLE_CONFIG_SECRET in its env_config, so Tune writes it into every row of result.json.
The secrets come from the environment, not the command line, as a careful user does. Two env runners, small batches, one
CPU per node is enough. Prints `=> iteration N` after each result, flushed.
"""

from __future__ import annotations

import logging
import sys


def main() -> int:
    import os

    address, storage = sys.argv[1:3]
    env_secret, config_secret = os.environ["BUNDLE_ENV_SECRET"], os.environ["BUNDLE_CONFIG_SECRET"]
    import gymnasium as gym
    import ray
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env

    ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False,
             runtime_env={"env_vars": {"WANDB_API_KEY": env_secret, "MY_SERVICE_URL":
                                       f"https://trainer:{env_secret}@example.com/hook"}})
    register_env("secret_cartpole", lambda cfg: gym.make("CartPole-v1"))
    config = (
        PPOConfig()
        .environment("secret_cartpole", env_config={"api_key": config_secret,
                                                    "simulator_endpoint": "sim-7"})
        .env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5,
                     rollout_fragment_length=100)
        .learners(num_learners=0)
        .resources(num_cpus_for_main_process=0.5)
        .training(lr=1e-3, train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16, 16]})
    )

    class Progress(tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            print(f"=> iteration {result['training_iteration']}", flush=True)

    tuner = tune.Tuner("PPO", param_space=config,
                       run_config=tune.RunConfig(name="bundle-job", storage_path=storage,
                                                 stop={"training_iteration": 100000},
                                                 callbacks=[Progress()], verbose=0))
    tuner.fit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
