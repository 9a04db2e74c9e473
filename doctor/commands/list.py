"""`rldoctor list`: every check with its code, name, area, lifecycle, origin and what it finds."""

from __future__ import annotations

import textwrap


def list_checks() -> tuple[str, list[str]]:
    """(the table to print, the notes for stderr: plugins that failed to load, ...)."""
    from tabulate import tabulate

    from rldoctor.engine.registry import load_registry

    registry = load_registry()
    rows = [[c.code, c.name, c.area, c.origin, c.lifecycle,
             textwrap.shorten(c.summary, 70, placeholder=" ...")] for c in registry.checks]
    table = tabulate(rows, headers=["code", "name", "area", "origin", "lifecycle", "finds"],
                     tablefmt="simple")
    return table, [f"note: {problem}" for problem in registry.problems]


def list_rules(code: str | None = None) -> tuple[str, list[str]]:
    """The rules of the checks that have them (or of `code`), as `rldoctor list --rules` prints
    them: each with the CODE/RULE that --only, --ignore, rldoctor.toml and explain take."""
    from tabulate import tabulate

    from rldoctor.engine.registry import load_registry

    registry = load_registry()
    checks = [registry.selector(code, "--rules")[0]] if code else [c for c in registry.checks if c.rule_table]
    rows = [[f"{c.code}/{r.id}", r.severity, textwrap.shorten(r.summary, 90, placeholder=" ...")]
            for c in checks for r in c.rules.values()]
    if not rows:
        return (f"{checks[0].code} has no rules: it is selected and muted by its code alone" if code
                else "no check has rules: each is selected and muted by its code alone"), []
    table = tabulate(rows, headers=["rule", "severity", "usage: what Ray does with it"], tablefmt="simple")
    return table, [f"note: {problem}" for problem in registry.problems]
