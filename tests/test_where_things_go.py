"""The README's "Where things go" stays true: every folder it names exists and holds at least
one module of that kind (a check, a lint rule, a collector section, a node-side fact, a report
section, an output format, a command).

A folder the README names that the tree does not have is a failure that names the folder.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from conftest import ROOT

KINDS = ("check", "lint rule", "collector section", "node-side fact", "report section",
         "output format", "command")
_ROW = re.compile(r"^\| ([a-z -]+) \| `([^`]+)`")


def where_things_go() -> dict[str, str]:
    """{kind: folder} from the README's "Where things go" table."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Where things go", 1)[1].split("\n## ", 1)[0]
    return {m.group(1).strip(): m.group(2) for m in map(_ROW.match, section.splitlines()) if m}


def _folder(name: str) -> Path:
    """The folder a README cell names: `checks/<area>/` is checks/ (its area packages)."""
    return ROOT / name.split("<", 1)[0].rstrip("/")


def _modules(folder: Path, recursive: bool = False) -> list[Path]:
    found = folder.rglob("*.py") if recursive else folder.glob("*.py")
    return sorted(p for p in found if p.name != "__init__.py")


def _check_files() -> list[tuple[str, Path]]:
    from rldoctor.registry import builtin_checks

    return [(c.area, Path(inspect.getsourcefile(c.func)).resolve()) for c in builtin_checks()]


def _is_check(folder: Path) -> bool:
    """A check (not a lint rule) in a per-area package: checks/<area>/<module>.py."""
    return any(area != "code" and path.parent.parent == folder.resolve()
               for area, path in _check_files())


def _is_lint_rule(folder: Path) -> bool:
    return any(area == "code" and folder.resolve() in path.parents for area, path in _check_files())


def _is_collector_section(folder: Path) -> bool:
    """A module that declares a snapshot section (`@section`, rldoctor.cluster.sections)."""
    return any(re.search(r"^@section\(", p.read_text(), re.M) for p in _modules(folder))


def _is_node_side(folder: Path) -> bool:
    """Code pickled by value onto the nodes, a module of it declaring a fact (`@fact(...)`)."""
    texts = [p.read_text() for p in _modules(folder)]
    return any("register_pickle_by_value" in t for t in texts) and any("\n@fact(" in t for t in texts)


def _is_report_section(folder: Path) -> bool:
    """A module of the folder that declares a report section the report finds."""
    from rldoctor.report.sections import found

    return any(Path(inspect.getsourcefile(s.build)).resolve().parent == folder.resolve()
               for s in found())


def _is_output_format(folder: Path) -> bool:
    from rldoctor.report.render import RENDERERS

    return any(Path(inspect.getsourcefile(f)).resolve().parent == folder.resolve()
               for f in RENDERERS.values())


def _is_command(folder: Path) -> bool:
    """A module whose public function a CLI command calls."""
    cli = (ROOT / "doctor" / "cli.py").read_text()
    return any(f"commands.{p.stem} import" in cli or f"commands import {p.stem}" in cli
               for p in _modules(folder))


KIND_TEST = {"check": _is_check, "lint rule": _is_lint_rule,
             "collector section": _is_collector_section, "node-side fact": _is_node_side,
             "report section": _is_report_section, "output format": _is_output_format,
             "command": _is_command}


def test_the_readme_names_a_folder_for_every_kind_of_part():
    places = where_things_go()
    assert set(places) == set(KINDS), set(KINDS) ^ set(places)
    for kind, name in places.items():
        assert name.startswith(("doctor/", "checks/")) and name.endswith("/"), (kind, name)


@pytest.mark.parametrize("kind", KINDS)
def test_the_folder_exists_and_holds_a_module_of_its_kind(kind):
    name = where_things_go()[kind]
    folder = _folder(name)
    assert folder.is_dir(), f"{name} (the README's folder for a {kind}) does not exist"
    if kind == "check":
        assert [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))], \
            f"{name}: no per-area package of checks"
    assert KIND_TEST[kind](folder), f"{name} holds no {kind}"


@pytest.mark.parametrize("kind, folder", [
    ("check", "doctor"), ("lint rule", "doctor/report"), ("collector section", "doctor/report/render"),
    ("node-side fact", "doctor/report"), ("report section", "doctor/commands"),
    ("output format", "doctor/commands"), ("command", "doctor/report"),
])
def test_each_kind_test_says_no_for_a_folder_of_other_modules(kind, folder):
    assert (ROOT / folder).is_dir() and _modules(ROOT / folder)
    assert not KIND_TEST[kind](ROOT / folder)


def test_the_readme_links_the_reference_pages_and_they_exist():
    """The README stays short; the reference is in docs/, every page linked and present."""
    text = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)\)", text))
    assert {"docs/commands.md", "docs/checks.md", "docs/architecture.md", "docs/performance.md"} <= linked
    for page in linked:
        assert (ROOT / page).is_file(), page
    assert len(text.splitlines()) < 200
    for page in (ROOT / "docs").glob("*.md"):  # and back: each page's links resolve too
        for target in re.findall(r"\]\(([\w./-]+\.md)\)", page.read_text()):
            assert (page.parent / target).resolve().is_file(), (page.name, target)
