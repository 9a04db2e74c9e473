"""AlgorithmConfigs for `rldoctor preflight tests.targets.preflight.configs:NAME`."""

from ray.rllib.algorithms.ppo import PPOConfig


def _ppo(env, **runners):
    return (PPOConfig().environment(env)
            .env_runners(num_env_runners=runners.pop("num_env_runners", 2), **runners))


def healthy():
    return _ppo("CartPole-v1")


def too_many_runners():
    return _ppo("CartPole-v1", num_env_runners=40)


def fits_after_scale_up():
    """2 bundles of {CPU: 1} (the main process, one env runner): on tests/test_e2e_autoscaler.py's
    cluster (a head with 0 CPUs, cpu_worker 1 CPU x max 2) only once its cpu_workers are up."""
    return _ppo("CartPole-v1", num_env_runners=1)


def runner_larger_than_any_node():
    return _ppo("CartPole-v1", num_env_runners=1, num_cpus_per_env_runner=16)


def pf_env(name):
    import pf_envs

    return _ppo(getattr(pf_envs, name), num_env_runners=1)


def good_env():
    return pf_env("GoodEnv")


def four_tuple_env():
    return pf_env("FourTupleEnv")


def nan_reward_env():
    return pf_env("NanRewardEnv")


def slow_env():
    return pf_env("SlowEnv").env_runners(rollout_fragment_length=2000, sample_timeout_s=10.0)


def gpu_learner():
    return _ppo("CartPole-v1", num_env_runners=1).learners(num_learners=1, num_gpus_per_learner=1)
