"""The tree's own description is true: docs/architecture.md's module map is the tree's, and each
package's docstring names every module and subpackage it holds."""

from __future__ import annotations

import ast
from pathlib import Path

import module_map

ROOT = Path(__file__).resolve().parent.parent
# packages another change is rewriting now (lint); their docstrings are that change's
NOT_YET = ("doctor/lint", "doctor/lint/rules")


def test_the_module_map_is_the_trees():
    doc = module_map.DOC.read_text(encoding="utf-8")
    assert doc.count(module_map.BEGIN) == 1 and doc.count(module_map.END) == 1
    assert module_map.current(doc) == module_map.text(), (
        "docs/architecture.md's module map differs from the tree: run "
        "`python tests/module_map.py --update` and review the diff")


def test_the_map_follows_a_module_added_or_moved(tmp_path):
    for rel, text in {"doctor/__init__.py": '"""The package."""\n',
                      "doctor/cluster/__init__.py": '"""The cluster side: new."""\n',
                      "doctor/cluster/new.py": '"""A new collector: it reads things. More."""\n',
                      "checks/__init__.py": '"""Checks."""\n'}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    written = module_map.text(tmp_path)
    assert "    cluster    new.py" in written and "A new collector" in written
    assert "More" not in written
    assert written != module_map.current(module_map.DOC.read_text())


def missing_from_package_docstrings(root: Path) -> list[str]:
    """"package: module" for each module or subpackage its package's docstring does not name."""
    missing = []
    for init in sorted([*(root / "doctor").rglob("__init__.py"), *(root / "checks").rglob("__init__.py")]):
        folder = init.parent
        rel = folder.relative_to(root).as_posix()
        if rel in NOT_YET:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        parts = sorted([p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
                       + [p.name for p in folder.iterdir() if (p / "__init__.py").is_file()])
        missing += [f"{rel}: {part}" for part in parts
                    if not any(f"{part}{end}" in doc for end in ("/", ".py", " ", ",", ":", ")", "\n"))]
    return missing


def test_every_package_docstring_names_its_modules():
    assert missing_from_package_docstrings(ROOT) == []


def test_the_docstring_scan_finds_an_unnamed_module(tmp_path):
    (tmp_path / "doctor" / "pkg").mkdir(parents=True)
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "__init__.py").write_text('"""Checks: none."""\n')
    (tmp_path / "doctor" / "__init__.py").write_text('"""pkg/ holds things."""\n')
    (tmp_path / "doctor" / "pkg" / "__init__.py").write_text('"""    named.py   named here\n"""\n')
    (tmp_path / "doctor" / "pkg" / "named.py").write_text("")
    (tmp_path / "doctor" / "pkg" / "unnamed.py").write_text("")
    assert missing_from_package_docstrings(tmp_path) == ["doctor/pkg: unnamed"]
