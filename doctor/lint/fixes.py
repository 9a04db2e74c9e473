"""`--diff` and `--fix`: the mechanical renames from RLD801 findings, shown or applied.

A finding of a row marked mechanical carries `evidence["edits"]`: spans of the
joined source with the old token and the new one. Only the reported lines
change: an edit on another line than its finding's is dropped. An edit is
applied only if the text at its span still holds exactly that old token, and
never when it overlaps another edit; anything else is left as it is.
Notebooks are edited cell by cell and written back in the file's own JSON
layout (its indent, key order and escaping), so only the edited source lines
change; a notebook whose layout cannot be reproduced is edited in its text, one
JSON string at a time, or left alone. `--diff` is the unified diff of exactly
the text `--fix` writes. YAML is never rewritten.
"""

from __future__ import annotations

import difflib
import json
import os
import stat
from dataclasses import dataclass, field

from rldoctor.errors import UsageError
from rldoctor.lint.notebook import cell_sources


@dataclass
class FilePlan:
    path: str
    kind: str
    cells: list[dict] = field(default_factory=list)  # notebooks: the joined-source map
    edits: list[dict] = field(default_factory=list)


def _reported_line(location: dict, cells: list[dict]) -> int:
    """The line of the joined source a finding is reported on (notebooks report within a cell)."""
    if "cell" in location:
        cell = next((c for c in cells if c["cell"] == location["cell"]), None)
        if cell is not None:
            return cell["first_line"] + location["line"] - 1
    return location["line"]


def plans(report, documents: dict[str, dict]) -> list[FilePlan]:
    """One plan per file that has mechanical edits, in path order."""
    by_path: dict[str, FilePlan] = {}
    for f in report.active_findings:  # a muted finding was accepted as it is
        edits = (f.evidence or {}).get("edits") or []
        if not edits or not f.location:
            continue
        path = f.location["path"]
        record = documents.get(path) or {}
        plan = by_path.setdefault(path, FilePlan(path, record.get("kind", "python"),
                                                 record.get("cells") or []))
        line = _reported_line(f.location, plan.cells)
        for edit in edits:
            if edit["line"] == edit["end_line"] == line and edit not in plan.edits:
                plan.edits.append(edit)
    return [by_path[p] for p in sorted(by_path) if by_path[p].edits]


def _apply(lines: list[str], edits: list[dict], offset: int = 1) -> tuple[list[str], int]:
    """Apply single-line edits (line numbers counted from `offset`); returns (lines, applied)."""
    lines = list(lines)
    applied = 0
    taken: dict[int, list[tuple[int, int]]] = {}
    for edit in sorted(edits, key=lambda e: (e["line"], e["col"]), reverse=True):
        if edit["line"] != edit["end_line"]:
            continue
        index = edit["line"] - offset
        if not 0 <= index < len(lines):
            continue
        text = lines[index]
        start, end = edit["col"], edit["end_col"]
        if any(start < e and s < end for s, e in taken.get(index, [])):
            continue
        segment = text[start:end]
        if segment.count(edit["old"]) != 1:
            continue
        lines[index] = text[:start] + segment.replace(edit["old"], edit["new"]) + text[end:]
        taken.setdefault(index, []).append((start, end))
        applied += 1
    return lines, applied


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return handle.read()
    except UnicodeDecodeError:  # a PEP 263 source in another encoding: linted, not rewritten
        raise UsageError(f"{path}: not UTF-8 (its coding line names another encoding): --fix "
                         "and --diff rewrite UTF-8 files only; apply its fixes by hand") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read for --fix: {exc.strerror or exc}") from None


def _python_result(plan: FilePlan) -> tuple[str, str, int]:
    before = _read(plan.path)
    lines = before.splitlines(keepends=True)
    after_lines, applied = _apply(lines, plan.edits)
    return before, "".join(after_lines), applied


_LAYOUTS = [(indent, sort_keys, ascii_only) for indent in (1, 2, 4, None) for sort_keys in (True, False)
            for ascii_only in (False, True)]


def _layout(text: str, document: dict) -> tuple | None:
    """The json.dumps settings (and line end) that write `document` back as exactly `text`."""
    for indent, sort_keys, ascii_only in _LAYOUTS:
        dumped = json.dumps(document, indent=indent, sort_keys=sort_keys, ensure_ascii=ascii_only)
        for end in ("\n", ""):
            if dumped + end == text:
                return indent, sort_keys, ascii_only, end
    return None


def _in_text(before: str, changed: list[tuple[int, list[str], list[str]]]) -> str | None:
    """Replace each edited source line's JSON string in the file's own text, or None."""
    after = before
    for _, old_lines, new_lines in changed:
        for old, new in zip(old_lines, new_lines):
            if old == new:
                continue
            for ascii_only in (False, True):
                old_json = json.dumps(old, ensure_ascii=ascii_only)
                if after.count(old_json) == 1:
                    after = after.replace(old_json, json.dumps(new, ensure_ascii=ascii_only))
                    break
            else:
                return None
    return after


def _notebook_result(plan: FilePlan) -> tuple[str, str, int, list[tuple[int, list[str], list[str]]]]:
    before = _read(plan.path)
    document = json.loads(before)
    layout = _layout(before, document)
    sources = cell_sources(document)
    applied = 0
    changed = []
    for cell in plan.cells:
        edits = [e for e in plan.edits if cell["first_line"] <= e["line"] < cell["first_line"] + cell["lines"]]
        if not edits:
            continue
        old_lines = sources.get(cell["cell"], [])
        new_lines, n = _apply(old_lines, edits, offset=cell["first_line"])
        if n:
            applied += n
            changed.append((cell["cell"], old_lines, new_lines))
            stored = document["cells"][cell["cell"] - 1].get("source")
            document["cells"][cell["cell"] - 1]["source"] = new_lines if isinstance(stored, list) \
                else "".join(new_lines)
    if not changed:
        return before, before, 0, []
    if layout is not None:
        indent, sort_keys, ascii_only, end = layout
        after = json.dumps(document, indent=indent, sort_keys=sort_keys, ensure_ascii=ascii_only) + end
    else:
        after = _in_text(before, changed)
        if after is None:  # neither way keeps the rest of the file as it is: leave it alone
            return before, before, 0, []
    return before, after, applied, changed


def unified_diff(plans_: list[FilePlan]) -> tuple[str, int]:
    """The diff of every plan, and how many edits it holds."""
    out, total = [], 0
    for plan in plans_:
        if plan.kind == "notebook":
            before, after, applied, _ = _notebook_result(plan)
        else:
            before, after, applied = _python_result(plan)
        out += difflib.unified_diff(before.splitlines(keepends=True),
                                    after.splitlines(keepends=True), plan.path, plan.path)
        total += applied
    text = "".join(line if line.endswith("\n") else line + "\n" for line in out)
    return text, total


def _write(path: str, text: str) -> None:
    """Rewrite `path` by temp file and rename (rldoctor.safe_write), keeping its mode."""
    from rldoctor.safe_write import Pending

    mode = os.stat(path, follow_symlinks=False).st_mode & 0o7777
    pending = Pending(path, "", UsageError)
    try:
        with open(pending.temp, "w", encoding="utf-8", newline="") as out:
            out.write(text)
    except BaseException:
        pending.abandon()
        raise
    pending.commit(mode)


def refusal(path: str) -> str | None:
    """Why `--fix` leaves `path` alone, in one line; None when it may rewrite it: never a
    symbolic link (rewriting would replace the link by a copy, or write through it), never
    a file its owner made read-only or that this user may not write."""
    try:
        found = os.lstat(path)
    except OSError as exc:
        return f"{path}: not rewritten: {exc.strerror or exc}"
    if stat.S_ISLNK(found.st_mode):
        return (f"{path}: not rewritten: it is a symbolic link (to {os.path.realpath(path)}); "
                "run --fix on the file itself")
    if not stat.S_ISREG(found.st_mode):
        return f"{path}: not rewritten: not a regular file"
    if not found.st_mode & 0o222 or not os.access(path, os.W_OK):
        return f"{path}: not rewritten: the file is read-only (make it writable to fix it)"
    if not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK):
        return f"{path}: not rewritten: its folder is read-only"
    return None


def apply_fixes(plans_: list[FilePlan]) -> tuple[int, int, list[str]]:
    """Rewrite the files in place; returns (edits applied, files changed, one line per file
    refused: a link, a read-only file)."""
    total = files = 0
    refused = []
    for plan in plans_:
        if plan.kind == "notebook":
            _, after, applied, _ = _notebook_result(plan)
        else:
            _, after, applied = _python_result(plan)
        if applied:
            why = refusal(plan.path)
            if why:
                refused.append(why)
                continue
            try:
                _write(plan.path, after)
            except OSError as exc:
                raise UsageError(f"{plan.path}: cannot write the fixes: {exc.strerror or exc}") from None
            total += applied
            files += 1
    return total, files, refused
