"""What the lint checks share: the files of the `lint` section, locations and findings."""

from __future__ import annotations

from rldoctor.engine.registry import finding as make_finding
from rldoctor.model import Finding


def lint_files(snap, kinds: tuple[str, ...]) -> list[dict]:
    """The files of the given kinds that were read and parsed."""
    return [f for f in (snap["lint"].get("files") or [])
            if f.get("status") == "ok" and f.get("kind") in kinds]


def location(record: dict, line: int, column0: int) -> dict:
    """`{path, line, column}` (column from 1); notebooks also get `cell`, lines within it."""
    where = {"path": record["path"], "line": int(line), "column": int(column0) + 1}
    for cell in record.get("cells") or []:
        if cell["first_line"] <= line < cell["first_line"] + cell["lines"]:
            where.update(cell=cell["cell"], line=line - cell["first_line"] + 1)
            break
    return where


def finding(record: dict, severity: str, line: int, column0: int, message: str, fix: str,
            evidence: dict) -> Finding:
    where = location(record, line, column0)
    subject = f"file:{where['path']}:{where['line']}"
    if "cell" in where:
        subject = f"file:{where['path']}:cell {where['cell']}:{where['line']}"
    out = make_finding(severity, subject, message, evidence, fix)
    out.location = where
    out.rule = evidence.get("row")  # a table row's stable id: RLD801/<row>
    return out


def sort_key(f: Finding) -> tuple:
    where = getattr(f, "location", None) or {}
    return (where.get("path", ""), where.get("cell", 0), where.get("line", 0),
            where.get("column", 0), f.code)


def ray_version(snap) -> str:
    """The version of the Ray the lint reader read its names from."""
    return (snap["lint"].get("ray_build") or {}).get("version", "unknown")
