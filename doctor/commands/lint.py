"""`rldoctor lint PATH ...`: collect, run the `code` checks, render, and pick the exit code.

Exit codes (DESIGN.md): 0 nothing at or above --fail-on; 1 findings at or above
it, or a check errored; 2 usage error; 3 an input could not be linted
(missing, unreadable, binary, too large, a syntax error, a YAML bomb), when
nothing reached --fail-on. Every input problem is one line of the report and,
on exit 3, one line on stderr.
"""

from __future__ import annotations

import sys

from rldoctor.errors import EXIT_UNDIAGNOSABLE, UsageError
from rldoctor.model import Report, Severity
from rldoctor.report.render import RENDERERS

# lint's own text, then every report renderer but the cluster table (the text is lint's table)
FORMATS = ("text",) + tuple(f for f in RENDERERS if f != "table")


def _problem_lines(doc: dict) -> list[dict]:
    return [f for f in doc["lint"]["files"] if f.get("status") != "ok"]


def diagnose(paths: list[str]) -> tuple[Report, list[dict], dict]:
    """(report, inputs that were not linted, the lint document) for `paths`."""
    from rldoctor.lint.document import lint_document
    from rldoctor.registry import load_registry
    from rldoctor.runner import run_checks
    from rldoctor.snapshot import validate

    doc = lint_document(paths)
    registry = load_registry()
    results = run_checks(registry.select(lint=True), validate(doc, "lint"))
    problems = _problem_lines(doc)
    notes = list(registry.problems)
    from rldoctor.lint.ray_table import note

    notes += [n for n in [note(doc["lint"].get("ray_build") or {})] if n]
    for p in problems:
        where = p["path"] + (f":{p['line']}" if p.get("line") else "")
        notes.append(f"not linted: {where}: {p['message']}")
    source = dict(doc["source"])
    source["linted"] = len(doc["lint"]["files"]) - len(problems)
    return Report(results=results, source=source, notes=notes), problems, doc


def render(report: Report, problems: list[dict], fmt: str) -> str:
    if fmt == "text":
        from rldoctor.report.render.lint_text import render_lint_text

        return render_lint_text(report, problems)
    return RENDERERS[fmt](report)


def exit_code(report: Report, problems: list[dict], fail_on: str) -> int:
    code = report.exit_code(Severity.parse(fail_on))
    if code == 0 and problems:
        return EXIT_UNDIAGNOSABLE
    return code


def _say(text: str) -> None:
    sys.stderr.write(f"rldoctor: {text}\n")


def run_lint(paths: list[str], fmt: str, fail_on: str, diff: bool, fix: bool,
             ignores=(), config: str | None = None) -> int:
    from rldoctor import muting
    from rldoctor.output import write_text
    from rldoctor.registry import load_registry

    if diff and fix:
        raise UsageError("--diff and --fix are exclusive: --diff shows the fixes, --fix applies them")
    mutes, mute_notes = muting.load(ignores, config, load_registry())  # a bad file: exit 2

    def diagnose_muted():
        report, problems, doc = diagnose(paths)
        muting.apply(report, mutes, mute_notes)
        return report, problems, doc

    report, problems, doc = diagnose_muted()
    records = {f["path"]: f for f in doc["lint"]["files"]}
    if diff or fix:
        from rldoctor.lint import fixes

        plans = fixes.plans(report, records)
        if diff:
            text, count = fixes.unified_diff(plans)
            write_text(text, None)
            left = len(report.active_findings) - sum(1 for f in report.active_findings
                                                     if f.evidence.get("edits"))
            _say(f"{count} mechanical fix(es) in {len(plans)} file(s); `--fix` applies them; "
                 f"{left} finding(s) need judgement and are not rewritten")
            return exit_code(report, problems, fail_on)
        count, files = fixes.apply_fixes(plans)
        _say(f"applied {count} mechanical fix(es) in {files} file(s); what is left needs judgement:")
        report, problems, doc = diagnose_muted()
    write_text(render(report, problems, fmt), None)
    code = exit_code(report, problems, fail_on)
    if code == EXIT_UNDIAGNOSABLE:
        listed = "; ".join(f"{p['path']} ({p['message']})" for p in problems[:3])
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        _say(f"{len(problems)} input(s) could not be linted: {listed}{more}")
    return code
