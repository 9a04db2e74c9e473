"""Output formats, declared and found: a renderer `Report -> str` in a module of
rldoctor.report.render declares its format with `@output_format(name, ...)`; the commands'
--format choices are what is found (rldoctor.report.render.RENDERERS, LINT_RENDERERS), so a new
format is one module there, nothing else to edit."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

PACKAGE = "rldoctor.report.render"


@dataclass(frozen=True)
class OutputFormat:
    name: str
    render: Callable  # Report -> str
    aliases: tuple[str, ...] = ()  # more --format names for it (`text` for check's table)
    reports: bool = True  # a choice of check, smoke-train, collect and preflight
    lint: bool = True  # a choice of lint
    order: int = 100  # where it stands among the choices (the human format first)


def output_format(name: str, *, aliases: tuple[str, ...] = (), reports: bool = True,
                  lint: bool = True, order: int = 100):
    """Declare the decorated `Report -> str` as the renderer of output format `name`."""

    def wrap(func):
        func.__rldoctor_format__ = OutputFormat(name, func, tuple(aliases), reports, lint, order)
        return func

    return wrap


@functools.lru_cache(maxsize=None)
def found(package: str = PACKAGE) -> tuple[OutputFormat, ...]:
    """Every format declared in the modules of `package`, in their order."""
    pkg = importlib.import_module(package)
    out: list[OutputFormat] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package}.{info.name}")
        out += [v.__rldoctor_format__ for v in vars(module).values()
                if getattr(v, "__rldoctor_format__", None) is not None and v.__module__ == module.__name__]
    return tuple(sorted(out, key=lambda f: (f.order, f.name)))


def renderers(formats: tuple[OutputFormat, ...], *, lint: bool = False) -> dict[str, Callable]:
    """{--format name: renderer} of the reports' commands (or of lint): each format's name in
    order, then their aliases; two formats of one name are a ValueError."""
    chosen = [f for f in formats if (f.lint if lint else f.reports)]
    out: dict[str, Callable] = {}
    for name, render in [(f.name, f.render) for f in chosen] + [(a, f.render) for f in chosen for a in f.aliases]:
        if name in out:
            raise ValueError(f"output format {name!r} is declared twice")
        out[name] = render
    return out
