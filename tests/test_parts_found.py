"""A report section and an output format are each one module: a module written next to the
shipped ones (a folder added to the package's search path, as a newcomer's file would sit in
it) is found by the same search that finds the Training part and the table, Markdown and JSON
renderers, with nothing else edited. Each test fails when that search breaks (a hand list, a
missed module, a declaration not read)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rldoctor.report.render as render_package
import rldoctor.report.sections as sections_package
from conftest import FIXTURES
from rldoctor.engine.pipeline import Diagnosis
from rldoctor.report import sections
from rldoctor.report.render import FORMATS, LINT_FORMATS, formats
from rldoctor.snapshot import load

ROOT = Path(__file__).resolve().parent.parent
SECTION = '''\
"""Nodes at a glance: a newcomer's report section."""

from rldoctor.report.sections import report_section


def _table(value):
    return [f"Nodes at a glance: {value['alive']} of {value['listed']} alive"]


def _markdown(value, cell):
    return ["### Nodes at a glance", "", cell(f"{value['alive']} of {value['listed']} alive")]


@report_section("nodes_at_a_glance", table=_table, markdown=_markdown, order=30)
def build(snap, report):
    return {"alive": len(snap.alive_nodes), "listed": len(snap.nodes)} if snap.has("nodes") else None
'''

FORMAT = '''\
"""One line per finding, tab-separated: a newcomer's output format."""

from rldoctor.report.render.formats import output_format


@output_format("tsv", order=50)
def render_tsv(report):
    return "".join(f"{f.code}\\t{f.severity.label}\\t{f.subject}\\n" for f in report.active_findings)
'''


@pytest.fixture
def newcomer(tmp_path, monkeypatch):
    """Write `text` as module `name` into a folder on `package`'s search path; the searches
    start afresh, and again once the test is over."""
    def add(package, name: str, text: str) -> None:
        folder = tmp_path / package.__name__
        folder.mkdir(exist_ok=True)
        (folder / f"{name}.py").write_text(text)
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
        added.append(f"{package.__name__}.{name}")
        sections.found.cache_clear()
        formats.found.cache_clear()

    added: list[str] = []
    yield add
    for name in added:
        sys.modules.pop(name, None)
    sections.found.cache_clear()
    formats.found.cache_clear()


def test_the_shipped_parts_are_what_the_search_finds():
    assert [s.name for s in sections.found()] == ["training"]
    assert FORMATS == ("table", "json", "markdown", "text")
    assert LINT_FORMATS == ("text", "json", "markdown", "table")
    assert tuple(formats.renderers(formats.found())) == FORMATS


def test_a_report_section_module_is_found_built_and_drawn_in_every_format(newcomer):
    snap = load(FIXTURES / "node-dead.json")
    assert "nodes_at_a_glance" not in Diagnosis.every_check().run(snap, {}).parts
    newcomer(sections_package, "glance", SECTION)
    assert [s.name for s in sections.found()] == ["training", "nodes_at_a_glance"]
    report = Diagnosis.every_check().run(snap, {})
    alive, listed = len(snap.alive_nodes), len(snap.nodes)
    assert report.parts["nodes_at_a_glance"] == {"alive": alive, "listed": listed} and alive < listed
    table = formats.renderers(formats.found())["table"](report)
    assert f"\nNodes at a glance: {alive} of {listed} alive\n\nFindings (" in table
    markdown = formats.renderers(formats.found())["markdown"](report)
    assert f"### Nodes at a glance\n\n{alive} of {listed} alive\n\n### Findings (" in markdown
    doc = json.loads(formats.renderers(formats.found())["json"](report))
    assert doc["nodes_at_a_glance"] == {"alive": alive, "listed": listed}


def test_an_output_format_module_is_found_for_reports_and_lint(newcomer):
    assert "tsv" not in formats.renderers(formats.found())
    newcomer(render_package, "tsv", FORMAT)
    report = Diagnosis.every_check().run(load(FIXTURES / "node-dead.json"), {})
    for lint in (False, True):
        chosen = formats.renderers(formats.found(), lint=lint)
        assert list(chosen)[-2:] == ["tsv", "text" if not lint else "table"]  # before the aliases
    lines = formats.renderers(formats.found())["tsv"](report).splitlines()
    assert lines and all(line.split("\t")[0] == "RLD101" for line in lines)


def test_the_cli_offers_a_format_module_it_finds(tmp_path):
    """`rldoctor check --format tsv` from a copy of the source tree with one module added
    beside the shipped renderers: the --format choices are what the search finds."""
    copy = tmp_path / "rldoctor"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "doctor", copy, ignore=ignore)
    shutil.copytree(ROOT / "checks", copy / "checks", ignore=ignore)
    (copy / "report" / "render" / "tsv.py").write_text(FORMAT)
    program = ("import sys; sys.path.insert(0, sys.argv.pop(1)); import rldoctor; "
               "assert rldoctor.__file__.startswith(sys.path[0]), rldoctor.__file__; "
               "from rldoctor.cli import main; main()")
    proc = subprocess.run([sys.executable, "-c", program, str(tmp_path), "check", "--from",
                           str(FIXTURES / "node-dead.json"), "--format", "tsv"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr[-800:]
    assert proc.stdout.splitlines()[0].startswith("RLD101\tfail\tnode:"), proc.stdout[:500]
