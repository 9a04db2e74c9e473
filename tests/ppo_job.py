"""A user's RLlib PPO job, run as its own driver process against a test cluster.

    python tests/ppo_job.py --address HOST:PORT [--runners N] [--iterations N]
                            [--hang-runner I] [--crash-runner I] [--nan-rewards] [--lr LR]
                            [--no-restarts] [--tune DIR --name NAME] [--step-ms MS]
                            [--raise-runner I] [--fail-fast]

What on-call engineers meet on real clusters, made on purpose:
- `--hang-runner I`: env runner I's env blocks forever inside `step()` after a few
  steps (a stuck simulator);
- `--crash-runner I`: env runner I's env prints an error to stderr and exits with code 17
  after a few steps (a simulator that drops its connection);
- `--raise-runner I`: env runner I's env raises RuntimeError("warehouse sensor 7 returned
  garbage: ...") in `step()` after a few steps (a user's bug), after printing a line that
  carries a secret-looking value to stderr (what redaction must catch in logs);
- `--fail-fast`: fault tolerance off the way production configs set it
  (restart_failed_env_runners=False, ignore_env_runner_failures=False): the job fails;
- `--no-restarts`: failed env runners are not restarted and their failures ignored
  (RLlib goes on with fewer runners);
- `--nan-rewards`: the env returns NaN rewards;
- `--tune DIR`: run under Tune, which writes result.json into DIR/NAME/<trial>/.
Prints `=> iteration N` after each iteration (flushed), so tests can wait for progress.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time

import gymnasium as gym


class UserCartPole(gym.Env):
    """CartPole-v1 with the faults a user's own env can have."""

    def __init__(self, config):
        self.inner = gym.make("CartPole-v1")
        self.observation_space = self.inner.observation_space
        self.action_space = self.inner.action_space
        self.hang = config.get("hang_runner") == getattr(config, "worker_index", None)
        self.crash = (config.get("crash_runner") == getattr(config, "worker_index", None)
                      and config.get("crash_runner") is not None)
        self.raises = (config.get("raise_runner") == getattr(config, "worker_index", None)
                       and config.get("raise_runner") is not None)
        self.nan = bool(config.get("nan_rewards"))
        self.step_s = float(config.get("step_ms", 0)) / 1000
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        self.steps += 1
        if self.hang and self.steps > 50:
            wait_for_the_simulator()
        if self.crash and self.steps > 50:
            print("simulator.step() failed: the simulator closed the connection; giving up",
                  file=sys.stderr, flush=True)
            os._exit(17)
        if self.raises and self.steps > 50:
            read_the_sensor(self.steps)
        if self.step_s:
            time.sleep(self.step_s)
        obs, reward, terminated, truncated, info = self.inner.step(action)
        return obs, (math.nan if self.nan else reward), terminated, truncated, info


SECRET_IN_A_LOG_LINE = "warehouse_api_key=wh-5ecret-7f3a9c2e81"


def read_the_sensor(step):
    """A user's bug: the sensor's reading is garbage and the env raises."""
    print(f"connecting to the warehouse with {SECRET_IN_A_LOG_LINE}", file=sys.stderr, flush=True)
    raise RuntimeError(f"warehouse sensor 7 returned garbage: b'\\xff\\x00' at step {step}")


def wait_for_the_simulator():
    """A simulator that never answers."""
    while True:
        time.sleep(1)


def make_config(args):
    from ray.rllib.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("user_cartpole", env_config={"hang_runner": args.hang_runner,
                                                  "crash_runner": args.crash_runner,
                                                  "raise_runner": args.raise_runner,
                                                  "nan_rewards": args.nan_rewards,
                                                  "step_ms": args.step_ms})
        .env_runners(num_env_runners=args.runners, num_cpus_per_env_runner=args.runner_cpus,
                     rollout_fragment_length=100, sample_timeout_s=args.sample_timeout)
        .learners(num_learners=0)
        .training(lr=args.lr, train_batch_size_per_learner=200 * max(1, args.runners),
                  minibatch_size=100, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
    )
    if args.no_restarts:
        config.fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=True)
    if args.fail_fast:
        config.fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=False)
    return config


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--runners", type=int, default=2)
    parser.add_argument("--runner-cpus", type=float, default=1)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--hang-runner", type=int, default=None)
    parser.add_argument("--crash-runner", type=int, default=None,
                        help="that runner's env prints an error and exits with code 17")
    parser.add_argument("--raise-runner", type=int, default=None,
                        help="that runner's env raises RuntimeError in step() after a few steps")
    parser.add_argument("--fail-fast", action="store_true",
                        help="restart_failed_env_runners=False, ignore_env_runner_failures=False")
    parser.add_argument("--nan-rewards", action="store_true")
    parser.add_argument("--no-restarts", action="store_true")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--step-ms", type=float, default=0)
    parser.add_argument("--sample-timeout", type=float, default=600)
    parser.add_argument("--tune", default=None, metavar="DIR")
    parser.add_argument("--name", default="ppo-job")
    parser.add_argument("--grid", action="store_true",
                        help="with --tune: four trials, lr 1e-3 or 0 x rewards real or NaN")
    parser.add_argument("--env-var", action="append", default=[], metavar="K=V",
                        help="runtime_env env_vars of the job")
    args = parser.parse_args()

    import ray
    from ray.tune.registry import register_env

    env_vars = dict(item.split("=", 1) for item in args.env_var)
    ray.init(address=args.address, logging_level=logging.ERROR, log_to_driver=False,
             runtime_env={"env_vars": env_vars} if env_vars else None)
    register_env("user_cartpole", lambda cfg: UserCartPole(cfg))
    config = make_config(args)
    if args.tune:
        from ray import tune

        if args.grid:
            # seeded: a healthy trial of 25 short iterations whose returns happen to end flat is
            # RLD601's honest warn, not what the test of the grid is about
            config.debugging(seed=11)
            config.training(lr=tune.grid_search([1e-3, 0.0]))
            config.environment(env_config={**config.env_config,
                                           "nan_rewards": tune.grid_search([False, True])})

        tuner = tune.Tuner("PPO", param_space=config,
                           run_config=tune.RunConfig(name=args.name, storage_path=args.tune,
                                                     stop={"training_iteration": args.iterations},
                                                     verbose=0))
        results = tuner.fit()
        print("=> done", results.num_errors, flush=True)
        return 0
    # RLlib before 2.43 has `build()` only (tests run this script on older releases too)
    algo = config.build_algo() if hasattr(config, "build_algo") else config.build()
    for i in range(1, args.iterations + 1):
        algo.train()
        print(f"=> iteration {i}", flush=True)
    algo.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
