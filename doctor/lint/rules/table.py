"""Every RLlib/Tune (and training-script Ray) name the pinned Ray removed, renamed or ignores.

One row per old usage: its shape, what Ray 2.60 does with it, the severity that
follows from the harm, and the replacement. `tests/test_lint_table.py` imports
RLlib and proves every row still behaves as written here (raises, is silently
ignored, warns, breaks on first use), so a Ray upgrade shows which rows changed.

Shapes (`Row.shape`) and where `Row.old` is looked for:

    method        config.<old>(...) on an AlgorithmConfig
    kwarg         config.<where>(<old>=...)
    arg_value     config.<where>("<value>") / <where>(<kwarg>="<value>")
    attr_store    config.<old> = v, and config["<old>"] = v on an AlgorithmConfig
    dict_key      {"<old>": v} in a dict config (tune.run(config=...), Tuner(param_space=...),
                  update_from_dict, from_dict, Algorithm(config=...), RLlib experiment YAML)
    module        import <old>..., from <old>... import (and <old>... used as a dotted name)
    name          from <where> import <old>, or <old> used without being defined
    algo_attr     algo.<old> on an Algorithm
    algo_call     algo.<old>(...) on an Algorithm
    result_key    "<old>" as a Tune stop key, a metric, a checkpoint score or a result lookup
    call_kwarg    <where>(<old>=...) for the functions named in `where`
    run_config_class  a RunConfig from the modules in `where` handed to `Tuner(run_config=...)`
    import        (read from the installed Ray, not listed here) `import`/`from ... import` of a
                  ray module that no longer exists, or of a name it no longer defines
    callback_arg  an RLlibCallback on_episode_* method that requires parameter <old>
    episode_attr  episode.<old> inside an on_episode_* callback

Behaviours, and the severity they carry (harm decides, see `SEVERITY`):

    ignored       accepted and silently ignored: the run does something else than written   fail
    never-fires   a stop condition (or score) on a key the results never have                fail
    breaks        accepted, then fails at first use (AttributeError, TypeError in a runner)  fail
    raises        raises at once or when the config is built                                 fail
    warns         still works, deprecated (a warning, often hidden)                          warn
    translated    a dict config's old key, translated without a word, while its method and    warn
                  attribute spellings already raise or are ignored: the last place the
                  deprecated name works, and a later Ray drops it (one severity whatever the
                  spelling: a deprecation that still works is a warn)
    works         still works the same; the new name is clearer                              info

`inert` lists literal values for which the usage does nothing harmful (a GPU
count of 0 that is ignored anyway); with them the finding is `warn`.
`stack="new"` rows are wrong only on the new API stack (the default on 2.60);
code that runs only on the old stack (an `if` on `old_api_stack`, a config that
calls `api_stack(enable_rl_module_and_learner=False)`) is not flagged for them.
`mechanical` rows are renames that keep the meaning: `rldoctor lint --fix`
rewrites them; everything else is reported with its replacement and left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SEVERITY = {"ignored": "fail", "never-fires": "fail", "breaks": "fail", "raises": "fail",
            "warns": "warn", "translated": "warn", "works": "info"}


@dataclass(frozen=True)
class Row:
    id: str
    shape: str
    old: str
    behaviour: str
    where: tuple[str, ...] = ()
    new: str | None = None  # the name written in place of `old`
    moves_to: str | None = None  # the config method the replacement belongs to, when it moves
    error: tuple[str, str] | None = None  # (exception type, words of its message) for `raises`
    says: str = ""  # what Ray 2.60 does, when more than the behaviour says
    fix: str = ""  # how to replace it, when more than `new` says
    stack: str = "any"
    inert: tuple = ()
    values: tuple = ()  # arg_value / dict_key rows: only these literal values
    mechanical: bool = False
    example: object = 1  # a value the table test passes when it probes the row
    algo: str = ""  # the algorithm the row was checked with, when it matters ("PPO")
    severity: str = field(default="")

    def __post_init__(self):
        if not self.severity:
            object.__setattr__(self, "severity", SEVERITY[self.behaviour])


_CONFIG_METHODS = ("environment", "env_runners", "rollouts", "training", "resources", "learners",
                   "framework", "api_stack", "rl_module", "fault_tolerance", "evaluation",
                   "experimental", "callbacks", "multi_agent", "reporting", "debugging",
                   "checkpointing", "offline_data", "python_environment")
_ENV_RUNNERS = ("env_runners", "rollouts")
_NEW_STACK_ON = ".api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)"
_DEFAULT = "the default on Ray 2.60: drop the argument (or write " + _NEW_STACK_ON + ")"


def _ft(old: str, new: str) -> Row:
    return Row(f"fault-tolerance-{old}", "kwarg", old, "raises", ("fault_tolerance",), new=new,
               error=("ValueError", f"`AlgorithmConfig.fault_tolerance({old})` has been deprecated"),
               mechanical=True, example=True if "failures" in old or "recreate" in old else 3)


def _store(old: str, new: str | None, behaviour: str, error: tuple[str, str] | None = None,
           **extra) -> Row:
    return Row(f"store-{old}", "attr_store", old, behaviour, new=new, error=error,
               mechanical=new is not None, **extra)


def _key(old: str, new: str | None, behaviour: str, **extra) -> Row:
    mechanical = extra.pop("mechanical", new is not None)
    return Row(f"key-{old}", "dict_key", old, behaviour, new=new, mechanical=mechanical, **extra)


def _result(old: str, new: str) -> Row:
    return Row(f"result-{old.replace('/', '-')}", "result_key", old, "never-fires", new=new,
               mechanical=True,
               says="is a key new-stack results do not have")


def _trainer(old: str, new: str) -> Row:
    return Row(f"name-{old}", "name", old, "raises", ("ray.rllib.agents", "ray.rllib.algorithms"),
               new=new, mechanical=True, error=("ImportError", f"cannot import name '{old}'"),
               fix=f"`from ray.rllib.algorithms.{new.lower()} import {new}, {new}Config`; "
                   f"build it with `{new}Config()....build_algo()`")


def _removed_algorithm(old: str, module: str) -> Row:
    return Row(f"name-{old}", "name", old, "raises", (f"ray.rllib.agents.{module}",
                                                     f"ray.rllib.algorithms.{module}"),
               error=("ModuleNotFoundError", f"ray.rllib.algorithms.{module}"),
               says=f"this algorithm is no longer part of RLlib (no ray.rllib.algorithms.{module})",
               fix="PPO or APPO for on-policy training, SAC for continuous control, DQN for "
                   "discrete off-policy; the old implementations live on in the rllib_contrib "
                   "repository, pinned to old Ray versions")


def _episode(old: str, new: str) -> Row:
    return Row(f"episode-{old}", "episode_attr", old, "breaks", new=new, stack="new",
               says="does not exist on the new stack's SingleAgentEpisode/MultiAgentEpisode "
                    "(AttributeError inside the env runner)")


ROWS: tuple[Row, ...] = (
    # ---- AlgorithmConfig methods ------------------------------------------------------------
    Row("method-rollouts", "method", "rollouts", "raises", new="env_runners", mechanical=True,
        error=("ValueError", "`rollouts` has been deprecated. Use `AlgorithmConfig.env_runners(..)` instead.")),
    Row("method-exploration", "method", "exploration", "raises",
        error=("ValueError", "`exploration` has been deprecated. Use `AlgorithmConfig.env_runners(..)` instead."),
        fix="on the new API stack exploration is the RLModule's forward_exploration(); turn it off "
            "with `.env_runners(explore=False)`; epsilon-style exploration_config settings have no "
            "config equivalent"),
    Row("method-learner", "method", "learner", "raises",
        error=("AttributeError", "object has no attribute 'learner'"),
        fix="there is no config.learner(): `.learners(num_learners=..., num_gpus_per_learner=...)` "
            "sets the learners, loss options such as use_kl_loss are `.training()` arguments, and "
            "there is no half_precision setting"),
    Row("method-get_marl_module_spec", "method", "get_marl_module_spec", "raises",
        new="get_multi_rl_module_spec", mechanical=True,
        error=("ValueError", "`get_marl_module_spec` has been deprecated")),
    Row("method-build", "method", "build", "warns", new="build_algo", mechanical=True,
        says="still builds, with a one-time DeprecationWarning: `build` has been deprecated. Use "
             "`AlgorithmConfig.build_algo` instead."),
    # ---- env_runners() / rollouts() ---------------------------------------------------------
    Row("kwarg-num_rollout_workers", "kwarg", "num_rollout_workers", "raises", _ENV_RUNNERS,
        new="num_env_runners", mechanical=True, example=2,
        error=("ValueError", "`AlgorithmConfig.env_runners(num_rollout_workers)` has been deprecated")),
    Row("kwarg-num_envs_per_worker", "kwarg", "num_envs_per_worker", "raises", _ENV_RUNNERS,
        new="num_envs_per_env_runner", mechanical=True, example=2,
        error=("ValueError", "`AlgorithmConfig.env_runners(num_envs_per_worker)` has been deprecated")),
    Row("kwarg-validate_workers_after_construction", "kwarg", "validate_workers_after_construction",
        "raises", _ENV_RUNNERS, new="validate_env_runners_after_construction", mechanical=True,
        example=True, error=("ValueError", "env_runners(validate_workers_after_construction)` has been deprecated")),
    Row("kwarg-env_runners-recreate_failed_workers", "kwarg", "recreate_failed_workers", "raises",
        _ENV_RUNNERS, new="restart_failed_env_runners", moves_to="fault_tolerance", example=True,
        error=("ValueError", "`AlgorithmConfig.env_runners(recreate_failed_workers=..)` has been deprecated")),
    Row("kwarg-env_runners-ignore_worker_failures", "kwarg", "ignore_worker_failures", "raises",
        _ENV_RUNNERS, new="ignore_env_runner_failures", moves_to="fault_tolerance", example=True,
        error=("ValueError", "ignore_worker_failures is deprecated")),
    Row("kwarg-synchronize_filter", "kwarg", "synchronize_filter", "raises", _ENV_RUNNERS,
        new="update_worker_filter_stats", example=True,
        error=("ValueError", "`AlgorithmConfig.env_runners(synchronize_filter=..)` has been deprecated")),
    Row("kwarg-enable_connectors", "kwarg", "enable_connectors", "warns", _ENV_RUNNERS, example=True,
        fix="drop it: ConnectorV2 pipelines are always on with the new API stack"),
    Row("kwarg-observation_filter", "kwarg", "observation_filter", "ignored", _ENV_RUNNERS,
        stack="new", inert=("NoFilter",), example="MeanStdFilter",
        says="is accepted and ignored on the new API stack: observations reach the RLModule unfiltered",
        fix="`.env_runners(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())` "
            "with `from ray.rllib.connectors.env_to_module import MeanStdFilter`"),
    # ---- resources() --------------------------------------------------------------------------
    Row("kwarg-resources-num_gpus", "kwarg", "num_gpus", "ignored", ("resources",),
        new="num_gpus_per_learner", moves_to="learners", stack="new", inert=(0, 0.0),
        says="is ignored on the new API stack: the learner trains on CPU (no GPU is requested)"),
    Row("kwarg-num_cpus_for_driver", "kwarg", "num_cpus_for_driver", "raises", ("resources",),
        new="num_cpus_for_main_process", mechanical=True, example=2,
        error=("TypeError", "got an unexpected keyword argument 'num_cpus_for_driver'")),
    Row("kwarg-num_cpus_per_worker", "kwarg", "num_cpus_per_worker", "warns", ("resources",),
        new="num_cpus_per_env_runner", moves_to="env_runners"),
    Row("kwarg-num_gpus_per_worker", "kwarg", "num_gpus_per_worker", "warns", ("resources",),
        new="num_gpus_per_env_runner", moves_to="env_runners"),
    Row("kwarg-custom_resources_per_worker", "kwarg", "custom_resources_per_worker", "warns",
        ("resources",), new="custom_resources_per_env_runner", moves_to="env_runners",
        example={"accel": 1}),
    Row("kwarg-num_learner_workers", "kwarg", "num_learner_workers", "warns", ("resources",),
        new="num_learners", moves_to="learners"),
    Row("kwarg-num_cpus_per_learner_worker", "kwarg", "num_cpus_per_learner_worker", "warns",
        ("resources",), new="num_cpus_per_learner", moves_to="learners"),
    Row("kwarg-num_gpus_per_learner_worker", "kwarg", "num_gpus_per_learner_worker", "warns",
        ("resources",), new="num_gpus_per_learner", moves_to="learners"),
    Row("kwarg-num_cpus_for_local_worker", "kwarg", "num_cpus_for_local_worker", "warns",
        ("resources",), new="num_cpus_for_main_process", mechanical=True, example=2),
    # ---- training() ---------------------------------------------------------------------------
    Row("kwarg-sgd_minibatch_size", "kwarg", "sgd_minibatch_size", "raises", ("training",),
        new="minibatch_size", mechanical=True, example=64,
        error=("TypeError", "got an unexpected keyword argument 'sgd_minibatch_size'")),
    Row("kwarg-num_sgd_iter", "kwarg", "num_sgd_iter", "warns", ("training",), new="num_epochs",
        mechanical=True, example=7,
        says="still works, with a DeprecationWarning: `config.training(num_sgd_iter=..)` has been "
             "deprecated. Use `config.training(num_epochs=..)` instead."),
    Row("kwarg-vf_share_layers", "kwarg", "vf_share_layers", "ignored", ("training",), algo="PPO",
        example=True, inert=(False,),
        says="is dropped without a word by PPOConfig.training(): the value and policy nets stay separate",
        fix="`.rl_module(model_config=DefaultModelConfig(vf_share_layers=True))` with `from "
            "ray.rllib.core.rl_module.default_model_config import DefaultModelConfig`"),
    Row("kwarg-training-model", "kwarg", "model", "ignored", ("training",), stack="new",
        moves_to="rl_module", new="model_config", example={"fcnet_hiddens": [17]},
        says="is ignored on the new API stack (one warning at build time): the RLModule is "
             "built from `rl_module(model_config=...)`, so fcnet_hiddens and the rest have no effect"),
    Row("kwarg-training-_enable_learner_api", "kwarg", "_enable_learner_api", "raises",
        ("training",), example=True,
        error=("TypeError", "got an unexpected keyword argument '_enable_learner_api'"),
        fix="the Learner API is " + _DEFAULT),
    Row("kwarg-lr_schedule", "kwarg", "lr_schedule", "raises", ("training",), stack="new",
        new="lr", example=[[0, 1e-3], [1000, 1e-4]],
        error=("ValueError", "`lr_schedule` is deprecated and must be None! Use the `lr` setting to setup a schedule."),
        says="raises ValueError when the config is built",
        fix="`lr=[[0, 1e-3], [1_000_000, 1e-5]]`: `lr` takes the same [[timestep, value], ...] schedule"),
    Row("kwarg-entropy_coeff_schedule", "kwarg", "entropy_coeff_schedule", "raises", ("training",),
        stack="new", new="entropy_coeff", example=[[0, 0.01], [1000, 0.001]], algo="PPO",
        error=("ValueError", "`entropy_coeff_schedule` is deprecated and must be None!"),
        says="raises ValueError when the config is built",
        fix="`entropy_coeff` takes the same [[timestep, value], ...] schedule"),
    Row("kwarg-training-learner_class", "kwarg", "learner_class", "warns", ("training",),
        new="learner_class", moves_to="learners", example=None),
    Row("kwarg-train_batch_size", "kwarg", "train_batch_size", "works", ("training",),
        new="train_batch_size_per_learner", stack="new", example=8000,
        says="is still read on the new API stack (divided by the number of learners); RLlib's "
             "new-stack setting is train_batch_size_per_learner"),
    # ---- api_stack() / rl_module() / experimental() -------------------------------------------
    Row("kwarg-api_stack-_enable_rl_module_and_learner", "kwarg", "_enable_rl_module_and_learner",
        "raises", ("api_stack",), new="enable_rl_module_and_learner", mechanical=True, example=True,
        error=("TypeError", "got an unexpected keyword argument '_enable_rl_module_and_learner'")),
    Row("kwarg-api_stack-_enable_env_runner_and_connector_v2", "kwarg",
        "_enable_env_runner_and_connector_v2", "raises", ("api_stack",),
        new="enable_env_runner_and_connector_v2", mechanical=True, example=True,
        error=("TypeError", "got an unexpected keyword argument '_enable_env_runner_and_connector_v2'")),
    Row("kwarg-rl_module-_enable_rl_module_api", "kwarg", "_enable_rl_module_api", "raises",
        ("rl_module",), example=True,
        error=("ValueError", "`AlgorithmConfig.rl_module(_enable_rl_module_api=..)` has been deprecated"),
        fix="the RLModule API is " + _DEFAULT),
    Row("kwarg-model_config_dict", "kwarg", "model_config_dict", "warns", ("rl_module",),
        new="model_config", mechanical=True, example={"fcnet_hiddens": [17]}),
    Row("kwarg-rl_module-_enable_connectors", "kwarg", "_enable_connectors", "raises",
        ("rl_module",), example=True,
        error=("TypeError", "got an unexpected keyword argument '_enable_connectors'"),
        fix="drop it: ConnectorV2 pipelines are always on with the new API stack; custom "
            "connectors go to `.env_runners(env_to_module_connector=...)` and "
            "`.learners(learner_connector=...)`"),
    Row("kwarg-experimental-_enable_new_api_stack", "kwarg", "_enable_new_api_stack", "raises",
        ("experimental",), example=True,
        error=("TypeError", "got an unexpected keyword argument '_enable_new_api_stack'"),
        fix="the new API stack is " + _DEFAULT),
    Row("kwarg-experimental-_enable_rl_module_and_learner", "kwarg", "_enable_rl_module_and_learner",
        "raises", ("experimental",), example=True,
        error=("TypeError", "got an unexpected keyword argument '_enable_rl_module_and_learner'"),
        fix="the new API stack is " + _DEFAULT),
    # ---- fault_tolerance(), evaluation(), environment(), framework() --------------------------
    _ft("recreate_failed_workers", "restart_failed_env_runners"),
    _ft("recreate_failed_env_runners", "restart_failed_env_runners"),
    _ft("max_num_worker_restarts", "max_num_env_runner_restarts"),
    _ft("delay_between_worker_restarts_s", "delay_between_env_runner_restarts_s"),
    _ft("ignore_worker_failures", "ignore_env_runner_failures"),
    _ft("num_consecutive_worker_failures_tolerance", "num_consecutive_env_runner_failures_tolerance"),
    _ft("worker_health_probe_timeout_s", "env_runner_health_probe_timeout_s"),
    _ft("worker_restore_timeout_s", "env_runner_restore_timeout_s"),
    Row("kwarg-evaluation_num_workers", "kwarg", "evaluation_num_workers", "warns", ("evaluation",),
        new="evaluation_num_env_runners", mechanical=True, example=2),
    Row("kwarg-env_task_fn", "kwarg", "env_task_fn", "raises", ("environment",), example=None,
        error=("ValueError", "`AlgorithmConfig.environment(env_task_fn=..)` has been deprecated."),
        fix="switch tasks from a callback instead (RLlibCallback.on_train_result calling "
            "`algorithm.env_runner_group.foreach_env_runner(...)`)"),
    Row("arg-framework-tf", "arg_value", "framework", "raises", ("framework",), values=("tf", "tf2"),
        stack="new", algo="PPO", new="torch", example="tf2",
        error=("Exception", "TensorFlow"),
        says="raises when the algorithm is built: the new API stack has no TensorFlow support "
             "(ImportError without TensorFlow, ValueError with it)",
        fix='`.framework("torch")`'),
    Row("arg-framework-tfe", "arg_value", "framework", "raises", ("framework",), values=("tfe",),
        new="torch", example="tfe",
        error=("ValueError", "`AlgorithmConfig.framework('tfe')` has been deprecated")),
    # ---- attribute (and item) assignment on an AlgorithmConfig --------------------------------
    _store("num_rollout_workers", "num_env_runners", "raises",
           error=("ValueError", "`AlgorithmConfig.num_rollout_workers` has been deprecated")),
    _store("num_envs_per_worker", "num_envs_per_env_runner", "raises",
           error=("ValueError", "`AlgorithmConfig.num_envs_per_worker` has been deprecated")),
    _store("num_cpus_per_worker", "num_cpus_per_env_runner", "raises",
           error=("ValueError", "`AlgorithmConfig.num_cpus_per_worker` has been deprecated")),
    _store("num_gpus_per_worker", "num_gpus_per_env_runner", "raises",
           error=("ValueError", "`AlgorithmConfig.num_gpus_per_worker` has been deprecated")),
    _store("num_learner_workers", "num_learners", "raises",
           error=("ValueError", "`AlgorithmConfig.num_learner_workers` has been deprecated")),
    _store("recreate_failed_workers", "restart_failed_env_runners", "raises",
           example=True, error=("ValueError", "`AlgorithmConfig.recreate_failed_workers` has been deprecated")),
    _store("evaluation_num_workers", "evaluation_num_env_runners", "raises",
           error=("ValueError", "`AlgorithmConfig.evaluation_num_workers` has been deprecated")),
    *(_store(old, new, "raises", example=example,
             error=("ValueError", f"`AlgorithmConfig.{old}` has been deprecated"))
      for old, new, example in (
          ("custom_resources_per_worker", "custom_resources_per_env_runner", {"accel": 1}),
          ("num_cpus_per_learner_worker", "num_cpus_per_learner", 2),
          ("num_gpus_per_learner_worker", "num_gpus_per_learner", 1),
          ("num_cpus_for_local_worker", "num_cpus_for_main_process", 2),
          ("ignore_worker_failures", "ignore_env_runner_failures", True),
          ("recreate_failed_env_runners", "restart_failed_env_runners", True),
          ("max_num_worker_restarts", "max_num_env_runner_restarts", 3),
          ("delay_between_worker_restarts_s", "delay_between_env_runner_restarts_s", 3.0),
          ("num_consecutive_worker_failures_tolerance", "num_consecutive_env_runner_failures_tolerance", 3),
          ("worker_health_probe_timeout_s", "env_runner_health_probe_timeout_s", 3.0),
          ("worker_restore_timeout_s", "env_runner_restore_timeout_s", 3.0),
          ("validate_workers_after_construction", "validate_env_runners_after_construction", False))),
    _store("_enable_new_api_stack", None, "raises", example=True,
           error=("ValueError", "`AlgorithmConfig._enable_new_api_stack` has been deprecated"),
           fix="the new API stack is " + _DEFAULT),
    _store("_enable_learner_api", None, "ignored", inert=(True,), example=False,
           says="is silently accepted with no effect: the Learner API stays as it is",
           fix="the Learner API is " + _DEFAULT),
    _store("_enable_rl_module_and_learner", None, "ignored", inert=(True,), example=False,
           says="is silently accepted with no effect (the real setting has no underscore)",
           fix="`.api_stack(enable_rl_module_and_learner=...)`"),
    _store("sgd_minibatch_size", "minibatch_size", "ignored", example=64,
           says="is silently accepted with no effect: minibatch_size stays at its default"),
    _store("num_sgd_iter", "num_epochs", "ignored", example=7,
           says="is silently accepted with no effect: num_epochs stays at its default"),
    _store("num_workers", "num_env_runners", "ignored", example=5,
           says="is silently accepted with no effect on an AlgorithmConfig object (only dict configs "
                "translate num_workers)"),
    _store("num_gpus", "num_gpus_per_learner", "ignored", stack="new", inert=(0, 0.0),
           says="is ignored on the new API stack: the learner trains on CPU"),
    Row("store-model", "attr_store", "model", "ignored", stack="new", example={"fcnet_hiddens": [17]},
        says="is ignored on the new API stack: the RLModule is built from `rl_module(model_config=...)`, "
             "so fcnet_hiddens and the rest have no effect",
        fix="`config.rl_module(model_config={...})` (or `DefaultModelConfig(...)` from "
            "ray.rllib.core.rl_module.default_model_config)"),
    # ---- keys of dict configs -----------------------------------------------------------------
    _key("sgd_minibatch_size", "minibatch_size", "ignored", example=64,
         says="is dropped silently from a dict config: minibatch_size stays at its default (128 for PPO)"),
    _key("num_sgd_iter", "num_epochs", "ignored", example=7,
         says="is dropped silently from a dict config: num_epochs stays at its default (30 for PPO)"),
    _key("num_rollout_workers", "num_env_runners", "raises", example=3,
         error=("ValueError", "`AlgorithmConfig.num_rollout_workers` has been deprecated")),
    _key("num_workers", "num_env_runners", "translated", example=3,
         says="is still translated to num_env_runners, the last place the "
              "deprecated name works (config.num_workers = n is ignored, "
              ".rollouts(num_rollout_workers=n) raises)"),
    _key("num_envs_per_worker", "num_envs_per_env_runner", "raises", example=3,
         error=("ValueError", "`AlgorithmConfig.num_envs_per_worker` has been deprecated")),
    _key("num_cpus_per_worker", "num_cpus_per_env_runner", "raises", example=2,
         error=("ValueError", "`AlgorithmConfig.num_cpus_per_worker` has been deprecated")),
    _key("num_gpus_per_worker", "num_gpus_per_env_runner", "raises", example=1,
         error=("ValueError", "`AlgorithmConfig.num_gpus_per_worker` has been deprecated")),
    _key("vf_share_layers", None, "ignored", example=True, inert=(False,), algo="PPO",
         says="is dropped silently: the value and policy nets stay separate",
         fix="build the config with PPOConfig() and "
             "`.rl_module(model_config=DefaultModelConfig(vf_share_layers=True))`"),
    _key("horizon", None, "ignored", example=200,
         says="is dropped silently: episodes are not cut at this length",
         fix="limit episodes in the env: `gymnasium.make(env_id, max_episode_steps=N)` or "
             "`gymnasium.wrappers.TimeLimit`"),
    _key("num_gpus", "num_gpus_per_learner", "ignored", stack="new", inert=(0, 0.0),
         says="is ignored on the new API stack: the learner trains on CPU"),
    _key("model", None, "ignored", stack="new", example={"fcnet_hiddens": [17]},
         says="is ignored on the new API stack: the RLModule is built from model_config",
         fix="build the config with PPOConfig() and `.rl_module(model_config={...})`"),
    _key("timesteps_per_iteration", "min_sample_timesteps_per_iteration", "ignored", example=1234,
         says="is dropped silently from a dict config"),
    _key("min_iter_time_s", "min_time_s_per_iteration", "ignored", example=7,
         says="is dropped silently from a dict config"),
    _key("metrics_smoothing_episodes", "metrics_num_episodes_for_smoothing", "ignored", example=7,
         says="is dropped silently from a dict config"),
    _key("evaluation_num_workers", "evaluation_num_env_runners", "warns", example=2),
    _key("exploration_config", None, "raises", stack="new", example={"type": "EpsilonGreedy"},
         error=("ValueError", "When the RLModule API is enabled, exploration_config can not be set."),
         says="raises ValueError when the config is built",
         fix="exploration is the RLModule's forward_exploration() on the new API stack"),
    _key("lr_schedule", "lr", "raises", stack="new", mechanical=False, example=[[0, 1e-3]],
         error=("ValueError", "`lr_schedule` is deprecated and must be None!"),
         says="raises ValueError when the config is built",
         fix='`"lr": [[0, 1e-3], [1_000_000, 1e-5]]` takes the same schedule'),
    _key("entropy_coeff_schedule", "entropy_coeff", "raises", stack="new", mechanical=False,
         example=[[0, 0.01]], algo="PPO",
         error=("ValueError", "`entropy_coeff_schedule` is deprecated and must be None!"),
         says="raises ValueError when the config is built",
         fix='`"entropy_coeff"` takes the same [[timestep, value], ...] schedule'),
    _key("recreate_failed_workers", "restart_failed_env_runners", "raises", example=True,
         error=("ValueError", "`AlgorithmConfig.recreate_failed_workers` has been deprecated")),
    _key("ignore_worker_failures", "ignore_env_runner_failures", "raises", example=True,
         error=("ValueError", "`AlgorithmConfig.ignore_worker_failures` has been deprecated")),
    _key("_enable_learner_api", None, "ignored", inert=(True,), example=False,
         says="is silently accepted with no effect", fix="the Learner API is " + _DEFAULT),
    _key("observation_filter", None, "ignored", stack="new", inert=("NoFilter",), example="MeanStdFilter",
         says="is ignored on the new API stack: observations reach the RLModule unfiltered",
         fix="build the config with PPOConfig() and `.env_runners(env_to_module_connector=lambda env, "
             "spaces, device: MeanStdFilter())` (`from ray.rllib.connectors.env_to_module import MeanStdFilter`)"),
    _key("monitor", None, "ignored", example=True,
         says="is dropped silently: nothing records videos of the episodes",
         fix="record videos in the env: `gymnasium.wrappers.RecordVideo(env, video_folder)` inside "
             "the env creator (`render_mode=\"rgb_array\"`)"),
    _key("no_done_at_end", None, "ignored", example=True,
         says="is dropped silently: episodes end where the env says they end",
         fix="return `truncated=True` (not `terminated`) from the env's step() at a time limit"),
    _key("soft_horizon", None, "ignored", example=True,
         says="is dropped silently: episodes are not cut into soft horizons",
         fix="limit episodes in the env (`gymnasium.wrappers.TimeLimit`)"),
    _key("num_cpus_for_driver", "num_cpus_for_main_process", "translated", example=3,
         says="is still translated to num_cpus_for_main_process, the last "
              "place the deprecated name works (.resources(num_cpus_for_driver=n) raises TypeError)"),
    Row("key-framework-tf", "dict_key", "framework", "raises", values=("tf", "tf2"), stack="new",
        new="torch", example="tf",
        error=("ValueError", "Cannot use `framework=tf` with the new API stack!"),
        says="raises ValueError when the config is built", fix='`"framework": "torch"`'),
    # ---- imports and old class names -----------------------------------------------------------
    Row("module-ray.rllib.agents", "module", "ray.rllib.agents", "raises", new="ray.rllib.algorithms",
        mechanical=True, error=("ModuleNotFoundError", "No module named 'ray.rllib.agents'"),
        fix="the algorithms live in ray.rllib.algorithms (ppo, appo, impala, dqn, sac, cql, bc, "
            "marwil, dreamerv3, iql, tqc)"),
    Row("module-ray.internal.internal_api", "module", "ray.internal.internal_api", "raises",
        error=("ModuleNotFoundError", "No module named 'ray.internal.internal_api'"),
        fix="`ray memory --stats-only` on the head node (the private "
            "`ray._private.internal_api.memory_summary()` is what it calls)"),
    _trainer("PPOTrainer", "PPO"),
    _trainer("APPOTrainer", "APPO"),
    _trainer("ImpalaTrainer", "IMPALA"),
    _trainer("DQNTrainer", "DQN"),
    _trainer("SACTrainer", "SAC"),
    _trainer("CQLTrainer", "CQL"),
    _trainer("BCTrainer", "BC"),
    _trainer("MARWILTrainer", "MARWIL"),
    _removed_algorithm("A2CTrainer", "a2c"),
    _removed_algorithm("A3CTrainer", "a3c"),
    _removed_algorithm("PGTrainer", "pg"),
    _removed_algorithm("DDPGTrainer", "ddpg"),
    _removed_algorithm("TD3Trainer", "td3"),
    Row("name-DEFAULT_CONFIG", "name", "DEFAULT_CONFIG", "raises",
        ("ray.rllib.agents", "ray.rllib.algorithms"),
        error=("ImportError", "cannot import name 'DEFAULT_CONFIG'"),
        fix="start from the algorithm's config class: `PPOConfig()` (or "
            "`PPO.get_default_config()`), then `.to_dict()` if a dict is needed"),
    Row("module-ray.rllib.examples.env", "module", "ray.rllib.examples.env", "raises",
        new="ray.rllib.examples.envs.classes",
        error=("ModuleNotFoundError", "No module named 'ray.rllib.examples.env'"),
        fix="the example envs moved to ray.rllib.examples.envs.classes (e.g. "
            "`from ray.rllib.examples.envs.classes.simple_corridor import SimpleCorridor`); some "
            "were dropped, so check the one you need is there"),
    Row("module-ray.tune.integration.wandb", "module", "ray.tune.integration.wandb", "raises",
        new="ray.air.integrations.wandb",
        error=("ModuleNotFoundError", "No module named 'ray.tune.integration.wandb'"),
        fix="`from ray.air.integrations.wandb import WandbLoggerCallback, setup_wandb` (the "
            "wandb_mixin decorator and WandbTrainableMixin are gone: call setup_wandb() in the trainable)"),
    Row("module-ray.tune.integration.mlflow", "module", "ray.tune.integration.mlflow", "raises",
        new="ray.air.integrations.mlflow",
        error=("ModuleNotFoundError", "No module named 'ray.tune.integration.mlflow'"),
        fix="`from ray.air.integrations.mlflow import MLflowLoggerCallback, setup_mlflow`"),
    Row("module-ray.air.callbacks", "module", "ray.air.callbacks", "raises", new="ray.air.integrations",
        error=("ModuleNotFoundError", "No module named 'ray.air.callbacks'"),
        fix="`from ray.air.integrations.wandb import WandbLoggerCallback` (mlflow, comet likewise)"),
    Row("module-ray.rllib.env.apis", "module", "ray.rllib.env.apis", "raises",
        error=("ModuleNotFoundError", "No module named 'ray.rllib.env.apis'"),
        says="raises ModuleNotFoundError: TaskSettableEnv and the env_task_fn curriculum API were removed",
        fix="switch tasks from a callback: `RLlibCallback.on_train_result` calling "
            "`algorithm.env_runner_group.foreach_env_runner(lambda er: er.env.unwrapped.set_task(...))`"),
    Row("name-Episode", "name", "Episode", "raises", ("ray.rllib.evaluation",),
        error=("ImportError", "cannot import name 'Episode'"),
        fix="new-stack callbacks get a `SingleAgentEpisode` (`from ray.rllib.env.single_agent_episode "
            "import SingleAgentEpisode`) or a `MultiAgentEpisode` (`ray.rllib.env.multi_agent_episode`)"),
    Row("name-MultiAgentEpisode", "name", "MultiAgentEpisode", "raises", ("ray.rllib.evaluation",),
        error=("ImportError", "cannot import name 'MultiAgentEpisode'"),
        fix="`from ray.rllib.env.multi_agent_episode import MultiAgentEpisode` (the new stack's "
            "episode class, with a different API: get_return(), get_infos(), custom_data)"),
    Row("attr-tune.function", "module", "ray.tune.function", "raises",
        error=("AttributeError", "has no attribute 'function'"),
        fix="pass the function itself; Tune no longer needs the wrapper"),
    # ---- Algorithm objects ----------------------------------------------------------------------
    Row("algo-workers", "algo_attr", "workers", "breaks", new="env_runner_group", mechanical=True,
        says="silently gives a bound method (its deprecation decorator turns the property into a "
             "function); the next use fails with AttributeError: 'function' object has no attribute"),
    Row("algo-evaluation_workers", "algo_attr", "evaluation_workers", "breaks",
        new="eval_env_runner_group", mechanical=True,
        says="silently gives a bound method; the next use fails with AttributeError"),
    Row("algo-restore_workers", "algo_call", "restore_workers", "raises", new="restore_env_runners",
        mechanical=True, error=("ValueError", "`restore_workers` has been deprecated")),
    Row("algo-compute_single_action", "algo_call", "compute_single_action", "breaks", stack="new",
        says="logs a DeprecationWarning, then fails on the new API stack: AttributeError: "
             "'SingleAgentEnvRunner' object has no attribute 'get_policy'",
        fix='`module = algo.get_module()` then `module.forward_inference({"obs": '
            'torch.as_tensor(np.array([obs], np.float32))})["action_dist_inputs"].argmax(-1)` '
            '(greedy action; sample from the distribution for stochastic actions)'),
    Row("algo-compute_action", "algo_call", "compute_action", "raises",
        error=("AttributeError", "object has no attribute 'compute_action'"),
        says="raises AttributeError: Algorithm has no compute_action() any more (it was renamed "
             "compute_single_action, which the new API stack does not support either)",
        fix='`module = algo.get_module()` then `module.forward_inference({"obs": '
            'torch.as_tensor(np.array([obs], np.float32))})["action_dist_inputs"].argmax(-1)`'),
    Row("algo-compute_actions", "algo_call", "compute_actions", "breaks", stack="new",
        says="logs a DeprecationWarning, then fails on the new API stack (no Policy on the env runner)",
        fix='`algo.get_module().forward_inference({"obs": torch.as_tensor(obs_batch)})`'),
    Row("algo-get_policy", "algo_call", "get_policy", "breaks", stack="new",
        says="fails on the new API stack: AttributeError: 'SingleAgentEnvRunner' object has no "
             "attribute 'get_policy'",
        fix="`algo.get_module()` returns the RLModule (weights: `algo.get_module().get_state()`)"),
    Row("algo-save", "algo_call", "save", "works", new="save_to_path",
        says="still writes the checkpoint, but returns a _TrainingResult, not the path",
        fix="`algo.save_to_path(path)` returns the path; restore with `Algorithm.from_checkpoint(path)`"),
    # ---- result keys (Tune stop, metric, checkpoint score, result lookups) --------------------
    _result("episode_reward_mean", "env_runners/episode_return_mean"),
    _result("episode_reward_max", "env_runners/episode_return_max"),
    _result("episode_reward_min", "env_runners/episode_return_min"),
    _result("episode_len_mean", "env_runners/episode_len_mean"),
    _result("timesteps_total", "num_env_steps_sampled_lifetime"),
    _result("episodes_total", "env_runners/num_episodes_lifetime"),
    _result("episodes_this_iter", "env_runners/num_episodes"),
    _result("evaluation/episode_reward_mean", "evaluation/env_runners/episode_return_mean"),
    _result("sampler_results/episode_reward_mean", "env_runners/episode_return_mean"),
    _result("env_runners/episode_reward_mean", "env_runners/episode_return_mean"),
    _result("env_runners/episode_reward_max", "env_runners/episode_return_max"),
    _result("env_runners/episode_reward_min", "env_runners/episode_return_min"),
    _result("policy_reward_mean", "env_runners/module_episode_returns_mean/default_policy"),
    # ---- keyword arguments of Tune, Ray core and Serve calls ----------------------------------
    Row("tune-checkpoint_freq", "call_kwarg", "checkpoint_freq", "warns", ("tune.run", "run"),
        new="checkpoint_frequency", says="still works; the DeprecationWarning is hidden by default"),
    Row("tune-checkpoint_at_end", "call_kwarg", "checkpoint_at_end", "warns", ("tune.run", "run"),
        new="checkpoint_at_end", says="still works; the DeprecationWarning is hidden by default"),
    Row("tune-keep_checkpoints_num", "call_kwarg", "keep_checkpoints_num", "warns",
        ("tune.run", "run"), new="num_to_keep",
        says="still works; the DeprecationWarning is hidden by default"),
    Row("tune-checkpoint_score_attr", "call_kwarg", "checkpoint_score_attr", "warns",
        ("tune.run", "run"), new="checkpoint_score_attribute",
        says="still works; the DeprecationWarning is hidden by default"),
    Row("tune-local_dir", "call_kwarg", "local_dir", "raises", ("tune.run", "run"),
        new="storage_path", error=("DeprecationWarning", "The `local_dir` argument is deprecated"),
        says="raises DeprecationWarning (an exception here), after starting a local Ray instance"),
    Row("ray-remote-object_store_memory", "call_kwarg", "object_store_memory", "ignored",
        ("ray.remote", "remote"),
        says="reserves nothing for an actor (Ray's own DeprecationWarning, hidden by default: "
             "\"it doesn't actually reserve the required object store memory\")",
        fix="drop it: objects spill to disk when the store fills; size the store per node with "
            "`ray start --object-store-memory=BYTES` (or ray.init(object_store_memory=...) locally)"),
    Row("ray-init-local_mode", "call_kwarg", "local_mode", "raises", ("ray.init", "init"),
        inert=(False,), example=True,
        error=("RuntimeError", "`local_mode` is no longer supported."),
        fix="drop it; debug with the Ray distributed debugger, or run the code without Ray"),
    Row("runconfig-local_dir", "call_kwarg", "local_dir", "raises",
        ("tune.RunConfig", "air.RunConfig", "train.RunConfig", "air.config.RunConfig", "RunConfig"),
        new="storage_path", example="/tmp/rldoctor-local-dir",
        error=("Exception", "local_dir"),
        says="raises as the RunConfig is made: DeprecationWarning (an exception here) from ray.train's "
             "and ray.air's RunConfig, TypeError from ray.tune's"),
    Row("ray-init-redis_address", "call_kwarg", "redis_address", "raises", ("ray.init", "init"),
        new="address", example="127.0.0.1:6379",
        error=("RuntimeError", "Unknown keyword argument(s): redis_address"),
        fix='`ray.init(address="HOST:6379")` (or `address="auto"` on a cluster node)'),
    Row("serve-run-port", "call_kwarg", "port", "raises", ("serve.run",),
        error=("TypeError", "unexpected keyword argument 'port'"),
        fix='`serve.start(http_options={"port": 8000})` before `serve.run(app)`'),
    Row("serve-run-host", "call_kwarg", "host", "raises", ("serve.run",),
        error=("TypeError", "unexpected keyword argument 'host'"),
        fix='`serve.start(http_options={"host": "0.0.0.0"})` before `serve.run(app)`'),
    Row("tuner-run_config-class", "run_config_class", "RunConfig", "warns",
        ("ray.air", "ray.air.config", "ray.train"), new="ray.tune.RunConfig",
        says="still works, with a RayDeprecationWarning: \"The `RunConfig` class should be imported "
             "from `ray.tune` when passing it to the Tuner\"",
        fix="`from ray.tune import RunConfig` (and `ray.tune.CheckpointConfig`)"),
    # ---- callbacks -------------------------------------------------------------------------------
    Row("callback-worker", "callback_arg", "worker", "breaks", new="env_runner", stack="new",
        says="the new stack calls on_episode_* with episode=, env_runner=, metrics_logger=, env=, "
             "env_index=, rl_module= only: a required `worker` is never passed (TypeError in the "
             "env runner at the first episode)"),
    Row("callback-base_env", "callback_arg", "base_env", "breaks", new="env", stack="new",
        says="a required `base_env` is never passed on the new stack (TypeError in the env runner)"),
    Row("callback-policies", "callback_arg", "policies", "breaks", new="rl_module", stack="new",
        says="a required `policies` is never passed on the new stack (TypeError in the env runner)"),
    _episode("total_reward", "get_return()"),
    _episode("episode_id", "id_"),
    _episode("length", "len(episode)"),
    _episode("user_data", "custom_data"),
    _episode("custom_metrics", 'metrics_logger.log_value("name", value)'),
    _episode("hist_data", 'metrics_logger.log_value("name", value, reduce=None)'),
    _episode("last_info_for", "get_infos(-1)"),
    _episode("last_observation_for", "get_observations(-1)"),
    _episode("last_action_for", "get_actions(-1)"),
    _episode("last_reward_for", "get_rewards(-1)"),
)


CONFIG_METHODS = _CONFIG_METHODS

# The row for imports the installed Ray itself says are gone (rldoctor.lint.ray_modules reads
# its files): not a row of the table above, whose rows are written down and probed one by one;
# tests/test_lint_table.py imports what each such finding names and proves it fails.
GENERATED_IMPORT = Row("import-missing-in-ray", "import", "<read from the installed Ray>", "raises",
                       error=("ImportError", "the installed Ray has no such module or name"),
                       fix="find what replaced it in the release notes of the Ray versions in between; "
                           "RLlib's new API stack counterparts live under ray.rllib.core, ray.rllib.env "
                           "and ray.rllib.connectors")

# Rows for the shapes whose probes live in tests/test_lint_signatures.py (callbacks, metrics
# loggers, Algorithm constructors): each proven against the installed Ray there.
SIGNATURE_ROWS: tuple[Row, ...] = (
    Row("policy_mapping_fn-worker", "mapping_fn_signature", "policy_mapping_fn", "breaks", stack="new",
        new="policy_mapping_fn=lambda agent_id, episode, **kwargs: ...",
        says="requires a third argument (the old stack's `worker`), and the new stack calls it with "
             "two, (agent_id, episode): TypeError in the env runner at the first episode",
        fix="`def policy_mapping_fn(agent_id, episode, **kwargs)`: a new-stack episode is a "
            "MultiAgentEpisode; take any further arguments as **kwargs"),
    Row("logger-log_value-ema_coeff", "logger_kwarg", "ema_coeff", "raises", ("log_value",),
        error=("ValueError", "ema_coeff is not supported for mean reduction"),
        says="raises when the metric is logged: ValueError with reduce=\"mean\" (\"ema_coeff is not "
             "supported for mean reduction. Use reduce='ema' instead\"), TypeError with another reduce",
        fix='`metrics_logger.log_value(key, value, reduce="ema", ema_coeff=...)` (or '
            '`reduce="mean", window=N`)'),
    Row("algo-init-env", "algo_init_env", "env", "warns", new="config.environment(...)",
        says="still works, with a DeprecationWarning (`algo = Algorithm(env=..., ...)`): the env "
             "belongs in the config",
        fix="config.environment(ENV), then config.build_algo()"),
)


def _release(version: str) -> str:
    return version[:-2] if version.endswith(".0") else version


_NO_REPLACEMENT = {
    "ExperimentAnalysis": "use `tune.Tuner(...).fit()` and the ResultGrid it returns: "
                          "`results.get_best_result(metric=..., mode=...)` and its `.checkpoint` "
                          "(a trial's checkpoints: `result.best_checkpoints`)",
    "AlgorithmConfig": "drop the call: the installed Ray's AlgorithmConfig has no `{name}()` "
                       "(Ray {gone}'s release notes say what replaced it)",
    "Algorithm": "drop the call: the installed Ray's Algorithm has no `{name}()` "
                 "(Ray {gone}'s release notes say what replaced it)",
    "MetricsLogger": "drop the call: the installed Ray's MetricsLogger has no `{name}()`; log with "
                     "`log_value(key, value, reduce=...)`",
    "kwarg": "drop `{name}=`: `AlgorithmConfig.{method}()` of the installed Ray does not take it "
             "(Ray {gone}'s release notes say what replaced it)",
}


_ALGORITHM_CONFIGS = ("PPOConfig", "DQNConfig", "SACConfig", "IMPALAConfig", "APPOConfig")  # ray_history's


def _history_row(h: dict) -> Row | None:
    """RLD801's row for one row of Ray's history (rldoctor.lint.ray_history), or None when
    lint has no shape for it (module and name rows: imports are judged from the installed
    Ray's files, and the history only dates them)."""
    kind, name, new = h["kind"], h["name"], h.get("new") or ""
    where_new = new if new.replace(".", "").replace("_", "").isalnum() else ""
    fix = "" if where_new else new
    if not new:  # Ray named no replacement: say what to do without one
        fix = _NO_REPLACEMENT.get(h.get("class") if kind == "method" else kind, "").format(
            name=name, method=h.get("method", ""), cls=h.get("class", ""),
            gone=_release(h.get("gone") or h.get("deprecated") or ""))
    if "gone" in h:
        when = f"removed in Ray {_release(h['gone'])} (Ray {_release(h['last'])} was the last with it)"
    else:
        when = f"deprecated since Ray {_release(h['deprecated'])}"
    if kind == "method":
        shape = {"AlgorithmConfig": "method", "Algorithm": "algo_call",
                 "ExperimentAnalysis": "analysis_call", "MetricsLogger": "logger_call"}.get(h["class"])
        if shape is None:
            return None
        if "gone" in h:
            return Row(f"history-{h['class']}-{name}", shape, name, "raises", new=where_new.split(".")[-1] or None,
                       error=("AttributeError", f"'{h['class']}' object has no attribute '{name}'"),
                       says=f"raises AttributeError: {when}", fix=fix)
        if h["raises"]:
            return Row(f"history-{h['class']}-{name}", shape, name, "raises", new=where_new.split(".")[-1] or None,
                       error=("ValueError", f"`{name}` has been deprecated"), says=f"raises ValueError: {when}",
                       fix=fix)
        return Row(f"history-{h['class']}-{name}", shape, name, "warns", new=where_new.split(".")[-1] or None,
                   says=f"still works, with a DeprecationWarning: {when}", fix=fix)
    if kind == "kwarg" and h["class"] in _ALGORITHM_CONFIGS:  # an algorithm's own config class
        algo = h["class"][:-len("Config")].upper()
        target = new if new.isidentifier() else None
        words = f"`{h['class']}.{h['method']}()`"
        if "gone" in h:
            return Row(f"history-{algo}-{h['method']}-{name}", "kwarg", name, "raises", (h["method"],),
                       new=target, algo=algo, fix="" if target else (new or f"drop `{name}=`: {words} of "
                       f"the installed Ray does not take it (Ray {_release(h['gone'])}'s release notes "
                       "say what replaced it)"),
                       error=("TypeError", f"got an unexpected keyword argument '{name}'"),
                       says=f"raises TypeError in {words}: {when}")
        return Row(f"history-{algo}-{h['method']}-{name}", "kwarg", name, "raises" if h["raises"] else "warns",
                   (h["method"],), new=target, algo=algo, fix="" if target else new,
                   error=("ValueError", "has been deprecated") if h["raises"] else None,
                   says=(f"raises ValueError in {words}: {when}" if h["raises"] else
                         f"still works in {words}, with a DeprecationWarning: {when}"))
    if kind == "kwarg" and h["class"] == "AlgorithmConfig":
        target = new.split("(")[-1].rstrip(")=. ") if "(" in new else ""
        target = target if target.isidentifier() else None
        method = new.split("(")[0].split(".")[-1] if "(" in new else ""
        moves = method if method and method != h["method"] and method.isidentifier() else None
        if "gone" in h:
            return Row(f"history-kwarg-{h['method']}-{name}", "kwarg", name, "raises", (h["method"],),
                       new=target, moves_to=moves, fix="" if target else (new or fix),
                       error=("TypeError", f"got an unexpected keyword argument '{name}'"),
                       says=f"raises TypeError: {when}")
        if h["raises"]:
            return Row(f"history-kwarg-{h['method']}-{name}", "kwarg", name, "raises", (h["method"],),
                       new=target, moves_to=moves, fix="" if target else (new or fix),
                       error=("ValueError", "has been deprecated"), says=f"raises ValueError: {when}")
        return Row(f"history-kwarg-{h['method']}-{name}", "kwarg", name, "warns", (h["method"],),
                   new=target, moves_to=moves, fix="" if target else (new or fix),
                   says=f"still works, with a DeprecationWarning: {when}")
    return None


def history_rows(rows: tuple[Row, ...] = ROWS) -> tuple[Row, ...]:
    """The rows of Ray's own history that the written table above does not already have."""
    from rldoctor.lint.ray_history import load

    written = {(r.shape, r.old, w) for r in rows for w in (r.where or ("",))}
    written |= {("algo_call", r.old, "") for r in rows if r.shape == "algo_attr"}
    written |= {(r.shape, r.old, "") for r in rows}
    out = []
    for h in load()["rows"]:
        row = _history_row(h)
        if row is None:
            continue
        if any((row.shape, row.old, w) in written for w in (row.where or ("",))) or \
                (row.shape == "kwarg" and any((row.shape, row.old, w) in written for w in _ENV_RUNNERS
                                              if set(row.where) & set(_ENV_RUNNERS))):
            continue
        written.add((row.shape, row.old, row.where[0] if row.where else ""))
        out.append(row)
    return tuple(out)


HISTORY_ROWS = history_rows()

_SHAPE_WORDS = {
    "method": "config.{old}(...)", "kwarg": "config.{where}({old}=...)",
    "arg_value": "config.{where}(... {values})", "attr_store": "config.{old} = ... / config[\"{old}\"] = ...",
    "dict_key": "\"{old}\" in a dict config", "module": "import {old}", "name": "{old} (from {where})",
    "algo_attr": "algo.{old}", "algo_call": "algo.{old}(...)", "result_key": "\"{old}\" as a result key",
    "call_kwarg": "{where}({old}=...)", "run_config_class": "RunConfig from {where}",
    "import": "an import the installed Ray no longer has", "callback_arg": "on_episode_*({old}=...)",
    "episode_attr": "episode.{old} in an on_episode_* callback",
    "analysis_call": "analysis.{old}(...) on a Tune ExperimentAnalysis",
    "logger_call": "metrics_logger.{old}(...) on an RLlib MetricsLogger",
    "logger_kwarg": "metrics_logger.{where}({old}=...)",
    "mapping_fn_signature": "{old}(agent_id, episode, worker)",
    "algo_init_env": "Algorithm(config, env) / PPO(config=..., env=...)"}
_BEHAVIOUR_WORDS = {"ignored": "accepted and silently ignored", "never-fires": "never matches",
                    "breaks": "fails at first use", "raises": "raises",
                    "warns": "still works, with a DeprecationWarning",
                    "translated": "still translated silently, deprecated", "works": "still works"}


def usage_words(row: Row) -> str:
    """How a row's usage looks in code: `config.resources(num_cpus_per_worker=...)`."""
    where = " or ".join(row.where[:2]) + (" ..." if len(row.where) > 2 else "")
    return _SHAPE_WORDS[row.shape].format(old=row.old, where=where or "?",
                                          values=", ".join(repr(v) for v in row.values) or "...")


def rules() -> dict:
    """RLD801's rules: one per row, by its stable id (what `RLD801/<id>` names)."""
    from rldoctor.engine.registry import Rule

    out = {}
    for row in (*ROWS, *SIGNATURE_ROWS, *HISTORY_ROWS, GENERATED_IMPORT):
        says = row.says or _BEHAVIOUR_WORDS[row.behaviour]
        lines = [f"Ray 2.60: {says}" + (f" ({row.error[0]}: {row.error[1]})" if row.error else ""),
                 f"Behaviour: {row.behaviour} (severity {row.severity})"
                 + ("; only on the new API stack" if row.stack == "new" else "")]
        if row.new:
            lines.append(f"Replacement: {row.new}" + (f" in config.{row.moves_to}()" if row.moves_to else ""))
        if row.fix:
            lines.append(f"Fix: {row.fix}")
        if row.mechanical:
            lines.append("`rldoctor lint --fix` rewrites it (a rename that keeps the meaning)")
        out[row.id] = Rule(row.id, row.severity, f"{usage_words(row)}: {says}", "\n".join(lines))
    return out
