"""`--fix` on every lint fixture: the file still parses, only reported lines change, fewer findings after.

Each fixture under fixtures/lint/ is copied to a temporary directory, linted, and
fixed with the same plans `rldoctor lint --fix` makes. Then: Python still
compiles, a notebook is still valid JSON whose code cells compile, YAML is never
touched; every changed line (every changed cell line in a notebook) is a line a
finding was reported on; the diff `--diff` shows is exactly the change `--fix`
made; and linting again finds fewer findings, none of them with an edit left.
"""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from rldoctor.lint import fixes
from conftest import lint_paths
from rldoctor.lint.notebook import cell_sources, read_notebook

SOURCES = sorted(p for p in (FIXTURES / "lint").glob("*/*") if p.suffix in (".py", ".ipynb", ".yaml", ".yml"))


@pytest.fixture(scope="module", autouse=True)
def names_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLDOCTOR_CACHE_DIR", str(tmp_path_factory.mktemp("rldoctor-cache")))
        yield


def _lines(path: Path) -> dict[tuple[int, int], str]:
    """(cell, line) -> text; cell 0 for a plain file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return {(0, i): line for i, line in enumerate(text.splitlines(), start=1)}
    out = {}
    for cell, lines in cell_sources(json.loads(text)).items():
        out.update({(cell, i): line.rstrip("\n") for i, line in enumerate(lines, start=1)})
    return out


def _still_parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        compile(text, str(path), "exec")
    elif path.suffix == ".ipynb":
        compile(read_notebook(text).source, str(path), "exec")


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fix_changes_only_reported_lines_and_leaves_fewer_findings(source, tmp_path):
    target = tmp_path / source.name
    shutil.copy(source, target)
    before_text = target.read_text(encoding="utf-8")
    before_lines = _lines(target)
    report, problems, doc = lint_paths([str(target)])
    assert problems == []
    reported = {(f.location.get("cell", 0), f.location["line"]) for f in report.findings}
    plans = fixes.plans(report, {r["path"]: r for r in doc["lint"]["files"]})
    shown, count = fixes.unified_diff(plans)
    applied, files, _ = fixes.apply_fixes(plans)
    assert applied == count
    after_text = target.read_text(encoding="utf-8")
    written = "".join(line if line.endswith("\n") else line + "\n" for line in difflib.unified_diff(
        before_text.splitlines(keepends=True), after_text.splitlines(keepends=True), str(target), str(target)))
    assert shown == written  # --diff shows exactly what --fix wrote
    _still_parses(target)
    if not applied:
        assert after_text == before_text and files == 0
        return
    assert source.suffix in (".py", ".ipynb")  # YAML is never rewritten
    after_lines = _lines(target)
    assert after_lines.keys() == before_lines.keys()  # renames never add or remove lines
    changed = {k for k in before_lines if before_lines[k] != after_lines[k]}
    assert changed and changed <= reported, sorted(changed - reported)
    if source.suffix == ".ipynb":  # the JSON around the edited strings is kept as it was
        raw = [(a, b) for a, b in zip(before_text.splitlines(), after_text.splitlines()) if a != b]
        assert len(raw) == len(changed) and len(before_text.splitlines()) == len(after_text.splitlines())
    again, _, _ = lint_paths([str(target)])
    assert len(again.findings) < len(report.findings)
    assert not [f for f in again.findings if f.evidence.get("edits")]


def test_a_notebook_in_another_layout_keeps_its_layout(tmp_path):
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3"}},
                "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": ["from ray.rllib.algorithms.ppo import PPOConfig\n",
                                      "config = PPOConfig().rollouts(num_rollout_workers=2)  # 两个\n",
                                      "config.build()"]}]}
    path = tmp_path / "layout.ipynb"
    text = json.dumps(notebook, indent=2, ensure_ascii=True) + "\n"  # unsorted keys, escaped, indent 2
    path.write_text(text, encoding="utf-8")
    report, _, doc = lint_paths([str(path)])
    fixes.apply_fixes(fixes.plans(report, {r["path"]: r for r in doc["lint"]["files"]}))
    after = path.read_text(encoding="utf-8")
    changed = [(a, b) for a, b in zip(text.splitlines(), after.splitlines()) if a != b]
    assert len(changed) == 2 and all("config" in b for _, b in changed), changed
    assert "\\u4e24\\u4e2a" in after and '.env_runners(num_env_runners=2)' in after
    assert after.replace(".env_runners(num_env_runners=2)", ".rollouts(num_rollout_workers=2)").replace(
        "config.build_algo()", "config.build()") == text
