"""`rldoctor lint PATH ...`: read the sources and run the `code` checks (rldoctor.engine.pipeline),
render, and pick the exit code.

Exit codes (docs/architecture.md): 0 nothing at or above --fail-on; 1 findings at or above
it, or a check errored; 2 usage error; 3 an input could not be linted
(missing, unreadable, binary, too large, a syntax error, a YAML bomb), when
nothing reached --fail-on. Every input problem is one line of the report and,
on exit 3, one line on stderr.
"""

from __future__ import annotations

import sys

from rldoctor.errors import EXIT_UNDIAGNOSABLE, UsageError
from rldoctor.model import Report, Severity


def exit_code(report: Report, problems: list[dict], fail_on: str) -> int:
    code = report.exit_code(Severity.parse(fail_on))
    if code == 0 and problems:
        return EXIT_UNDIAGNOSABLE
    return code


def _say(text: str) -> None:
    sys.stderr.write(f"rldoctor: {text}\n")


def run_lint(paths: list[str], fmt: str, fail_on: str, diff: bool, fix: bool,
             ignores=(), config: str | None = None, only=()) -> int:
    from rldoctor.engine.pipeline import Diagnosis
    from rldoctor.output import write_text

    if diff and fix:
        raise UsageError("--diff and --fix are exclusive: --diff shows the fixes, --fix applies them")
    diagnosis = Diagnosis.from_options(only=only, ignores=ignores, config=config, lint=True)  # a bad file: exit 2
    report, problems, doc = diagnosis.lint(paths)
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
        count, files, refused = fixes.apply_fixes(plans)
        for line in refused:  # a link, a read-only file: left as it is, one line each
            _say(f"lint --fix: {line}")
        _say(f"applied {count} mechanical fix(es) in {files} file(s); what is left needs judgement:")
        report, problems, doc = diagnosis.lint(paths)
    from rldoctor.report.render import LINT_RENDERERS

    write_text(LINT_RENDERERS[fmt](report), None)
    if fmt in ("text", "table"):  # the JSON and Markdown reports carry these in their notes
        from rldoctor.report.render.lint_text import side_notes

        for note in side_notes(report):
            _say(note)
    code = exit_code(report, problems, fail_on)
    if code == EXIT_UNDIAGNOSABLE:
        listed = "; ".join(f"{p['path']} ({p['message']})" for p in problems[:3])
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        _say(f"{len(problems)} input(s) could not be linted: {listed}{more}")
    return code
