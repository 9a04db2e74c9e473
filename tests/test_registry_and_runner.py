"""The check registry (built-ins and entry-point plugins) and the isolating runner."""

from __future__ import annotations

import os

import pytest

from conftest import FIXTURES, run_rldoctor
from plugins import BROKEN_IMPORT, GOOD, MISBEHAVING, install
from rldoctor.engine.registry import DOC_SECTIONS, builtin_checks, check, fail, parse_doc
from rldoctor.engine.runner import run_check
from rldoctor.snapshot import Snapshot, load


def test_every_builtin_check_is_documented_and_unique():
    checks = builtin_checks()
    assert [c.code for c in checks] == sorted(c.code for c in checks)
    assert len({c.code for c in checks}) == len(checks)
    assert len({c.name for c in checks}) == len(checks)
    for c in checks:
        doc = c.doc
        assert doc["summary"], c.code
        for section in DOC_SECTIONS:
            assert doc.get(section), f"{c.code} lacks a {section} section"
        assert c.requires, f"{c.code} declares no snapshot keys"


def test_design_codes_keep_their_names():
    names = {c.code: c.name for c in builtin_checks()}
    design = {"RLD101": "node-dead", "RLD102": "version-mismatch", "RLD103": "unschedulable-demand"}
    for code, name in design.items():
        assert names[code] == name


def test_parse_doc_sections():
    doc = parse_doc('''Summary line.

    Symptom:
        it hurts
    Cause:
        a reason
        on two lines
    Fix:
        do this
    ''')
    assert doc == {"summary": "Summary line.", "Symptom": "it hurts",
                   "Cause": "a reason\non two lines", "Fix": "do this"}


@check("TST001", "test-raises", area="test", requires=("nodes",))
def _raises(snap, params):
    """x"""
    raise ValueError("boom")


@check("TST002", "test-needs-nothing-there", area="test", requires=("no_such_section",))
def _needs_missing(snap, params):
    """x"""
    yield fail("cluster", "never")


@check("TST003", "test-slow", area="test", requires=("nodes",))
def _slow(snap, params):
    """x"""
    import time

    time.sleep(5)
    yield fail("cluster", "too late")


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_runner_isolates_errors_missing_data_and_hangs():
    snap = load(FIXTURES / "healthy-3node.json")
    result = run_check(_raises, snap)
    assert result.status == "error" and "ValueError: boom" in result.detail
    result = run_check(_needs_missing, snap)
    assert result.status == "skipped" and "no_such_section" in result.detail
    result = run_check(_slow, snap, timeout_s=0.3)
    assert result.status == "error" and "timed out" in result.detail
    assert result.duration_s < 2


def test_runner_turns_collector_failure_into_error_and_unavailable_into_skip():
    data = {"collectors": {"nodes": {"status": "error", "error": "RuntimeError: gone"}}}
    result = run_check(builtin_checks()[0], Snapshot(data))
    assert result.status == "error" and "gone" in result.detail
    data = {"collectors": {"nodes": {"status": "unavailable", "reason": "no dashboard"}}}
    result = run_check(builtin_checks()[0], Snapshot(data))
    assert result.status == "skipped" and "no dashboard" in result.detail


def _env_with(site) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PYTHONPATH"] = str(site)
    return env


def test_plugins_load_in_stable_order_and_broken_ones_are_reported(tmp_path):
    site = tmp_path / "site"
    install(site, "acme-checks", {"acme": "acme_checks"}, {"acme_checks": GOOD})
    install(site, "broken-checks", {"broken": "broken_checks"}, {"broken_checks": BROKEN_IMPORT})
    listed = run_rldoctor("list", env=_env_with(site))
    assert listed.code == 0, listed
    lines = [line.split()[0] for line in listed.stdout.splitlines()[2:]]
    builtins = [c.code for c in builtin_checks()]
    assert lines == builtins + ["ACME001"]
    assert "acme-checks[acme]" in listed.stdout
    assert "broken-checks[broken]" in listed.stderr and "a_module_that_does_not_exist" in listed.stderr

    checked = run_rldoctor("check", "--from", str(FIXTURES / "healthy-3node.json"),
                           "--format", "json", env=_env_with(site))
    report = checked.json()
    assert checked.code == 0, checked  # plugin findings are warnings; default --fail-on fail
    assert {f["code"] for f in report["findings"]} == {"ACME001"}
    assert len(report["findings"]) == 3
    assert any("broken-checks[broken]" in note for note in report["notes"])
    origins = {c["code"]: c["origin"] for c in report["checks"]}
    assert origins["ACME001"] == "acme-checks[acme]" and origins["RLD101"] == "rldoctor"
    explained = run_rldoctor("explain", "ACME001", env=_env_with(site))
    assert explained.code == 0 and "acme-checks[acme]" in explained.stdout


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_plugin_that_raises_or_hangs_is_error_and_the_rest_report(tmp_path):
    site = install(tmp_path / "site", "bad-checks", {"bad": "bad_checks"}, {"bad_checks": MISBEHAVING})
    result = run_rldoctor("check", "--from", str(FIXTURES / "node-dead.json"), "--format", "json",
                          "--check-timeout", "1", env=_env_with(site), timeout=60)
    assert result.code == 1, result
    assert result.seconds < 10, result
    statuses = {c["code"]: (c["status"], c["detail"]) for c in result.json()["checks"]}
    assert statuses["BAD001"][0] == "error" and "plugin exploded" in statuses["BAD001"][1]
    assert statuses["BAD002"][0] == "error" and "timed out" in statuses["BAD002"][1]
    assert statuses["RLD101"][0] == "fail"  # the real finding still reported
    assert {f["code"] for f in result.json()["findings"]} == {"RLD101"}
    assert result.json()["summary"]["status"] == "error"


def test_plugin_cannot_take_a_builtin_code(tmp_path):
    clash = GOOD.replace("ACME001", "RLD101")
    site = install(tmp_path / "site", "clash-checks", {"clash": "clash_checks"}, {"clash_checks": clash})
    listed = run_rldoctor("list", env=_env_with(site))
    assert "RLD101 is already taken" in listed.stderr
    # the built-in keeps its code:
    assert [line for line in listed.stdout.splitlines() if line.startswith("RLD101")][0].split()[3] == "rldoctor"


def test_the_error_table_is_generated_from_the_checks():
    """The table lives in docs/checks.md (the README links to it) and equals the generator's."""
    from conftest import ROOT
    from rldoctor.engine.docs import PAGE, replace_block

    assert PAGE == "docs/checks.md"
    page = (ROOT / PAGE).read_text()
    assert replace_block(page) == page, f"run: python -m rldoctor.engine.docs --write {PAGE}"
    assert "docs/checks.md" in (ROOT / "README.md").read_text()  # a user finds it


def _cut(cell: str) -> str | None:
    """Why a table cell is not a whole sentence, or None when it is one."""
    import re

    text = cell.replace("\\|", "|")
    if text.count("`") % 2:
        return "unbalanced backticks"
    outside = re.sub(r"`[^`]*`", "``", text)  # quotes and parentheses inside code do not count
    if outside.count('"') % 2:
        return "unbalanced quotes"
    if outside.count("(") != outside.count(")"):
        return "unbalanced parentheses"
    if not re.search(r"[.!?][\"')`]*$", text):
        return "no terminal punctuation"
    return None


def test_the_error_table_cells_are_whole_sentences():
    from conftest import ROOT
    from rldoctor.engine.docs import BEGIN, END, PAGE

    readme = (ROOT / PAGE).read_text()  # docs/checks.md, linked from the README
    table = readme[readme.index(BEGIN) + len(BEGIN):readme.index(END)].strip().splitlines()[2:]
    assert len(table) == len(builtin_checks())
    import re

    for row in table:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        code, _, finds, symptom, fix = cells
        for column, cell in (("finds", finds), ("symptom", symptom), ("first fix", fix)):
            assert _cut(cell) is None, f"{code} {column}: {_cut(cell)}: {cell}"


def test_a_cut_cell_is_caught_and_the_first_sentence_keeps_quoted_messages_whole():
    from rldoctor.engine.docs import _first_sentence

    assert _cut('The raylet logs "...') == "unbalanced quotes"
    assert _cut("`ObjectStoreFullError: Failed to put object ...") == "unbalanced backticks"
    assert _cut("Fewer workers (see RLD403.") == "unbalanced parentheses"
    assert _cut("Enlarge /dev/shm") == "no terminal punctuation"
    assert _cut('It printed "Token authentication is disabled." when it started.') is None
    symptom = ('The raylet logs "... is over 95% full, available space: ...; capacity: .... '
               'Object creation will fail if spilling is required."; tasks fail. Then more.')
    assert _first_sentence(symptom) == symptom[:symptom.index(" Then")]
    assert _first_sentence("Use `ray.init()`. Then go.") == "Use `ray.init()`."
    assert _first_sentence("Keep it small (e.g. 10 MiB). Then go.") == "Keep it small (e.g. 10 MiB)."
    assert _first_sentence("Raise it, e.g. to 64. Then go.") == "Raise it, e.g. to 64."
    assert _first_sentence("A | B. C.") == "A \\| B."


def test_one_way_to_make_a_finding_of_a_severity():
    import pytest

    from rldoctor.model import Severity
    from rldoctor.registry import fail, finding, info, warn

    for label, helper in (("info", info), ("warn", warn), ("fail", fail)):
        by_label = finding(label, "node:a", "seen", {"x": 1}, "do")
        by_level = finding(Severity.parse(label), "node:a", "seen", {"x": 1}, "do")
        assert by_label == by_level == helper("node:a", "seen", {"x": 1}, "do")
        assert by_label.severity.label == label and by_label.code == ""
    with pytest.raises(KeyError):
        finding("severe", "node:a", "seen")
