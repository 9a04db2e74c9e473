"""What users read quotes popular advice itself, and never names a source document."""

from __future__ import annotations

import re

from click.testing import CliRunner

from conftest import ROOT
from rldoctor.cli import main
from rldoctor.engine.registry import load_registry, parse_doc

WORDS = re.compile(r"seed article|the article|the seed|\barticle\b", re.IGNORECASE)


def test_explain_prints_the_advice_section_as_common_advice_for_every_check():
    runner = CliRunner()
    with_advice = 0
    for check in load_registry(include_plugins=False).checks:
        out = runner.invoke(main, ["explain", check.code]).output
        assert not WORDS.search(out), (check.code, WORDS.search(out).group(0))
        for finding_text in (check.doc.get("Fix", ""), check.summary):
            assert not WORDS.search(finding_text), check.code
        if check.doc.get("Advice"):
            with_advice += 1
            assert "\nCommon advice:\n" in out, check.code
            assert '"' in check.doc["Advice"], f"{check.code}: quote the advice itself"
            assert "right" in check.doc["Advice"], f"{check.code}: say when the advice is right"
    assert with_advice >= 8
    out = runner.invoke(main, ["explain", "RLD301"]).output
    assert 'A common troubleshooting table says "workers restart often' in out


def test_an_article_section_of_a_plugin_is_read_as_advice():
    doc = parse_doc('Summary.\n\nSymptom:\n    it hurts\n\nArticle:\n    "do X" is right when Y.\n')
    assert doc["Advice"] == '"do X" is right when Y.' and "Article" not in doc


def test_help_readme_and_sources_never_name_a_source_document():
    runner = CliRunner()
    for args in (["--help"], ["check", "--help"], ["smoke-train", "--help"], ["lint", "--help"]):
        out = runner.invoke(main, args).output
        assert not WORDS.search(out), (args, WORDS.search(out).group(0))
    readme = (ROOT / "README.md").read_text()
    assert not re.search(r"seed article|the article", readme, re.IGNORECASE)
    assert "## Popular advice, corrected" in readme
    for page in sorted((ROOT / "docs").glob("*.md")):  # the reference the README links to
        assert not re.search(r"seed article|the article", page.read_text(), re.IGNORECASE), page
    for folder in ("doctor", "checks"):
        for path in (ROOT / folder).rglob("*.py"):
            found = re.search(r"seed article|the article|the seed", path.read_text(), re.IGNORECASE)
            assert not found, (path, found.group(0))
