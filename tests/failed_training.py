"""A user's PPO training submitted with `ray job submit`, with RLlib's fault tolerance off as
many production configs set it (restart_failed_env_runners=False,
ignore_env_runner_failures=False): one failure anywhere ends the job.

    python tests/failed_training.py [--runners N] [--iterations N] [--raise-runner I]
                                    [--env-module] [--step-ms MS] [--mark FILE]

- `--raise-runner I`: env runner I's env raises RuntimeError("warehouse sensor 7 returned
  garbage: ...") in `step()` after a few steps (the user's own bug);
- `--env-module`: the env class comes from the module `warehouse_env` (WAREHOUSE_MODULE, written
  by a test into a directory it puts on some nodes' PYTHONPATH only: a package installed on some
  hosts), pickled by reference as a user's package is;
- `--mark FILE`: each env appends "<worker index> <node id> <pid>" to FILE when it is made, so a
  test knows where each runner ran.
Prints `=> iteration N` after each iteration (flushed). The driver runs with Ray's defaults
(log_to_driver on), as a user's does.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import gymnasium as gym

SENSOR_ERROR = "warehouse sensor 7 returned garbage: reading=-1.0e308"
# The user's env as a package of its own (never next to this script: Ray puts the driver's
# script directory on every worker's sys.path).
WAREHOUSE_MODULE = """import gymnasium as gym


class WarehouseEnv(gym.Env):
    def __init__(self, config):
        self.inner = gym.make("CartPole-v1")
        self.observation_space = self.inner.observation_space
        self.action_space = self.inner.action_space

    def reset(self, *, seed=None, options=None):
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        return self.inner.step(action)
"""


class WarehouseCartPole(gym.Env):
    """CartPole-v1 behind a warehouse 'sensor' that may return garbage."""

    def __init__(self, config):
        self.inner = gym.make("CartPole-v1")
        self.observation_space = self.inner.observation_space
        self.action_space = self.inner.action_space
        index = getattr(config, "worker_index", None)
        self.broken = config.get("raise_runner") is not None and config.get("raise_runner") == index
        self.step_s = float(config.get("step_ms", 0)) / 1000
        self.steps = 0
        if config.get("mark") and index:
            import ray

            with open(config["mark"], "a") as f:
                f.write(f"{index} {ray.get_runtime_context().get_node_id()} {os.getpid()}\n")

    def reset(self, *, seed=None, options=None):
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        self.steps += 1
        if self.broken and self.steps > 30:
            read_sensor()
        if self.step_s:
            time.sleep(self.step_s)
        return self.inner.step(action)


def read_sensor():
    raise RuntimeError(SENSOR_ERROR)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runners", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--raise-runner", type=int, default=None)
    parser.add_argument("--env-module", action="store_true")
    parser.add_argument("--step-ms", type=float, default=0)
    parser.add_argument("--mark", default=None)
    args = parser.parse_args()

    import ray
    from ray.rllib.algorithms.ppo import PPOConfig

    ray.init()
    if args.env_module:
        import warehouse_env

        env = warehouse_env.WarehouseEnv
    else:
        env = WarehouseCartPole
    config = (
        PPOConfig()
        .environment(env, env_config={"raise_runner": args.raise_runner, "step_ms": args.step_ms,
                                      "mark": args.mark})
        .env_runners(num_env_runners=args.runners, num_cpus_per_env_runner=1,
                     rollout_fragment_length=50)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=50 * max(1, args.runners), minibatch_size=50,
                  num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=False)
    )
    algo = config.build_algo() if hasattr(config, "build_algo") else config.build()
    for i in range(1, args.iterations + 1):
        algo.train()
        print(f"=> iteration {i}", flush=True)
    algo.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
