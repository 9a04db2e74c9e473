"""The shipped history of Ray's names (doctor/lint/ray_history.json.gz) against the installed Ray.

Every row says the pinned Ray (the last release read) no longer has a name, or has it only as a
deprecation; here the installed Ray is imported and asked: a module said to be gone cannot be
found, a name said to be gone is not an attribute of its module, a method said to be gone is not
one of its class, a keyword argument said to be gone is refused by the method's signature
(TypeError), a kwarg or method said to raise raises, and the replacements named exist.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import inspect
import warnings

import pytest

from rldoctor.lint import ray_history

CLASS_PATHS = {
    "AlgorithmConfig": "ray.rllib.algorithms.algorithm_config",
    "Algorithm": "ray.rllib.algorithms.algorithm",
    "ExperimentAnalysis": "ray.tune.analysis.experiment_analysis",
    "ResultGrid": "ray.tune.result_grid",
    "MetricsLogger": "ray.rllib.utils.metrics.metrics_logger",
}
ALGORITHM_CONFIG_PATHS = {  # the algorithms' own config classes (ray_history.ALGORITHM_CONFIGS)
    "PPOConfig": "ray.rllib.algorithms.ppo", "DQNConfig": "ray.rllib.algorithms.dqn",
    "SACConfig": "ray.rllib.algorithms.sac", "IMPALAConfig": "ray.rllib.algorithms.impala",
    "APPOConfig": "ray.rllib.algorithms.appo",
}


@pytest.fixture(scope="module")
def history():
    return ray_history.load()


def _cls(name):
    return getattr(importlib.import_module(CLASS_PATHS[name]), name)


def test_the_history_ends_with_the_installed_ray(history):
    from rldoctor.lint.ray_names import ray_build, ray_root

    assert history["releases"][-1] == ray_build(ray_root())["version"]
    assert history["releases"][0].startswith("1.")
    assert len(history["releases"]) >= 8
    kinds = {(r["kind"], "gone" in r) for r in history["rows"]}
    assert {("module", True), ("name", True), ("method", True), ("kwarg", True), ("kwarg", False)} <= kinds


def test_modules_it_says_are_gone_cannot_be_imported(history):
    rows = [r for r in history["rows"] if r["kind"] == "module"]
    assert any(r["name"] == "ray.rllib.agents" for r in rows)
    for row in rows:
        with pytest.raises(getattr(builtins, row["error"])):
            if importlib.util.find_spec(row["name"]) is None:
                raise ModuleNotFoundError(row["name"])
            importlib.import_module(row["name"])


def test_names_it_says_are_gone_are_not_in_their_module(history):
    rows = [r for r in history["rows"] if r["kind"] == "name" and "gone" in r]
    assert rows
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in rows:
            try:
                module = importlib.import_module(row["module"])
            except ImportError:
                continue  # needs an optional dependency (tensorflow, ...) this venv has not
            assert not hasattr(module, row["name"]), f"{row['module']}.{row['name']} is still there"
            checked += 1
    assert checked >= len(rows) * 0.8


def test_methods_and_kwargs_are_as_the_history_says(history):
    checked = {"method-gone": 0, "kwarg-gone": 0, "method-deprecated": 0, "kwarg-deprecated": 0}
    for row in history["rows"]:
        if row["kind"] == "method":
            cls = _cls(row["class"])
            if "gone" in row:
                assert row["error"] == "AttributeError"
                assert not hasattr(cls, row["name"]), f"{row['class']}.{row['name']} is still there"
                checked["method-gone"] += 1
            else:
                assert hasattr(cls, row["name"])
                checked["method-deprecated"] += 1
        elif row["kind"] == "kwarg" and row["class"] in CLASS_PATHS:
            method = getattr(_cls(row["class"]), row["method"])
            params = inspect.signature(method).parameters
            if "gone" in row:
                assert row["error"] == "TypeError"
                assert row["name"] not in params
                assert not any(p.kind is p.VAR_KEYWORD for p in params.values())
                checked["kwarg-gone"] += 1
            else:
                assert params[row["name"]].default is not inspect.Parameter.empty
                checked["kwarg-deprecated"] += 1
    assert all(checked.values()), checked


def test_a_deprecated_kwarg_of_the_config_raises_or_warns_as_the_history_says(history):
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    rows = [r for r in history["rows"] if r["kind"] == "kwarg" and r["class"] == "AlgorithmConfig"
            and "deprecated" in r]
    raised = 0
    for row in rows:
        config = AlgorithmConfig()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                getattr(config, row["method"])(**{row["name"]: 1})
            except ValueError as exc:
                if "deprecat" not in str(exc):
                    continue  # a check of the value's type, not of the name
                assert row["raises"], f"{row['method']}({row['name']}=) raises, the history says it warns"
                raised += 1
                continue
            except Exception:  # a value of the wrong type for a setting that still works
                continue
        assert not row["raises"], f"{row['method']}({row['name']}=) does not raise"
    assert raised >= 10


def test_algorithm_config_kwargs_are_as_the_history_says(history):
    """The algorithms' own `training()` keywords (PPOConfig, DQNConfig, SACConfig, IMPALAConfig,
    APPOConfig): one said to be gone is refused with TypeError by the installed Ray's class (its
    `training(**kwargs)` hands it to AlgorithmConfig, which does not take it); one said to be
    deprecated is still taken, and raises ValueError exactly when the history says it raises."""
    assert set(ALGORITHM_CONFIG_PATHS) == set(ray_history.ALGORITHM_CONFIGS)
    rows = [r for r in history["rows"] if r["kind"] == "kwarg" and r["class"] in ALGORITHM_CONFIG_PATHS]
    assert {r["class"] for r in rows} >= {"PPOConfig", "IMPALAConfig", "APPOConfig"}
    assert any(r["class"] == "PPOConfig" and r["name"] == "sgd_minibatch_size" and "gone" in r for r in rows)
    for row in rows:
        cls = getattr(importlib.import_module(ALGORITHM_CONFIG_PATHS[row["class"]]), row["class"])
        call = getattr(cls(), row["method"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if "gone" in row:
                with pytest.raises(TypeError, match=f"unexpected keyword argument '{row['name']}'"):
                    call(**{row["name"]: 1})
            elif row["raises"]:
                with pytest.raises(ValueError, match="deprecated|no longer supported"):
                    call(**{row["name"]: 1})
            else:
                call(**{row["name"]: 1})
    # and no keyword the installed Ray's class takes is said to be gone
    for row in rows:
        cls = getattr(importlib.import_module(ALGORITHM_CONFIG_PATHS[row["class"]]), row["class"])
        accepted = set()
        for klass in cls.__mro__:
            method = klass.__dict__.get(row["method"])
            if method is not None:
                accepted |= set(inspect.signature(method).parameters)
        assert ("gone" in row) == (row["name"] not in accepted), row


def test_lint_flags_an_algorithms_own_removed_keyword_only_for_that_algorithm(tmp_path):
    """A row of an algorithm's config class fires on that algorithm's config, not on another's."""
    from conftest import lint_paths

    script = tmp_path / "train.py"
    script.write_text("from ray.rllib.algorithms.ppo import PPOConfig\n"
                      "from ray.rllib.algorithms.dqn import DQNConfig\n"
                      "ppo = PPOConfig().training(shuffle_sequences=True)\n"
                      "config = PPOConfig()\n"
                      "config = config.training(mini_batch_size_per_learner=64)\n"
                      "dqn = DQNConfig().training(shuffle_sequences=True)\n")
    report, problems, _ = lint_paths([str(script)])
    assert problems == []
    found = {(f.location["line"], f.evidence.get("row")) for f in report.findings}
    assert (3, "history-PPO-training-shuffle_sequences") in found
    assert (5, "history-PPO-training-mini_batch_size_per_learner") in found
    assert not any(line == 6 for line, _ in found), found


def test_replacements_named_as_a_method_exist(history):
    named = 0
    for row in history["rows"]:
        new = row.get("new") or ""
        head = new.split("(")[0]
        cls, _, member = head.partition(".")
        if cls in CLASS_PATHS and member.isidentifier():
            target = _cls(cls)() if cls == "AlgorithmConfig" else _cls(cls)  # attributes set in __init__
            assert hasattr(target, member), f"{row} names {head}, which the installed Ray lacks"
            named += 1
    assert named >= 10


def test_the_generator_reads_a_release_from_its_files(tmp_path):
    """A release given as a `ray/` directory: the rows follow from what its files define."""
    old = tmp_path / "old" / "ray"
    new = tmp_path / "new" / "ray"
    (old / "rllib" / "agents").mkdir(parents=True)
    (new / "rllib").mkdir(parents=True)
    (old / "rllib" / "__init__.py").write_text("from ray.rllib.x import A, B\n")
    (new / "rllib" / "__init__.py").write_text("from ray.rllib.x import A\n")
    (old / "rllib" / "agents" / "__init__.py").write_text("")
    (old / "rllib" / "algorithms").mkdir()
    (new / "rllib" / "algorithms").mkdir()
    (old / "rllib" / "algorithms" / "algorithm_config.py").write_text(
        "class AlgorithmConfig:\n    def training(self, *, lr=1, sgd=2):\n        pass\n"
        "    def multiagent(self):\n        pass\n")
    (new / "rllib" / "algorithms" / "algorithm_config.py").write_text(
        "class AlgorithmConfig:\n    def training(self, *, lr=1, old=DEPRECATED_VALUE):\n"
        "        if old != DEPRECATED_VALUE:\n"
        "            deprecation_warning(old='old', new='lr', error=True)\n")
    (old / "rllib" / "algorithms" / "ppo").mkdir()
    (new / "rllib" / "algorithms" / "ppo").mkdir()
    (old / "rllib" / "algorithms" / "ppo" / "ppo.py").write_text(
        "class PPOConfig(AlgorithmConfig):\n    def training(self, *, clip=1, sgd_minibatch=2, **kwargs):\n"
        "        super().training(**kwargs)\n")
    (new / "rllib" / "algorithms" / "ppo" / "ppo.py").write_text(
        "class PPOConfig(AlgorithmConfig):\n    def training(self, *, clip=1, **kwargs):\n"
        "        super().training(**kwargs)\n")
    history = ray_history.build([("1.0.0", str(old)), ("2.0.0", str(new))])
    algo_rows = [r for r in history["rows"] if r.get("class") == "PPOConfig"]
    # its own keyword it dropped is a row; AlgorithmConfig's (sgd, old) are not repeated for it,
    # and lr, which it takes through **kwargs, is not gone
    assert algo_rows == [{"kind": "kwarg", "class": "PPOConfig", "method": "training", "name": "sgd_minibatch",
                          "last": "1.0.0", "gone": "2.0.0", "error": "TypeError"}]
    rows = {(r["kind"], r.get("method", r.get("module", "")), r["name"]): r for r in history["rows"]}
    assert rows[("module", "", "ray.rllib.agents")]["gone"] == "2.0.0"
    assert rows[("name", "ray.rllib", "B")]["last"] == "1.0.0"
    assert rows[("method", "", "multiagent")]["error"] == "AttributeError"
    assert rows[("kwarg", "training", "sgd")]["error"] == "TypeError"
    assert rows[("kwarg", "training", "old")] == {"kind": "kwarg", "class": "AlgorithmConfig",
                                                  "method": "training", "name": "old",
                                                  "deprecated": "2.0.0", "new": "lr", "raises": True}


def test_ray_start_options_are_the_installed_ray_starts_click_options(history):
    import click
    from ray.scripts.scripts import start

    real = {}
    for param in start.params:
        if not isinstance(param, click.Option):
            continue
        names = sorted(set(param.opts) | set(param.secondary_opts))
        if isinstance(param.type, click.Choice):
            kind = "choice"
        else:
            kind = {click.INT: "int", click.FLOAT: "float", click.STRING: "str", click.BOOL: "bool"}.get(
                param.type, "other")
        real[tuple(names)] = (param.is_flag or param.count, kind,
                              sorted(param.type.choices) if kind == "choice" else None)
    shipped = {tuple(o["names"]): (o["flag"], "bool" if o["flag"] else o["type"],
                                   sorted(o["choices"]) if o.get("choices") else None)
               for o in history["ray_start_options"]}
    # choices the source names by a variable are not shipped: lint then checks only the name
    real = {k: ("bool" if v[0] else v[1], v[2] if shipped.get(k, (0, 0, None))[2] else None)
            for k, v in real.items()}
    shipped = {k: (v[1], v[2]) for k, v in shipped.items()}
    assert shipped == real
    assert ("--redis-port",) not in shipped and ("--object-store-memory",) in shipped


def test_every_history_row_of_the_lint_table_says_what_to_do():
    from rldoctor.lint.rules.table import HISTORY_ROWS

    assert len(HISTORY_ROWS) >= 40
    for row in HISTORY_ROWS:
        assert row.fix or row.new, row.id
        if row.behaviour == "raises":
            assert row.error and row.error[0] in ("AttributeError", "TypeError", "ValueError"), row.id
            assert row.says.startswith(f"raises {row.error[0]}"), row.id
