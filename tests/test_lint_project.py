"""The files given to one `rldoctor lint` are one project: a dict config built in one module
and handed to Tune or RLlib in another is judged as if both were one file; alone, the
building module keeps "a dict that looks like an RLlib config" (at most warn)."""

from __future__ import annotations

import json

from conftest import FIXTURES, run_rldoctor
from test_lint_cli import env  # noqa: F401  (the module's clean environment and names cache)

PROJECT = FIXTURES / "lint" / "project"
SETTINGS = PROJECT / "robot" / "settings.py"


def _findings(*paths, env):
    result = run_rldoctor("lint", "--format", "json", *map(str, paths), env=env)
    assert result.code in (0, 1), result
    findings = json.loads(result.stdout)["findings"]
    if len({f["location"]["path"] for f in findings}) > 1:
        return {(f["location"]["path"], f["location"]["line"], f["rule"]): f for f in findings}
    return {(f["location"]["line"], f["rule"]): f for f in findings}


def test_a_config_built_in_one_module_and_trained_in_another_is_judged_as_one_file(env):
    together = _findings(PROJECT, env=env)
    alone = _findings(SETTINGS, env=env)
    assert set(together) == set(alone) == {(8, "RLD801/key-framework-tf"), (9, "RLD801/key-num_envs_per_worker"),
                                           (10, "RLD801/key-num_workers"), (20, "RLD801/key-sgd_minibatch_size")}
    for key, f in together.items():  # what Ray 2.60 does with the key decides, as in one file
        assert "looks like" not in f["message"] and f["evidence"]["reached_from"].startswith(
            str(PROJECT / "robot" / "train.py") + ":10")
        assert "handed to RLlib at" in f["message"]
    assert {k: f["severity"] for k, f in together.items()} == {
        (8, "RLD801/key-framework-tf"): "fail", (9, "RLD801/key-num_envs_per_worker"): "fail",
        (10, "RLD801/key-num_workers"): "warn", (20, "RLD801/key-sgd_minibatch_size"): "fail"}
    for f in alone.values():  # no RLlib call reaches it in the files given
        assert "looks like an RLlib config" in f["message"] and f["severity"] == "warn"
        assert "reached_from" not in f["evidence"]
    # the DataLoader dict beside it (num_workers too) is nobody's RLlib config
    assert not [k for k in together if k[0] == 14]


def test_a_top_level_import_of_a_module_attribute_is_followed(env, tmp_path):
    (tmp_path / "settings.py").write_text(
        'CONFIG = {"env": "CartPole-v1", "num_sgd_iter": 10, "rollout_fragment_length": 50}\n')
    (tmp_path / "run.py").write_text(
        "import settings\nfrom ray import tune\ntune.run('PPO', config=settings.CONFIG)\n")
    (tmp_path / "other.py").write_text(  # the same name in a file that hands it to nothing
        'CONFIG = {"env": "CartPole-v1", "num_sgd_iter": 10, "rollout_fragment_length": 50,'
        ' "framework": "torch", "lambda": 0.95}\n')
    found = _findings(tmp_path / "settings.py", tmp_path / "run.py", tmp_path / "other.py", env=env)
    by_file = {(path.rsplit("/", 1)[-1], rule): f["severity"] for (path, _, rule), f in found.items()}
    assert by_file == {("settings.py", "RLD801/key-num_sgd_iter"): "fail",
                       ("other.py", "RLD801/key-num_sgd_iter"): "warn"}
