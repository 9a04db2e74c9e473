"""Bad input for `rldoctor lint`: each is one line of the report, the other paths are still linted.

Syntax errors, binary and non-UTF-8 files, files that went away, huge files,
YAML bombs (aliases expanding without bound), recursive anchors, YAML nested
without end, broken notebooks. Never a traceback, never a hang.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from rldoctor.commands.lint import exit_code
from conftest import lint_paths
from rldoctor.lint.yaml_source import MAX_NODES, YamlProblem, load_yaml

GOOD = "from ray.rllib.algorithms.ppo import PPOConfig\nPPOConfig().training(sgd_minibatch_size=64)\n"


@pytest.fixture(autouse=True)
def names_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RLDOCTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rldoctor-cache"))


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "cluster_name: bomb\nprovider: {type: local}\n" + "\n".join(lines) + "\n"


def _write(path, content):
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _statuses(problems):
    return {os.path.basename(p["path"]): p["status"] for p in problems}


def test_each_bad_input_is_one_problem_and_the_good_file_is_still_linted(tmp_path):
    good = _write(tmp_path / "good.py", GOOD)
    _write(tmp_path / "broken.py", "config = PPOConfig(\n    .training(lr=1e-3\n")
    _write(tmp_path / "binary.py", b"\x00\x01\x02ELF" * 100)
    _write(tmp_path / "latin1.py", "x = 'caf\xe9'\n".encode("latin-1"))
    _write(tmp_path / "bomb.yaml", _bomb())
    _write(tmp_path / "loop.yaml", "cluster_name: x\nprovider: &p {type: local, self: *p}\n")
    _write(tmp_path / "deep.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n")
    _write(tmp_path / "invalid.yaml", "cluster_name: x\n  provider: [\n")
    _write(tmp_path / "huge.py", "x = 1\n" * (1_000_000))
    _write(tmp_path / "notebook.ipynb", "{not json")
    _write(tmp_path / "cells.ipynb", json.dumps({"cells": [
        {"cell_type": "code", "source": ["x = 1\n"]},
        {"cell_type": "code", "source": ["def broken(:\n"]}]}))
    os.symlink(tmp_path / "gone.py", tmp_path / "dangling.py")
    started = time.perf_counter()
    report, problems, _ = lint_paths([str(tmp_path), str(tmp_path / "missing.py")])
    assert time.perf_counter() - started < 10
    assert _statuses(problems) == {
        "broken.py": "syntax-error", "binary.py": "binary", "latin1.py": "binary",
        "bomb.yaml": "yaml-bomb", "loop.yaml": "yaml-bomb", "deep.yaml": "yaml-error",
        "invalid.yaml": "yaml-error", "huge.py": "too-large", "notebook.ipynb": "syntax-error",
        "cells.ipynb": "syntax-error", "dangling.py": "unreadable", "missing.py": "unreadable"}
    by_name = {os.path.basename(p["path"]): p for p in problems}
    assert by_name["broken.py"]["line"] >= 1 and "syntax error" in by_name["broken.py"]["message"]
    assert by_name["cells.ipynb"]["cell"] == 2 and by_name["cells.ipynb"]["line"] == 1
    assert by_name["bomb.yaml"]["line"] > 0 and f"{MAX_NODES:,}" in by_name["bomb.yaml"]["message"]
    assert by_name["latin1.py"]["line"] == 1
    assert [f.location["path"] for f in report.findings] == [str(good)]
    assert report.findings[0].severity.label == "fail"
    assert exit_code(report, problems, "fail") == 1  # a fail finding outranks unlintable inputs
    assert len(report.notes) == len(problems) and all(n.startswith("not linted: ") for n in report.notes)


def test_only_unlintable_input_exits_3(tmp_path):
    _write(tmp_path / "broken.py", "def (:\n")
    report, problems, _ = lint_paths([str(tmp_path)])
    assert report.findings == [] and exit_code(report, problems, "fail") == 3


def test_a_bomb_is_refused_before_anything_walks_it():
    started = time.perf_counter()
    with pytest.raises(YamlProblem) as caught:
        load_yaml(_bomb(30))  # 10**30 nodes if expanded
    assert caught.value.status == "yaml-bomb"
    assert time.perf_counter() - started < 2


def test_aliases_that_stay_small_are_fine_and_duplicates_are_recorded():
    docs = load_yaml("base: &b {CPU: 4}\nhead: *b\nworker: *b\nhead: {CPU: 8}\n")
    assert docs[0].data["head"] == {"CPU": 8}
    assert docs[0].duplicates == [{"pointer": "/head", "line": 4, "column": 1, "first_line": 2}]
    assert docs[0].locations["/worker"] == [3, 1]


def test_not_a_cluster_config_gives_no_findings(tmp_path):
    _write(tmp_path / "deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n---\n"
                                         "- just\n- a list\n")
    _write(tmp_path / "empty.yaml", "")
    report, problems, _ = lint_paths([str(tmp_path)])
    assert problems == [] and report.findings == [] and report.errored == []


def test_unsupported_file_given_by_name(tmp_path):
    _write(tmp_path / "train.sh", "ray submit cluster.yaml train.py\n")
    _, problems, _ = lint_paths([str(tmp_path / "train.sh")])
    assert _statuses(problems) == {"train.sh": "unsupported"}


def test_unreadable_file_when_permissions_apply(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every file; the dangling symlink above covers unreadable input")
    locked = _write(tmp_path / "locked.py", GOOD)
    locked.chmod(0)
    try:
        _, problems, _ = lint_paths([str(locked)])
    finally:
        locked.chmod(0o644)
    assert _statuses(problems) == {"locked.py": "unreadable"}


def test_a_shell_command_continued_over_lines_in_a_notebook_is_not_python(tmp_path):
    """`!rllib rollout \\` and its continuation lines, as notebooks from the Ray 1.x days have them."""
    from conftest import lint_paths

    notebook = tmp_path / "rollout.ipynb"
    notebook.write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": ["from ray.tune import run\n",
                                         "analysis = run(\"PPO\", stop={\"episode_reward_mean\": 195})\n"]},
        {"cell_type": "code", "source": ["!rllib rollout \\\n", "--run PPO \\\n", "--episodes 5 \\\n",
                                         "$checkpoint_path\n"]},
        {"cell_type": "code", "source": ["best = analysis.get_best_trial(\"episode_reward_mean\")\n"]}]}))
    report, problems, _ = lint_paths([str(notebook)])
    assert problems == []
    assert {(f.location["cell"], f.location["line"]) for f in report.findings} == {(1, 2), (3, 1)}
