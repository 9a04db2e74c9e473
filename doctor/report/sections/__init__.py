"""Report sections, declared and found: one module of this package per section of the report,
holding its builder and how each output format draws it. A module here is found and run like a
collector section (rldoctor.cluster.sections); nothing else to edit.

    training.py   the Training part: the RLlib trainings running on the cluster

A section is declared with `@report_section(name, table=..., markdown=...)` on its builder
`(snapshot, report) -> value`, None when the report has no such part. Its value is kept in
`Report.parts[name]`, the JSON report carries it as the top-level field `name` (through `json`,
the value itself by default), the table and Markdown reports draw its lines before the
findings, sections in `order`.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

PACKAGE = "rldoctor.report.sections"


@dataclass(frozen=True)
class ReportSection:
    name: str  # the key in Report.parts and the JSON report's top-level field
    build: Callable[[Any, Any], Any]  # (snapshot, report) -> value, None: not in this report
    table: Callable[[Any], list[str]]  # the lines of the table (text) report
    markdown: Callable[[Any, Callable[[str], str]], list[str]]  # lines; the callable makes a text inert
    json: Callable[[Any], Any] | None = None  # the JSON field's value; None: the value itself
    order: int = 100  # where it stands among the sections (the Training part: 20)

    def to_json(self, value: Any) -> Any:
        return value if self.json is None else self.json(value)


def report_section(name: str, *, table: Callable, markdown: Callable, json: Callable | None = None,
                   order: int = 100):
    """Declare the decorated `(snapshot, report) -> value` as the builder of report section `name`."""

    def wrap(func):
        func.__rldoctor_report_section__ = ReportSection(name, func, table, markdown, json, order)
        return func

    return wrap


@functools.lru_cache(maxsize=None)
def found(package: str = PACKAGE) -> tuple[ReportSection, ...]:
    """Every report section declared in the modules of `package`, in their order (each name
    declared once)."""
    pkg = importlib.import_module(package)
    out: dict[str, ReportSection] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package}.{info.name}")
        for value in vars(module).values():
            declared = getattr(value, "__rldoctor_report_section__", None)
            if declared is None or out.get(declared.name) is declared:
                continue
            if declared.name in out:
                raise ValueError(f"report section {declared.name!r} is declared twice "
                                 f"({out[declared.name].build.__module__}, {module.__name__})")
            out[declared.name] = declared
    return tuple(sorted(out.values(), key=lambda s: (s.order, s.name)))
