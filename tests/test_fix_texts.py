"""A finding's fix is written once: in its check's `fixes` table (rldoctor.engine.registry), which
the findings carry filled in and `explain` prints. No check docstring has a Fix section of its
own, no fix is a literal or an f-string at the call that makes the finding, and every fix of
every recorded fixture's report is one of its check's cases (or several joined)."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

import golden
from rldoctor.engine.registry import builtin_checks, check, fix_pattern, parse_doc, warn

ROOT = Path(__file__).resolve().parent.parent
CHECK_DIRS = (ROOT / "checks", ROOT / "doctor" / "lint" / "rules")
FINDING_MAKERS = {"warn": 3, "fail": 3, "info": 3, "finding": 4}  # name -> index of `fix`


def test_every_builtin_check_says_its_fix_once_in_its_table():
    for c in builtin_checks():
        assert c.fixes, f"{c.code} declares no fixes"
        assert not parse_doc(c.func.__doc__ or "").get("Fix"), f"{c.code}: a Fix section besides `fixes`"
        assert c.doc["Fix"], c.code  # explain's Fix, written from the table
        for case, template in c.fixes.items():  # a template (a literal brace doubled)
            list(string.Formatter().parse(template))


def _fix_arguments(tree: ast.AST):
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        name = getattr(call.func, "id", None) or getattr(call.func, "attr", None)
        if name not in FINDING_MAKERS:
            continue
        args = [k.value for k in call.keywords if k.arg == "fix"]
        if len(call.args) > FINDING_MAKERS[name]:
            args.append(call.args[FINDING_MAKERS[name]])
        yield from ((call, a) for a in args)


def _stray_fix_texts(source: str) -> list[str]:
    """Fix prose outside a table: a literal or f-string given as a finding's fix, or a
    module-level `..._FIX` text (the tables are dicts)."""
    tree = ast.parse(source)
    found = [f"line {a.lineno}: a literal fix" for _, a in _fix_arguments(tree)
             if isinstance(a, ast.JoinedStr) or (isinstance(a, ast.Constant) and a.value)]
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Constant, ast.JoinedStr, ast.BinOp)):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.upper().endswith("FIX"):
                    found.append(f"line {node.lineno}: {target.id}, a fix text outside the table")
    return found


def test_no_check_module_writes_a_fix_outside_its_table():
    stray = {}
    for folder in CHECK_DIRS:
        for path in sorted(folder.rglob("*.py")):
            problems = _stray_fix_texts(path.read_text())
            if problems:
                stray[str(path.relative_to(ROOT))] = problems
    assert stray == {}


def said_by_ray_lines(code: str) -> dict[str, str]:
    """The fixes a finding of `code` may carry from Ray's lines it quotes: the catalogue's
    (rldoctor.raylog.catalogue, each written once there), put before the check's own."""
    from rldoctor.raylog import catalogue

    texts = [e.fix for e in catalogue.ENTRIES if e.code == code]
    if code == "RLD101":
        texts += [fix for _, _, fix in catalogue.NODE_DEATH_FIXES]
    return {f"ray line {i}": t.replace("{", "{{").replace("}", "}}") for i, t in enumerate(texts)}


def test_every_fix_of_the_fixtures_reports_is_one_of_its_checks_cases():
    by_code = {c.code: c for c in builtin_checks()}
    seen = 0
    for snapshot in golden.snapshots():
        for result in golden.report_of(snapshot).results:
            table = {**said_by_ray_lines(result.code), **by_code[result.code].fixes}
            for f in result.findings:
                if f.fix:
                    seen += 1
                    assert fix_pattern(table).fullmatch(f.fix), (snapshot.name, result.code, f.fix)
    assert seen > 20


def test_the_guards_fire():
    # a literal fix, an f-string fix and a module-level fix text are each caught
    source = ('X_FIX = ("do this")\n'
              'def c(snap, params):\n'
              '    yield warn("cluster", "m", {}, "restart it")\n'
              '    yield fail("cluster", "m", {}, fix=f"restart {snap}")\n')
    assert len(_stray_fix_texts(source)) == 3
    # a fix the table does not hold does not match it
    table = {"restart": "Restart node {node}: `ray start ...`.", "free": "Free space on {node}."}
    assert fix_pattern(table).fullmatch("Restart node n1: `ray start ...`. Free space on n1.")
    assert not fix_pattern(table).fullmatch("Reboot the machine.")
    # a check that says its fix twice is refused at its declaration
    with pytest.raises(ValueError, match="said once"):
        @check("ZZZ001", "twice", area="x", fixes={"one": "Do it."})
        def twice(snap, params):
            """Summary.

            Fix:
                Do it.
            """
            yield warn("cluster", "m")
