"""`rldoctor list`: every check with its code, name, area, origin and what it finds."""

from __future__ import annotations

import textwrap


def list_checks() -> tuple[str, list[str]]:
    """(the table to print, the notes for stderr: plugins that failed to load, ...)."""
    from tabulate import tabulate

    from rldoctor.engine.registry import load_registry

    registry = load_registry()
    rows = [[c.code, c.name, c.area, c.origin, textwrap.shorten(c.summary, 70, placeholder=" ...")]
            for c in registry.checks]
    table = tabulate(rows, headers=["code", "name", "area", "origin", "finds"], tablefmt="simple")
    return table, [f"note: {problem}" for problem in registry.problems]
