"""RLD801's rows for callbacks' and loggers' signatures, proven against the installed RLlib, and found by lint.

Each row says what Ray 2.60 does with an old-stack signature or argument; here the real RLlib
object is made and called as the new stack calls it (no Ray instance is started), and
`rldoctor lint` is run on code that uses it.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
import warnings

import pytest

from rldoctor.lint.rules.table import SIGNATURE_ROWS

ROWS = {r.id: r for r in SIGNATURE_ROWS}


def test_the_new_stack_calls_policy_mapping_fn_with_two_arguments():
    from ray.rllib.env.multi_agent_episode import MultiAgentEpisode

    def old(agent_id, episode, worker, **kwargs):
        return "p0"

    def new(agent_id, episode, **kwargs):
        return "p0"

    with pytest.raises(TypeError, match="worker"):
        MultiAgentEpisode(agent_to_module_mapping_fn=old).module_for("a0")
    assert MultiAgentEpisode(agent_to_module_mapping_fn=new).module_for("a0") == "p0"
    assert ROWS["policy_mapping_fn-worker"].behaviour == "breaks"


def test_log_value_with_ema_coeff_and_mean_raises_as_the_row_says():
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    row = ROWS["logger-log_value-ema_coeff"]
    logger = MetricsLogger()
    assert row.error[0] == "ValueError"
    with pytest.raises(ValueError, match=row.error[1]):
        logger.log_value("a", 1.0, reduce="mean", ema_coeff=0.1)
    with pytest.raises(TypeError):
        logger.log_value("b", 1.0, reduce="sum", ema_coeff=0.1)
    logger.log_value("c", 1.0, reduce="ema", ema_coeff=0.1)  # the replacement works


def test_algorithm_still_takes_env_with_a_deprecation():
    from ray.rllib.algorithms.algorithm import Algorithm

    param = inspect.signature(Algorithm.__init__).parameters["env"]
    assert param.default is None
    source = inspect.getsource(Algorithm.__init__)
    assert "deprecation_warning(" in source and "error=False" in source.split("if env is not None")[1][:400]
    assert ROWS["algo-init-env"].severity == "warn"


def _lint(tmp_path, text):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(text))
    out = subprocess.run([sys.executable, "-m", "rldoctor", "lint", "--format", "json", str(path)],
                         capture_output=True, text=True, timeout=120)
    return [(f["location"]["line"], f["evidence"]["row"], f["severity"])
            for f in json.loads(out.stdout)["findings"]]


def test_lint_finds_each_signature_and_history_row(tmp_path):
    found = _lint(tmp_path, """\
        from ray import tune
        from ray.rllib.algorithms.ppo import PPO, PPOConfig


        def policy_mapping_fn(agent_id, episode, worker, **kwargs):
            return "p0"


        def on_episode_end(*, episode, metrics_logger, **kwargs):
            metrics_logger.log_value("ret", episode.get_return(), reduce="mean", ema_coeff=0.1)
            metrics_logger.log_value("ret2", 1.0, reduce="ema", ema_coeff=0.1)


        config = PPOConfig().multi_agent(policies={"p0"}, policy_mapping_fn=policy_mapping_fn)
        fine = PPOConfig().multi_agent(policy_mapping_fn=lambda aid, episode, **kw: "p0")
        algo = PPO(config=config, env="CartPole-v1")
        analysis = tune.run("PPO", config=config.to_dict())
        paths = analysis.get_trial_checkpoints_paths(analysis.trials[0], "training_iteration")
        config.evaluation(evaluation_num_episodes=5)
        """)
    assert (14, "policy_mapping_fn-worker", "fail") in found
    assert (10, "logger-log_value-ema_coeff", "fail") in found
    assert (16, "algo-init-env", "warn") in found
    assert (18, "history-ExperimentAnalysis-get_trial_checkpoints_paths", "fail") in found
    assert (19, "history-kwarg-evaluation-evaluation_num_episodes", "fail") in found
    assert not [f for f in found if f[0] in (11, 15)], found


def test_old_stack_code_keeps_its_signature(tmp_path):
    found = _lint(tmp_path, """\
        from ray.rllib.algorithms.ppo import PPOConfig

        config = (PPOConfig().api_stack(enable_rl_module_and_learner=False,
                                        enable_env_runner_and_connector_v2=False)
                  .multi_agent(policy_mapping_fn=lambda aid, episode, worker, **kw: "p0"))
        """)
    assert not [f for f in found if f[1] == "policy_mapping_fn-worker"], found


def test_a_dict_config_reaching_tune_run_through_a_helper_is_rllibs(tmp_path):
    """The trainable is a parameter (`args.run`): the dict's "env" and RLlib keys say whose it is."""
    found = _lint(tmp_path, """\
        import argparse
        from ray import tune

        parser = argparse.ArgumentParser()
        parser.add_argument("--run", default="PPO")


        def run_same_policy(trainable, config):
            return tune.run(trainable, config=config, stop={"training_iteration": 5})


        def tune_a_function(config):
            return tune.run(train_fn, config={"lr": 0.1, "batch_size": 64})


        args = parser.parse_args()
        config = {"env": "CartPole-v1", "sgd_minibatch_size": 64}
        run_same_policy(args.run, config)
        """)
    assert (17, "key-sgd_minibatch_size", "fail") in found
    assert not [f for f in found if f[0] == 13], found


def test_ema_coeff_without_reduce_is_what_rllib_itself_writes(tmp_path):
    """RLlib's own vpg example logs `log_value(key, v, ema_coeff=0.1)`: an EMA, fine on 2.60."""
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    MetricsLogger().log_value("a", 1.0, ema_coeff=0.1)
    found = _lint(tmp_path, """\
        from ray.rllib.algorithms.algorithm import Algorithm


        class VPG(Algorithm):
            def training_step(self):
                self.metrics.log_value("ema", 1.0, ema_coeff=0.1)
                self.metrics.log_value("mean", 1.0, reduce="mean", ema_coeff=0.1)
        """)
    assert [f for f in found if f[1] == "logger-log_value-ema_coeff"] == [
        (7, "logger-log_value-ema_coeff", "fail")]
