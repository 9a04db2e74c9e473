"""The user's training as `rldoctor preflight TARGET` reads it, before it is submitted: the plan.

TARGET is one of:

- `MODULE:ATTR` or `path/to/file.py:ATTR`: an AlgorithmConfig (or a function of no arguments
  that returns one), imported as `check --target` imports it (rldoctor.inputs.targets);
- `path/to/train.py`: a script that builds one. The script runs as `__main__` (so its
  `if __name__ == "__main__":` block runs) with the training's entry points replaced:
  `ray.init` does nothing, and the first of `AlgorithmConfig.build_algo()` / `.build()`,
  `Algorithm(config=...)`, `tune.Tuner(...)` or `tune.run(...)` records the config (and the
  Tuner's run and tune configs) and stops the script there. Nothing trains and no cluster is
  joined; what the script does before that point (imports, reading files) it does. A
  script that reaches none of them is read for a module-level AlgorithmConfig;
- a checkpoint directory (`rllib_checkpoint.json` in it): its saved config, read with
  RLlib's own checkpoint reader.

The plan is plain data (JSON): the config's demand (the placement group RLlib would ask
for, from `Algorithm.default_resource_request`), the env as the env runners would get it
(a Gymnasium id, or the class / creator pickled with Ray's cloudpickle, by value for a
script's own code), the settings the checks judge (rollout_fragment_length,
sample_timeout_s, storage_path, GPUs) and the packages to compare.
"""

from __future__ import annotations

import base64
import contextlib
import os
import runpy
import sys
from pathlib import Path
from typing import Any

from rldoctor.errors import UsageError

COMPARED_PACKAGES = ("numpy", "gymnasium", "torch", "ray")
_CHECKPOINT_FILES = ("rllib_checkpoint.json", "class_and_ctor_args.pkl", "algorithm_state.pkl")


class _Captured(BaseException):
    """Raised by a neutralised entry point to stop the user's script there."""

    def __init__(self, config: Any, run_config: Any = None, tune_config: Any = None,
                 entry: str = ""):
        super().__init__(entry)
        self.config, self.run_config, self.tune_config, self.entry = (
            config, run_config, tune_config, entry)


def _is_config(obj: Any) -> bool:
    try:
        from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
    except ImportError:
        return False
    return isinstance(obj, AlgorithmConfig)


@contextlib.contextmanager
def _entry_points_neutralised(found: dict):
    """Training entry points that record the config and stop the script instead of training."""
    import ray
    from ray import tune
    from ray.rllib.algorithms.algorithm import Algorithm
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    saved = []

    def patch(owner, name, value):
        if hasattr(owner, name):
            saved.append((owner, name, getattr(owner, name)))
            setattr(owner, name, value)

    def build(self, *args, **kwargs):
        raise _Captured(self, entry="AlgorithmConfig.build_algo")

    def algorithm_new(cls, *args, config=None, **kwargs):
        raise _Captured(config if config is not None else (args[0] if args else None),
                        entry="Algorithm(config=...)")

    def tuner_init(self, trainable=None, *, param_space=None, tune_config=None,
                   run_config=None, **kwargs):
        raise _Captured(param_space, run_config, tune_config, entry="tune.Tuner")

    def tune_run(run_or_experiment=None, *args, config=None, storage_path=None, **kwargs):
        raise _Captured(config, {"storage_path": storage_path}, kwargs.get("num_samples"),
                        entry="tune.run")

    def init(*args, runtime_env=None, **kwargs):  # the job's runtime_env, recorded
        if runtime_env:
            found["runtime_env"] = dict(runtime_env)

    patch(ray, "init", init)
    patch(AlgorithmConfig, "build_algo", build)
    patch(AlgorithmConfig, "build", build)
    patch(Algorithm, "__new__", algorithm_new)
    patch(tune.Tuner, "__init__", tuner_init)
    patch(tune, "run", tune_run)
    patch(tune, "fit", tune_run)
    try:
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def _from_script(path: Path) -> tuple[Any, dict]:
    from rldoctor.inputs.targets import recording_register_env

    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    argv = sys.argv
    sys.argv = [str(path)]
    found: dict = {"entry": None}
    try:
        with recording_register_env(), _entry_points_neutralised(found):
            try:
                namespace = runpy.run_path(str(path), run_name="__main__")
            except _Captured as caught:
                found.update(entry=caught.entry, run_config=caught.run_config,
                             tune_config=caught.tune_config)
                return caught.config, found
            except SystemExit:
                namespace = {}
            except BaseException as exc:
                raise UsageError(f"{path}: the script raised before it built its algorithm: "
                                 f"{type(exc).__name__}: {exc}".splitlines()[0]) from None
    finally:
        sys.argv = argv
    configs = [v for v in namespace.values() if _is_config(v)]
    if not configs:
        raise UsageError(f"{path}: no AlgorithmConfig found: the script reached none of "
                         "build_algo(), Algorithm(config=...), tune.Tuner(...) or tune.run(), "
                         "and has no module-level AlgorithmConfig")
    return configs[0], found


def _from_attr(text: str) -> tuple[Any, dict]:
    from rldoctor.inputs.targets import _import, _resolve, parse_target, recording_register_env

    spec = parse_target(text)
    with recording_register_env():
        try:
            module = _import(spec)
            obj, _ = _resolve(module, spec)
            if callable(obj) and not _is_config(obj) and not isinstance(obj, type):
                obj = obj()
        except UsageError:
            raise
        except BaseException as exc:
            raise UsageError(f"{text}: could not be read: {type(exc).__name__}: {exc}"
                             .splitlines()[0]) from None
    return obj, {"entry": None}


def _from_checkpoint(path: Path) -> tuple[Any, dict]:
    """The config an RLlib checkpoint saved: the new format's class_and_ctor_args.pkl (the
    algorithm class and its config's state, what `Algorithm.from_checkpoint` restores), else
    the older algorithm_state.pkl's `config`. Unpickled as RLlib does: a checkpoint is code."""
    import pickle

    try:
        ctor = path / "class_and_ctor_args.pkl"
        if ctor.exists():
            with open(ctor, "rb") as f:
                saved = pickle.load(f)
            args, kwargs = saved["ctor_args_and_kwargs"]
            state = kwargs.get("config", args[0] if args else None)
            if _is_config(state):
                return state, {"entry": "checkpoint"}
            from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

            return AlgorithmConfig.from_state(state), {"entry": "checkpoint"}
        from ray.rllib.algorithms.algorithm import Algorithm
        from ray.rllib.utils.checkpoints import get_checkpoint_info

        state = Algorithm._checkpoint_info_to_algorithm_state(get_checkpoint_info(str(path)))
        config = state.get("config")
        if isinstance(config, dict):
            from ray.rllib.algorithms.registry import get_algorithm_class

            cls = get_algorithm_class(state.get("algorithm_class") or "")
            config = cls.get_default_config().update_from_dict(config) if cls else None
    except BaseException as exc:
        raise UsageError(f"{path}: not a checkpoint RLlib can read: {type(exc).__name__}: {exc}"
                         .splitlines()[0]) from None
    return config, {"entry": "checkpoint"}


def load_config(target: str) -> tuple[Any, dict]:
    """(AlgorithmConfig, how it was found); a TARGET that gives none is a usage error."""
    path = Path(target).expanduser()
    if path.is_dir():
        if not any((path / name).exists() for name in _CHECKPOINT_FILES):
            raise UsageError(f"{target}: a directory, but not an RLlib checkpoint "
                             "(no rllib_checkpoint.json in it)")
        config, found = _from_checkpoint(path.resolve())
    elif path.suffix == ".py" and path.is_file():
        config, found = _from_script(path.resolve())
    elif ":" in target:
        config, found = _from_attr(target)
    else:
        raise UsageError(f"TARGET {target!r}: expected MODULE:ATTR of an AlgorithmConfig, a "
                         "script that builds one (train.py), or a checkpoint directory")
    if isinstance(config, dict) and config.get("env") is not None:  # Tuner(param_space=dict)
        from ray.rllib.algorithms.ppo import PPOConfig

        config = PPOConfig().update_from_dict(config)
    if not _is_config(config):
        raise UsageError(f"{target}: {type(config).__name__} is not an AlgorithmConfig")
    return config, found


# ------------------------------------------------------------------------------ the plan
def _env_spec(config) -> tuple[dict, str | None]:
    """How the env runners would get the env, and the top-level package of its code."""
    import ray.cloudpickle as cloudpickle
    from rldoctor.inputs.targets import registered_creator

    env = config.env
    env_config = dict(config.env_config or {})
    if env is None:
        return {"kind": None, "name": None, "env_config": env_config}, None
    maker, name = None, None
    if isinstance(env, str):
        name = env
        maker = registered_creator(env)
        if maker is None and ":" not in env:
            try:
                import gymnasium

                found = gymnasium.envs.registry.get(env)
            except Exception:
                found = None
            entry = getattr(found, "entry_point", None)
            package = entry.split(":")[0].split(".")[0] if isinstance(entry, str) else None
            if package in ("gymnasium", None):
                package = None
            return {"kind": "gym_id", "name": env, "env_config": env_config,
                    "registered_here": found is not None}, package
        if maker is None:
            return {"kind": "gym_id", "name": env, "env_config": env_config}, env.split(":")[0].split(".")[0]
    else:
        maker, name = env, getattr(env, "__qualname__", type(env).__name__)
    module = getattr(maker, "__module__", None) or ""
    package = module.split(".")[0] if module and not module.startswith(("_rldoctor_target", "__main__")) else None
    try:
        payload = base64.b64encode(cloudpickle.dumps(maker)).decode()
    except Exception as exc:
        return {"kind": "unpicklable", "name": name, "env_config": env_config,
                "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}, package
    return {"kind": "pickled", "name": name, "module": module, "env_config": env_config,
            "payload": payload}, package


def _num(value, default=0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _demand(config, found: dict) -> dict:
    """The placement group RLlib asks for (default_resource_request), with each bundle's role."""
    algo_cls = config.algo_class
    if isinstance(algo_cls, str):
        from ray.rllib.algorithms.registry import get_algorithm_class

        algo_cls = get_algorithm_class(algo_cls)
    pgf = algo_cls.default_resource_request(config)
    bundles = [{k: float(v) for k, v in b.items() if v} for b in pgf.bundles]
    runners = int(config.num_env_runners or 0)
    learners = int(getattr(config, "num_learners", 0) or 0)
    roles = ["main process"]
    roles += ["env runner"] * runners
    evals = int(getattr(config, "evaluation_num_env_runners", 0) or 0)
    roles += ["evaluation env runner"] * evals
    roles += ["learner"] * learners
    roles += ["other"] * max(0, len(bundles) - len(roles))
    tune_run = found.get("entry") in ("tune.Tuner", "tune.run")
    trials = 1
    tune_config = found.get("tune_config")
    if tune_run and tune_config is not None:
        trials = int(getattr(tune_config, "num_samples", 1) or 1) if not isinstance(tune_config, int) \
            else tune_config
        concurrent = getattr(tune_config, "max_concurrent_trials", None)
        if concurrent:
            trials = min(trials, int(concurrent))
    return {"bundles": [{"role": roles[i], "resources": b} for i, b in enumerate(bundles)],
            "strategy": pgf.strategy, "tune": tune_run, "trials": max(trials, 1),
            "env_runners": runners, "learners": learners}


def _storage_path(found: dict) -> str:
    run_config = found.get("run_config")
    path = None
    if isinstance(run_config, dict):
        path = run_config.get("storage_path")
    elif run_config is not None:
        path = getattr(run_config, "storage_path", None)
    return str(path) if path else os.path.expanduser("~/ray_results")


def plan_of(target: str, runtime_env: dict | None = None) -> dict:
    """The plan: everything the probes and checks need, as plain data."""
    config, found = load_config(target)
    env, package = _env_spec(config)
    try:
        fragment = int(config.get_rollout_fragment_length())
    except Exception:
        fragment = config.rollout_fragment_length if isinstance(config.rollout_fragment_length, int) else None
    storage = _storage_path(found)
    uri = "://" in storage
    learners = int(getattr(config, "num_learners", 0) or 0)
    gpus_per_learner = _num(getattr(config, "num_gpus_per_learner", 0))
    gpus_per_runner = _num(getattr(config, "num_gpus_per_env_runner", 0))
    asks = max(gpus_per_learner, gpus_per_runner)
    job_env = dict(runtime_env or found.get("runtime_env") or {})
    return {
        "target": target,
        "algo": getattr(config, "algo_class", None).__name__
        if isinstance(getattr(config, "algo_class", None), type) else str(config.algo_class),
        "entry": found.get("entry"),
        "env": env,
        "env_package": package,
        "packages": [p for p in COMPARED_PACKAGES],
        "demand": _demand(config, found),
        "settings": {
            "rollout_fragment_length": fragment,
            "sample_timeout_s": _num(getattr(config, "sample_timeout_s", None), None),
            "num_envs_per_env_runner": int(getattr(config, "num_envs_per_env_runner", 1) or 1),
            "batch_mode": getattr(config, "batch_mode", None),
            "num_learners": learners,
            "num_gpus_per_learner": gpus_per_learner,
            "num_gpus_per_env_runner": gpus_per_runner,
            "env_runners": int(config.num_env_runners or 0),
        },
        "storage": {"path": storage, "uri": uri},
        "gpu_probe": int(-(-asks // 1)) if asks else 0,
        "runtime_env": job_env,
    }


def check_target(target: str) -> None:
    """What can be said of TARGET without importing anything: a usage error, at once."""
    path = Path(target).expanduser()
    if path.is_dir():
        if not any((path / name).exists() for name in _CHECKPOINT_FILES):
            raise UsageError(f"{target}: a directory, but not an RLlib checkpoint "
                             "(no rllib_checkpoint.json in it)")
        return
    if path.suffix == ".py" and path.is_file():
        return
    if path.suffix == ".py":
        raise UsageError(f"TARGET {target!r}: no such file")
    if ":" in target:
        from rldoctor.inputs.targets import parse_target

        parse_target(target)
        return
    raise UsageError(f"TARGET {target!r}: expected MODULE:ATTR of an AlgorithmConfig, a "
                     "script that builds one (train.py), or a checkpoint directory")
