"""The pinned Ray's names that lint reads without Ray (rldoctor/lint/ray_table.json.gz).

The table ships with rldoctor for the client-only install; these tests fail when it
disagrees with the installed (pinned) Ray: regenerate it with
`python -m rldoctor.lint.ray_table`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import FIXTURES

from rldoctor.lint import ray_modules, ray_names, ray_table
from rldoctor.lint.document import lint_document

RULES = FIXTURES / "lint" / "rules"


@pytest.fixture(scope="module")
def root() -> Path:
    return ray_names.ray_root()


@pytest.fixture(scope="module")
def table() -> dict:
    return ray_table.load()


def test_the_table_is_of_the_installed_ray(root, table):
    assert {k: table[k] for k in ("version", "commit")} == ray_names.ray_build(root)
    assert sorted(table["modules"]) == ray_table.module_names(root), \
        "the installed Ray's modules differ from the table: python -m rldoctor.lint.ray_table"


def test_the_table_has_the_settings_the_installed_ray_knows(table, tmp_path, monkeypatch):
    monkeypatch.setenv("RLDOCTOR_CACHE_DIR", str(tmp_path))
    names = ray_names.known_names()
    assert names["cached"] is False  # read from Ray's files now, not from an old cache
    assert table["system_config_keys"] == names["system_config_keys"]
    assert table["env_names"] == names["env_names"]
    assert "health_check_period_ms" in table["system_config_keys"]
    assert "RAY_ADDRESS" in table["env_names"]


@pytest.mark.slow
def test_the_whole_table_is_what_the_installed_ray_gives(root, table):
    assert ray_table.build(root) == table, "regenerate: python -m rldoctor.lint.ray_table"


# The rule of ray_modules.bindable_names, written per name as its docstring states it: a name
# is bound when some line could define, assign or import it, or quote it.
def _could_bind(text: str, name: str) -> bool:
    n = re.escape(name)
    patterns = (rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{n}\b",
                rf"^[ \t]*[\w \t,()\[\].*]*\b{n}\b[\w \t,()\[\].*]*(?::[^=\n]*)?=(?!=)",
                rf"\bimport\b[^\n]*\b{n}\b", rf"^[ \t]*{n}[ \t]*,?[ \t]*(?:#[^\n]*)?$",
                rf"\bas[ \t]+{n}\b", rf"[\"']{n}[\"']", rf"\bglobal\b[^\n]*\b{n}\b")
    return any(re.search(p, text, re.M) for p in patterns)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SAMPLE = """\
import os, sys as system
from ray.rllib import (
    algorithms,
    env,  # the env package
)
class Trainer(object): pass
async def run(): pass
a, (b, c) = 1, 2
x.y[0] = 3
result: int = 4
d == e
f <= g
call(keyword=5)
__all__ = ["Exported", 'quoted']
def inner():
    global counter
ALONE
text = "not quoted, just mentioned_in_a_string"
"""


def test_bindable_names_follow_the_rule_name_by_name(root):
    names = ray_modules.bindable_names(_SAMPLE)
    for name in ("os", "system", "algorithms", "env", "Trainer", "run", "a", "b", "c", "x", "y",
                 "result", "call", "keyword", "__all__", "Exported", "quoted", "counter", "ALONE",
                 "text"):
        assert name in names, name
    for name in ("d", "e", "f", "g", "mentioned_in_a_string", "int", "inner_missing"):
        assert name not in names, name
    # and on the installed Ray's own small modules: the set equals the rule asked name by name
    files = sorted(p for p in root.rglob("*.py") if 200 < p.stat().st_size < 2500)[::40][:20]
    assert len(files) >= 10
    for path in files + [None]:
        text = _SAMPLE if path is None else path.read_text(encoding="utf-8", errors="replace")
        candidates = set(_IDENTIFIER.findall(text)) | {"never_in_this_module"}
        expected = {n for n in candidates if _could_bind(text, n)}
        assert ray_modules.bindable_names(text) & candidates == expected, path


def _wanted() -> dict[str, set[str]]:
    """The ray modules the lint fixtures import, and names that are gone or never were."""
    doc = lint_document([str(FIXTURES / "lint")])
    wanted = ray_modules.wanted_modules(doc["lint"]["files"])
    for module, names in {"ray.rllib.agents": {"ppo"}, "ray.rllib.agents.ppo": {"PPOTrainer"},
                          "ray.rllib.algorithms.ppo": {"PPO", "PPOConfig", "DEFAULT_CONFIG"},
                          "ray.tune": {"track", "Tuner", "run"}, "ray._raylet": {"GcsClient"},
                          "ray.rllib.evaluation": {"Episode", "RolloutWorker"},
                          "ray.util.state": {"list_actors", "no_such_function"},
                          "ray.core.generated.gcs_pb2": {"GcsNodeInfo"},
                          "ray.no_such_module": {"x"}}.items():
        wanted.setdefault(module, set()).update(names)
    return wanted


def test_the_table_answers_what_the_installed_ray_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("RLDOCTOR_CACHE_DIR", str(tmp_path))
    wanted = _wanted()
    assert len(wanted) > 15
    from_ray = ray_modules.module_index(wanted)
    from_table = ray_table.module_index(wanted)
    assert from_table == from_ray
    assert from_table["ray.rllib.agents"]["exists"] is False
    assert from_table["ray.no_such_module"]["exists"] is False
    assert from_table["ray.util.state"]["names"] == {"list_actors": True, "no_such_function": False}
    assert from_table["ray.tune"]["names"]["Tuner"] is True


def test_rld802_without_ray_runs_rldoctors_rules_and_says_what_it_skipped():
    from rldoctor.lint.rules.rld802 import invalid_cluster_config
    from rldoctor.model import Finding, Note
    from rldoctor.snapshot import validate

    path = str(RULES / "rld802_local.yaml")
    with_ray = invalid_cluster_config(validate(lint_document([path]), "lint"), {})
    doc = lint_document([path])
    for entry in doc["lint"]["files"][0]["yaml"]:  # what document._cluster records without Ray
        if entry["role"] == "cluster":
            entry["cluster"] = {"ray_absent": "Ray is not installed here (the client-only rldoctor)"}
    without = invalid_cluster_config(validate(doc, "lint"), {})
    notes = [f for f in without if isinstance(f, Note)]
    findings = [f for f in without if isinstance(f, Finding)]
    assert len(notes) == 1 and "validator" in notes[0].message and "skipped" in notes[0].message
    assert "pip install 'rldoctor-ray[cluster]'" in notes[0].message
    ours = {(f.location["line"], f.message.split(" (`ray up` says")[0]) for f in findings}
    assert ours and ours <= {(f.location["line"], f.message.split(" (`ray up` says")[0])
                             for f in with_ray}
    assert any("listed more than once" in f.message for f in findings)
    assert not any("`ray up` stops" in f.message for f in findings)  # Ray's own words are not known
    assert json.dumps([f.to_json() for f in findings])  # a report can carry them
