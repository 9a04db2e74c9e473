"""Every row of RLD801's table of stale names, proven against the installed RLlib.

For each row the test does what the row says a script does (calls the config
method, sets the attribute, passes the dict config, imports the name, reads the
result key, ...) and checks that Ray 2.60 still behaves as written: raises with
those words, warns, silently ignores it (the intended effect does not happen,
while the row's replacement makes it happen), or breaks at first use. When Ray
is upgraded, the rows that changed fail here by name.

No Ray instance is started: `ray.init` is replaced by a function that fails the
test, configs are only built and validated, Algorithm objects are made without
their constructor.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import logging
import re
import shutil
import tempfile
import textwrap
import warnings
from types import SimpleNamespace

import pytest

from rldoctor.lint.rules.table import ROWS, SEVERITY

_ENV_RUNNERS = ("env_runners", "rollouts")
BUILD_TIME = ("when the config is built", "when the algorithm is built")


@pytest.fixture(scope="module", autouse=True)
def no_ray_instance():
    import ray
    import ray._private.worker as worker

    def refuse(*args, **kwargs):
        raise AssertionError("the table test must not start Ray")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ray, "init", refuse)
        patch.setattr(worker, "init", refuse)
        yield
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def rllib():
    from ray.rllib.algorithms.ppo import PPO, PPOConfig

    return SimpleNamespace(PPO=PPO, PPOConfig=PPOConfig)


class Observed:
    def __init__(self):
        self.exception: BaseException | None = None
        self.logged: list[str] = []
        self.warned: list[str] = []
        self.value = None

    @property
    def deprecation(self) -> bool:
        return any("DeprecationWarning" in m or "deprecated" in m for m in self.logged + self.warned)


class _Handler(logging.Handler):
    def __init__(self, into: list[str]):
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record):
        self.into.append(record.getMessage())


def observe(action) -> Observed:
    """Run `action` the first time in this process (RLlib warns and raises once per name)."""
    from ray.util.debug import reset_log_once

    reset_log_once()
    seen = Observed()
    handler = _Handler(seen.logged)
    loggers = [logging.getLogger(n) for n in ("ray._common.deprecation", "ray.rllib")]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                seen.value = action()
            except BaseException as exc:  # noqa: BLE001 - the row says what is raised
                seen.exception = exc
        seen.warned = [str(w.message) for w in caught]
    finally:
        for lg in loggers:
            lg.removeHandler(handler)
    return seen


def reached(value, example) -> bool:
    """The value set is the example (a dict setting may gain RLlib's own defaults around it)."""
    if isinstance(example, dict) and isinstance(value, dict):
        return all(value.get(k) == v for k, v in example.items())
    return value == example


def built(cfg):
    """What building the algorithm would say: validate a copy with an env set."""
    copy = cfg.copy(copy_frozen=False)
    if copy.env is None:
        copy.environment("CartPole-v1")
    copy.validate()
    return copy


def assert_raised(seen: Observed, row):
    assert seen.exception is not None, f"{row.id}: expected {row.error}, nothing was raised"
    kind, words = row.error
    if kind != "Exception":
        assert type(seen.exception).__name__ == kind or kind in [c.__name__ for c in type(seen.exception).__mro__], \
            f"{row.id}: raised {type(seen.exception).__name__}: {seen.exception}"
    assert words in str(seen.exception), f"{row.id}: {seen.exception}"


# -- what a row's intent is, so "ignored" can be shown: the effect is absent, the fix has it ----
def _has_gpu(cfg, rllib):
    return any(b.get("GPU") for b in rllib.PPO.default_resource_request(built(cfg)).bundles)


def _has_mean_std_filter(cfg, rllib):
    import gymnasium as gym

    pipeline = built(cfg).build_env_to_module_connector(env=gym.make("CartPole-v1"))
    return any(type(c).__name__ == "MeanStdFilter" for c in pipeline.connectors)


def _mean_std_fix(rllib):
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    return rllib.PPOConfig().env_runners(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())


def _shared_layers(cfg, rllib):
    return built(cfg).model_config.get("vf_share_layers") is True


def _shared_layers_fix(rllib):
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return rllib.PPOConfig().rl_module(model_config=DefaultModelConfig(vf_share_layers=True))


def _hidden_17(cfg, rllib):
    return built(cfg).model_config.get("fcnet_hiddens") == [17]


def _old_stack(cfg, rllib):
    return cfg.enable_rl_module_and_learner is False


def _read_by_rllib(name):
    def read(cfg, rllib):
        """Does anything of RLlib's new stack read this setting?"""
        import ray.rllib

        root = inspect.getfile(ray.rllib).rsplit("/", 1)[0]
        sources = ["algorithms/algorithm_config.py", "env/single_agent_env_runner.py",
                   "env/multi_agent_env_runner.py", "algorithms/ppo/ppo.py", "algorithms/algorithm.py"]
        from ray._common.deprecation import DEPRECATED_VALUE

        text = "".join(open(f"{root}/{s}", encoding="utf-8").read() for s in sources)
        text = text.replace(f"self.{name} = DEPRECATED_VALUE", "")  # a placeholder nothing reads
        defaults = vars(rllib.PPOConfig())
        return (name in defaults and defaults[name] != DEPRECATED_VALUE) or f".{name}" in text or \
            f'["{name}"]' in text
    return read


_horizon_read = _read_by_rllib("horizon")


EFFECT = {  # row id -> (intent happened?, config carrying the row's replacement)
    "kwarg-observation_filter": (_has_mean_std_filter, _mean_std_fix),
    "kwarg-resources-num_gpus": (_has_gpu, lambda r: r.PPOConfig().learners(num_gpus_per_learner=1)),
    "store-num_gpus": (_has_gpu, lambda r: r.PPOConfig().learners(num_gpus_per_learner=1)),
    "key-num_gpus": (_has_gpu, lambda r: r.PPOConfig().update_from_dict({"num_gpus_per_learner": 1})),
    "kwarg-vf_share_layers": (_shared_layers, _shared_layers_fix),
    "key-vf_share_layers": (_shared_layers, _shared_layers_fix),
    "kwarg-training-model": (_hidden_17, lambda r: r.PPOConfig().rl_module(model_config={"fcnet_hiddens": [17]})),
    "key-model": (_hidden_17, lambda r: r.PPOConfig().rl_module(model_config={"fcnet_hiddens": [17]})),
    "store-_enable_learner_api": (_old_stack, lambda r: r.PPOConfig().api_stack(
        enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False)),
    "store-_enable_rl_module_and_learner": (_old_stack, lambda r: r.PPOConfig().api_stack(
        enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False)),
    "key-_enable_learner_api": (_old_stack, lambda r: r.PPOConfig().api_stack(
        enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False)),
    "key-horizon": (_horizon_read, None),
    "key-monitor": (_read_by_rllib("monitor"), None),
    "key-no_done_at_end": (_read_by_rllib("no_done_at_end"), None),
    "key-soft_horizon": (_read_by_rllib("soft_horizon"), None),
    "key-observation_filter": (_has_mean_std_filter, _mean_std_fix),
    "store-model": (_hidden_17, lambda r: r.PPOConfig().rl_module(model_config={"fcnet_hiddens": [17]})),
}


def _assert_ignored(row, cfg, rllib):
    if row.id in EFFECT:
        happened, fixed = EFFECT[row.id]
        assert not happened(cfg, rllib), f"{row.id}: the setting took effect; the row is stale"
        if fixed is not None:
            assert happened(fixed(rllib), rllib), f"{row.id}: the replacement does not do it either"
        return
    assert row.new, f"{row.id}: an ignored row needs an EFFECT probe or a `new` attribute"
    default = getattr(rllib.PPOConfig(), row.new)
    assert getattr(cfg, row.new) == default != row.example, f"{row.id}: {row.new} changed"
    fixed = rllib.PPOConfig()
    if row.shape == "dict_key":
        fixed.update_from_dict({row.new: row.example})
    else:
        setattr(fixed, row.new, row.example)
    assert getattr(fixed, row.new) == row.example


def _expect_build_time(row) -> bool:
    return any(words in row.says for words in BUILD_TIME)


def _check_config_row(row, act, rllib):
    cfg_holder = {}

    def action():
        cfg_holder["cfg"] = cfg = rllib.PPOConfig()
        act(cfg)
        return cfg

    seen = observe(action)
    cfg = cfg_holder.get("cfg")
    if row.behaviour == "raises":
        if _expect_build_time(row):
            assert seen.exception is None, f"{row.id}: raised at once: {seen.exception}"
            assert_raised(observe(lambda: built(cfg)), row)
        else:
            assert_raised(seen, row)
        return
    assert seen.exception is None, f"{row.id}: raised {seen.exception!r}"
    assert observe(lambda: built(cfg)).exception is None, f"{row.id}: the config no longer builds"
    if row.behaviour == "warns":
        assert seen.deprecation, f"{row.id}: no DeprecationWarning any more: {seen.logged}"
        if row.new and row.example is not None and hasattr(cfg, row.new):
            assert reached(getattr(cfg, row.new), row.example), f"{row.id}: the value did not reach {row.new}"
    elif row.behaviour == "ignored":
        assert not seen.deprecation, f"{row.id}: Ray now warns about it: {seen.logged}"
        _assert_ignored(row, cfg, rllib)
    elif row.behaviour in ("works", "translated"):
        assert getattr(cfg, row.new) == row.example, f"{row.id}: {row.new} is not set from it"
        # a setting Ray still translates but warns about is at least `warn`, never `works`
        assert not seen.deprecation, f"{row.id}: Ray warns about it now: {seen.logged + seen.warned}"
    else:
        pytest.fail(f"{row.id}: no probe for behaviour {row.behaviour}")


def _method_of(row) -> str:
    return "env_runners" if row.where == _ENV_RUNNERS else row.where[0]


def _replacement_works(row, rllib):
    """The row's replacement, written the way the finding writes it, is accepted by RLlib."""
    if not row.new or row.shape != "kwarg" or row.id in ("kwarg-lr_schedule", "kwarg-entropy_coeff_schedule",
                                                         "kwarg-training-model", "kwarg-training-learner_class"):
        return
    method = row.moves_to or _method_of(row)
    seen = observe(lambda: getattr(rllib.PPOConfig(), method)(**{row.new: row.example}))
    assert seen.exception is None and not seen.deprecation, f"{row.id}: .{method}({row.new}=...) -> {seen.exception or seen.logged}"
    assert reached(getattr(seen.value, row.new), row.example)


# -- one probe per shape -----------------------------------------------------------------------------
def probe_kwarg(row, rllib):
    _check_config_row(row, lambda cfg: getattr(cfg, _method_of(row))(**{row.old: row.example}), rllib)
    _replacement_works(row, rllib)


def probe_arg_value(row, rllib):
    _check_config_row(row, lambda cfg: getattr(cfg, row.where[0])(row.example), rllib)
    assert observe(lambda: built(getattr(rllib.PPOConfig(), row.where[0])(row.new))).exception is None


def probe_attr_store(row, rllib):
    if row.old == "model":  # written as config.model["fcnet_hiddens"] = ..., an item of the old dict
        _check_config_row(row, lambda cfg: cfg.model.update(row.example), rllib)
        return
    _check_config_row(row, lambda cfg: setattr(cfg, row.old, row.example), rllib)
    if row.behaviour != "ignored":
        return
    # config["key"] = v on an AlgorithmConfig is the same attribute store
    cfg = rllib.PPOConfig()
    cfg[row.old] = row.example
    assert getattr(cfg, row.old) == row.example


def probe_dict_key(row, rllib):
    from ray.rllib.algorithms.algorithm import Algorithm

    _check_config_row(row, lambda cfg: cfg.update_from_dict({row.old: row.example}), rllib)
    # dict configs reach update_from_dict: Algorithm(config=dict), tune.run("PPO", config=dict)
    assert "default_config.update_from_dict(config)" in inspect.getsource(Algorithm.__init__)
    if row.new and row.behaviour in ("ignored", "raises", "works", "translated", "warns") and row.id != "key-framework-tf":
        fixed = observe(lambda: rllib.PPOConfig().update_from_dict({row.new: row.example}))
        assert fixed.exception is None and reached(getattr(fixed.value, row.new), row.example), row.id


def probe_method(row, rllib):
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    if row.old == "build":  # building would start Ray: read the decorator's own settings instead
        spec = inspect.getclosurevars(AlgorithmConfig.build).nonlocals
        assert spec["error"] is False and spec["new"] == "AlgorithmConfig.build_algo", spec
        assert callable(getattr(AlgorithmConfig, row.new))
        return
    seen = observe(lambda: getattr(rllib.PPOConfig(), row.old)())
    assert_raised(seen, row)
    if row.new:
        assert callable(getattr(rllib.PPOConfig(), row.new))


def probe_module(row, rllib):
    if row.old == "ray.tune.function":
        import ray.tune

        assert not hasattr(ray.tune, "function")
        return
    seen = observe(lambda: importlib.import_module(row.old))
    assert_raised(seen, row)
    _fix_imports_work(row)
    if row.new and row.old != "ray.rllib.agents":
        assert importlib.util.find_spec(row.new) is not None, row.new
    if row.old == "ray.rllib.examples.env":
        assert importlib.util.find_spec(f"{row.new}.simple_corridor") is not None
    if row.new and row.old == "ray.rllib.agents":
        for sub in ("ppo", "appo", "impala", "dqn", "sac", "cql", "bc", "marwil", "dreamerv3",
                    "iql", "tqc", "callbacks"):
            assert importlib.util.find_spec(f"{row.new}.{sub}") is not None, sub
    if row.old == "ray.internal.internal_api":
        assert callable(importlib.import_module("ray._private.internal_api").memory_summary)


def _fix_imports_work(row):
    """Every `from X import Y` the row's fix writes out imports on this Ray."""
    for code in re.findall(r"`(from [\w.]+ import [\w, ]+)`", row.fix):
        namespace: dict = {}
        exec(code, namespace)  # noqa: S102 - our own table's text


def probe_name(row, rllib):
    modules = [w for w in row.where if w.startswith("ray.rllib.algorithms")]
    module = modules[0] if modules else row.where[-1]
    if row.new:
        module = f"ray.rllib.algorithms.{row.new.lower()}"
    elif row.old == "DEFAULT_CONFIG":
        module = "ray.rllib.algorithms.ppo"
    seen = observe(lambda: exec(f"from {module} import {row.old}", {}))
    assert_raised(seen, row)
    _fix_imports_work(row)
    assert importlib.util.find_spec("ray.rllib.agents") is None
    if row.new:
        namespace: dict = {}
        exec(f"from {module} import {row.new}, {row.new}Config", namespace)
        assert inspect.isclass(namespace[row.new])


def _bare_algorithm(rllib):
    return object.__new__(rllib.PPO)  # no constructor: nothing is built, no Ray


def probe_algo_attr(row, rllib):
    from ray.rllib.algorithms.algorithm import Algorithm

    static = inspect.getattr_static(Algorithm, row.old)
    assert not isinstance(static, property), f"{row.id}: a real property again"
    algo = _bare_algorithm(rllib)
    seen = observe(lambda: getattr(algo, row.old))
    assert seen.exception is None and inspect.ismethod(seen.value), f"{row.id}: {seen.value!r}"
    assert observe(lambda: seen.value.foreach_env_runner).exception.__class__ is AttributeError
    assert inspect.getclosurevars(static).nonlocals["new"] == f"Algorithm.{row.new}"


def probe_algo_call(row, rllib):
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    if row.old == "save":
        assert inspect.signature(Algorithm.save).return_annotation.__name__ == "_TrainingResult"
        assert inspect.signature(Algorithm.save_to_path).return_annotation is str
        return
    if row.behaviour == "raises":
        algo = _bare_algorithm(rllib)
        assert_raised(observe(lambda: getattr(algo, row.old)()), row)
        if row.new:
            assert callable(getattr(Algorithm, row.new))
        else:
            assert callable(Algorithm.get_module)
        return
    # breaks: the call goes through the env runner's Policy, which the new stack does not have
    assert not hasattr(SingleAgentEnvRunner, "get_policy")
    func = inspect.unwrap(getattr(Algorithm, row.old))
    assert "get_policy(" in inspect.getsource(func)
    if row.old != "get_policy":
        assert inspect.getclosurevars(getattr(Algorithm, row.old)).nonlocals["error"] is False
    assert callable(Algorithm.get_module)
    # the replacement the finding writes out runs on a real new-stack RLModule
    import gymnasium as gym
    import numpy as np
    import torch

    module = _cartpole_module(rllib)
    obs, _ = gym.make("CartPole-v1").reset(seed=0)
    namespace = {"module": module, "algo": SimpleNamespace(get_module=lambda: module), "obs": obs,
                 "obs_batch": np.array([obs], np.float32), "np": np, "torch": torch}
    code = [c for c in re.findall(r"`([^`]+)`", row.fix) if "get_module()" in c or "module." in c][-1]
    out = eval(code, namespace)  # noqa: S307 - our own table's text
    assert out is not None


_MODULE = {}


def _cartpole_module(rllib):
    if "module" not in _MODULE:
        import gymnasium as gym

        spec = rllib.PPOConfig().environment("CartPole-v1").get_rl_module_spec(env=gym.make("CartPole-v1"))
        _MODULE["module"] = spec.build()
    return _MODULE["module"]


def _new_stack_result():
    """A result as the new stack compiles it, keys from RLlib's own metric names, flattened by Tune."""
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.utils import metrics as m
    from ray.tune.utils import flatten_dict

    runners = {m.EPISODE_RETURN_MEAN: 500.0, m.EPISODE_RETURN_MAX: 500.0, m.EPISODE_RETURN_MIN: 9.0,
               m.EPISODE_MODULE_RETURN_MEAN: {"default_policy": 500.0},
               m.EPISODE_LEN_MEAN: 500.0, m.NUM_EPISODES: 3, m.NUM_EPISODES_LIFETIME: 30,
               m.NUM_ENV_STEPS_SAMPLED_LIFETIME: 10_000_000}
    timer = SimpleNamespace(observe=lambda *a, **k: None)
    fake = SimpleNamespace(_timers={}, _metrics_compile_iteration_results_time=timer,
                           env_runner_group=None)
    result = Algorithm._compile_iteration_results(
        fake, train_results={m.ENV_RUNNER_RESULTS: runners},
        eval_results={m.EVALUATION_RESULTS: {m.ENV_RUNNER_RESULTS: dict(runners)}})
    return flatten_dict(result)


def probe_result_key(row, rllib):
    from ray.tune.experiment.trial import Trial
    from ray.tune.trainable.trainable import Trainable

    flat = _new_stack_result()
    assert row.old not in flat and row.new in flat, (row.old, row.new, sorted(flat))
    # Tune fills timesteps_total / episodes_total only from *_this_iter keys, which the new stack has not
    assert "timesteps_this_iter" not in flat and "episodes_this_iter" not in flat
    assert "if result.get(TIMESTEPS_THIS_ITER) is not None" in inspect.getsource(Trainable.train)
    trial = object.__new__(Trial)
    trial.stopping_criterion = {row.old: 0}
    assert Trial.should_stop(trial, flat) is False  # never fires, even at once-reached values
    trial.stopping_criterion = {row.new: 0}
    assert Trial.should_stop(trial, flat) is True
    # as a TuneConfig metric Tune raises at the first result
    from ray.tune.execution.tune_controller import TuneController
    from ray.tune.result import DEFAULT_METRIC

    controller = SimpleNamespace(_metric=row.old, _scheduler_alg=SimpleNamespace(metric=DEFAULT_METRIC),
                                 _search_alg=SimpleNamespace(metric=DEFAULT_METRIC))
    seen = observe(lambda: TuneController._validate_result_metrics(controller, flat))
    assert "did not include the specified metric" in str(seen.exception)
    # as a checkpoint score, Tune keeps the newest checkpoints instead of the best
    from ray.train import Checkpoint, CheckpointConfig
    from ray.train._internal.checkpoint_manager import _CheckpointManager
    from ray.train._internal.session import _TrainingResult

    for attribute, best_kept in ((row.old, "newest"), (row.new, "best")):
        manager = _CheckpointManager(CheckpointConfig(checkpoint_score_attribute=attribute))
        good = _TrainingResult(Checkpoint("/nonexistent/a"), {**flat, row.new: 500.0})
        bad = _TrainingResult(Checkpoint("/nonexistent/b"), {**flat, row.new: 1.0})
        observe(lambda: (manager.register_checkpoint(good), manager.register_checkpoint(bad)))
        assert manager.best_checkpoint_result is (bad if best_kept == "newest" else good), attribute


def probe_call_kwarg(row, rllib):
    import ray
    import ray.tune.tune as tune_module

    if row.id.startswith("tune-"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(tune_module, "_ray_auto_init", lambda **kwargs: None)
            value = "/tmp/rldoctor-never-written" if row.old == "local_dir" else (
                2 if row.old != "checkpoint_score_attr" else "env_runners/episode_return_mean")
            if row.old == "checkpoint_at_end":
                value = True
            # chdir_to_trial_dir raises right after the checkpoint arguments are read: nothing runs
            seen = observe(lambda: ray.tune.run("PPO", **{row.old: value}, chdir_to_trial_dir=True))
        if row.behaviour == "raises":
            assert_raised(seen, row)
        else:
            assert any(row.old in w and "deprecated" in w for w in seen.warned), seen.warned
            assert row.new in inspect.signature(ray.tune.CheckpointConfig).parameters
        return
    if row.id == "ray-remote-object_store_memory":
        seen = observe(lambda: ray.remote(object_store_memory=2**30)(type("Actor", (), {})))
        assert seen.exception is None
        assert any("doesn't actually reserve" in w for w in seen.warned), seen.warned
        seen = observe(lambda: ray.remote(object_store_memory=2**30)(lambda: 1))
        assert "not implemented for tasks" in str(seen.exception)
        return
    if row.id == "runconfig-local_dir":
        import ray.air
        import ray.train

        for config_class in (ray.tune.RunConfig, ray.train.RunConfig, ray.air.RunConfig):
            assert_raised(observe(lambda: config_class(local_dir=row.example)), row)
            assert observe(lambda: config_class(storage_path=row.example)).exception is None
        return
    if row.id == "ray-init-redis_address":
        path = inspect.getsourcefile(importlib.import_module("ray._private.worker"))  # init is patched here
        module = ast.parse(open(path, encoding="utf-8").read())
        tree = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "init")
        names = [a.arg for a in tree.args.args + tree.args.kwonlyargs]
        assert row.old not in names and row.new in names and tree.args.kwarg is not None, names
        assert "Unknown keyword argument(s)" in ast.unparse(tree)
        return
    if row.id == "ray-init-local_mode":
        path = inspect.getsourcefile(importlib.import_module("ray._private.worker"))  # init is patched here
        module = ast.parse(open(path, encoding="utf-8").read())
        tree = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "init")
        raises = [n for n in ast.walk(tree) if isinstance(n, ast.If) and
                  isinstance(n.test, ast.Name) and n.test.id == "local_mode"]
        assert raises and any(isinstance(s, ast.Raise) for s in raises[0].body)
        assert row.error[1] in ast.unparse(raises[0])
        return
    if row.id.startswith("serve-run-"):
        path = importlib.util.find_spec("ray.serve").submodule_search_locations[0] + "/api.py"
        tree = ast.parse(open(path, encoding="utf-8").read())
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        run_args = functions["run"].args
        names = [a.arg for a in run_args.args + run_args.kwonlyargs]
        assert row.old not in names and run_args.kwarg is None, names
        start_args = functions["start"].args
        assert "http_options" in [a.arg for a in start_args.args + start_args.kwonlyargs]
        return
    pytest.fail(f"no probe for {row.id}")


def _episode_callback_kwargs() -> set[str]:
    """The keyword arguments the new-stack env runners pass to on_episode_* callbacks."""
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    passed = []
    for runner in (SingleAgentEnvRunner, MultiAgentEnvRunner):
        tree = ast.parse(textwrap.dedent(inspect.getsource(runner._make_on_episode_callback)))
        keys = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dict":
                keys |= {kw.arg for kw in node.keywords}
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                keys.add(node.slice.value)
        passed.append(keys)
    assert passed[0], "could not read the callback arguments"
    return set.intersection(*passed)


def probe_callback_arg(row, rllib):
    passed = _episode_callback_kwargs()
    assert row.old not in passed, passed
    assert row.new in passed, passed


def probe_episode_attr(row, rllib):
    from ray.rllib.env.multi_agent_episode import MultiAgentEpisode
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    for episode in (SingleAgentEpisode(), MultiAgentEpisode()):
        assert not hasattr(episode, row.old), (type(episode).__name__, row.old)
    new = row.new
    if new.startswith("metrics_logger."):
        assert callable(MetricsLogger.log_value)
    elif new.startswith("len("):
        assert len(SingleAgentEpisode()) == 0
    else:
        assert hasattr(SingleAgentEpisode(), new.split("(")[0])


def probe_run_config_class(row, rllib, tmp_path_factory=None):
    import ray.air
    import ray.train
    import ray.tune

    storage = tempfile.mkdtemp(prefix="rldoctor-tuner-")
    try:
        for module_name in row.where:
            config_class = getattr(importlib.import_module(module_name), row.old)
            assert config_class is not ray.tune.RunConfig, module_name
            seen = observe(lambda: ray.tune.Tuner(lambda config: None,
                                                  run_config=config_class(storage_path=storage, name="old")))
            assert seen.exception is None, seen.exception
            assert any("should be imported from `ray.tune`" in w for w in seen.warned), seen.warned
        seen = observe(lambda: ray.tune.Tuner(lambda config: None,
                                              run_config=ray.tune.RunConfig(storage_path=storage, name="new")))
        assert not any("should be imported" in w for w in seen.warned), seen.warned
    finally:
        shutil.rmtree(storage, ignore_errors=True)


PROBES = {"run_config_class": probe_run_config_class, "kwarg": probe_kwarg, "arg_value": probe_arg_value, "attr_store": probe_attr_store,
          "dict_key": probe_dict_key, "method": probe_method, "module": probe_module,
          "name": probe_name, "algo_attr": probe_algo_attr, "algo_call": probe_algo_call,
          "result_key": probe_result_key, "call_kwarg": probe_call_kwarg,
          "callback_arg": probe_callback_arg, "episode_attr": probe_episode_attr}


def test_every_row_has_a_probe_and_a_severity_that_follows_its_harm():
    assert len({r.id for r in ROWS}) == len(ROWS)
    for row in ROWS:
        assert row.shape in PROBES, row.id
        expected = SEVERITY[row.behaviour]
        assert row.severity == expected, f"{row.id}: {row.behaviour} is {expected}, not {row.severity}"
        if row.behaviour == "raises":
            assert row.error, f"{row.id}: a raising row says what it raises"
        assert row.new or row.fix, f"{row.id}: no replacement"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_row_behaves_as_the_table_says(row, rllib):
    PROBES[row.shape](row, rllib)


def test_imports_the_installed_ray_lacks_really_fail(tmp_path):
    """The findings read from the installed Ray's files (not rows of the table) are right:
    each module or name they say is gone fails to import, with the error they name; names
    and modules that are there are not reported."""
    from conftest import lint_paths

    script = tmp_path / "imports.py"
    script.write_text(
        "from ray.rllib import agents\n"
        "from ray.rllib.evaluation import RolloutWorker, MultiAgentEpisode\n"
        "from ray.rllib.policy.tf_policy import LearningRateSchedule\n"
        "from ray.rllib.evaluation.worker_set import WorkerSet\n"
        "import ray.experimental.tfutils\n"
        "from ray.rllib.algorithms.a3c import A3CConfig\n"
        "from ray.rllib.algorithms.ppo import PPOConfig\n"
        "from ray.tune import Tuner, RunConfig\n"
        "from ray.rllib.examples.envs.classes.utils.cartpole_observations_proto import CartPoleObservation\n"
        "WorkerSet()\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ray.rllib.core.learner.learner import ParamList\n"
        "from ray.rllib.evaluation.episode_v2 import EpisodeV2\n")
    fixtures = [p for p in (pytest.importorskip("conftest").FIXTURES / "lint" / "rules").glob("*.py")]
    report, _, _ = lint_paths([str(script)] + [str(p) for p in fixtures])
    found = [f for f in report.findings if f.evidence.get("row") == "import-missing-in-ray"]
    in_script = {f.location["line"] for f in found if f.location["path"] == str(script)}
    assert in_script == {1, 3, 4, 5, 6}, sorted(in_script)  # line 2: the table's own MultiAgentEpisode row
    assert any(f.evidence.get("row") == "name-MultiAgentEpisode" and f.location["line"] == 2
               for f in report.findings if f.location["path"] == str(script))
    for f in found:
        module, name = f.evidence["module"], f.evidence.get("name")
        if "deprecated with error=True" in f.message:
            cls = getattr(importlib.import_module(module), name)
            seen = observe(lambda: cls())
            assert isinstance(seen.exception, ValueError) and "deprecated" in str(seen.exception), seen.exception
            continue
        if name is None:
            seen = observe(lambda: importlib.import_module(module))
            assert isinstance(seen.exception, ModuleNotFoundError), (module, seen.exception)
        else:
            seen = observe(lambda: exec(f"from {module} import {name}", {}))
            assert isinstance(seen.exception, ImportError), (module, name, seen.exception)
            assert f"cannot import name '{name}'" in str(seen.exception)
    for module, name in (("ray.rllib.evaluation", "RolloutWorker"), ("ray.rllib.algorithms.ppo", "PPOConfig"),
                         ("ray.tune", "RunConfig")):
        exec(f"from {module} import {name}", {})  # the import works: raises if it does not
        assert not [f for f in found if (f.evidence["module"], f.evidence.get("name")) == (module, name)]


def _deprecated_with_error(cls) -> set[str]:
    """Members of `cls` whose @Deprecated(..., error=True) makes every use raise (read from source)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", "") == "Deprecated" and \
                        any(k.arg == "error" and getattr(k.value, "value", None) is True for k in decorator.keywords):
                    found.add(node.name)
    return found


def test_the_table_covers_every_member_ray_marks_deprecated_with_error():
    """Every AlgorithmConfig and Algorithm member the installed Ray marks @Deprecated(error=True)
    has a row, so the table is complete where Ray itself says what is gone."""
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    rows = {(r.shape, r.old) for r in ROWS}
    config = _deprecated_with_error(AlgorithmConfig)
    algorithm = _deprecated_with_error(Algorithm)
    assert len(config) >= 20 and {"workers", "restore_workers"} <= algorithm
    internal = {"_enable_new_api_stack", "uses_new_env_runners"}  # no script sets or calls these
    missing = [m for m in sorted(config - internal)
               if not rows & {("method", m), ("attr_store", m)}]
    missing += [m for m in sorted(algorithm) if not rows & {("algo_attr", m), ("algo_call", m)}]
    assert not missing, missing
