"""`rldoctor lint` in compiler style: one finding a line, sorted by path and line.

    path:line:col: RLD801 [fail] message (replacement)
    notebook.ipynb:cell 3:2:5: RLD801 [warn] message (replacement)
    path:line:col: error: why the file was not linted

Editors and CI log parsers jump to `path:line:col:`. The replacement in brackets
is the one written out for that line; `rldoctor explain CODE` says more.
"""

from __future__ import annotations

from rldoctor.model import Report
from rldoctor.install import NO_RAY_HERE
from rldoctor.report.render.formats import output_format
from rldoctor.report.render.text import mute_text
from rldoctor.words import shorten


def _where(location: dict) -> str:
    cell = f"cell {location['cell']}:" if location.get("cell") else ""
    return f"{location['path']}:{cell}{location['line']}:{location['column']}"


def _one_line(text: str, limit: int = 400) -> str:
    return shorten(text, limit)


def side_notes(report: Report) -> list[str]:
    """What the text format says on stderr, once each, not among the findings on stdout: what
    a rule could not do here (RLD802 without Ray), the shipped Ray table read instead of a
    Ray, the files of a walked folder that were not read (a FIFO), the names value flow did not
    follow (rldoctor.lint.value_flow)."""
    out = [f"{result.code}: {note.message}" for result in report.results for note in result.notes]
    out += [note for note in report.notes
            if note.startswith((NO_RAY_HERE, "skipped ", "not followed: "))]
    return list(dict.fromkeys(out))


@output_format("text", aliases=("table",), reports=False, order=0)
def render_lint_text(report: Report, problems: list[dict] | None = None) -> str:
    """The lint report; `problems` (default: the report's `not_linted`) are the inputs not linted."""
    problems = report.not_linted if problems is None else problems
    rows = []
    for f in report.findings:
        where = f.location or {"path": f.subject, "line": 0, "column": 0}
        replacement = (f.evidence or {}).get("replacement") or f.fix
        block = ""
        if "\n" in replacement:  # a YAML block to paste: under the line, indented
            tail = " (replace with the lines below)"
            block = "".join(f"\n    {line}" for line in replacement.splitlines())
        else:
            tail = f" ({_one_line(replacement, 240)})" if replacement else ""
        key = (where.get("path", ""), where.get("cell", 0), where.get("line", 0), where.get("column", 0), f.code)
        muted = f" [muted: {_one_line(mute_text(f), 200)}]" if f.muted else ""
        rule = f" [{f.label}]" if f.rule else ""  # what --only, --ignore and explain take
        rows.append((key, f"{_where(where)}: {f.code} [{f.severity.label}]{muted} "
                          f"{_one_line(f.message)}{tail}{rule}{block}"))
    for p in problems or []:
        line = p.get("line") or 0
        column = p.get("column") or 0
        where = p["path"] + (f":cell {p['cell']}" if p.get("cell") else "") + \
            (f":{line}:{column}" if line else "")
        rows.append(((p["path"], p.get("cell", 0), line, column, ""), f"{where}: error: {p['message']}"))
    out = [text for _, text in sorted(rows, key=lambda r: r[0])]
    for result in report.errored:
        out.append(f"rldoctor: {result.code} could not run: {result.detail}")
    counts = report.counts()
    files = report.source.get("files", 0)
    skipped = len(problems or [])
    summary = (f"{counts['fail']} fail, {counts['warn']} warn, {counts['info']} info"
               + (f" ({counts['muted']} more muted)" if counts["muted"] else "")
               + f" in {files} file(s)" + (f", {skipped} not linted" if skipped else ""))
    if report.findings:
        codes = sorted({f.code for f in report.findings})
        summary += f"; `rldoctor explain {codes[0]}` says more"
        rules = sorted({f.label for f in report.findings if f.rule})
        if rules:
            summary += f" (and `rldoctor explain {rules[0]}` of one rule)"
    out.append(summary)
    return "\n".join(out) + "\n"
