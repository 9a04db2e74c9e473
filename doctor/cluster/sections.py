"""The collector contract: a snapshot section declares its name and what it needs, and is found.

A module of this folder declares each section it fills with `@section`:

    @section("demands", needs=("cluster",))
    def demands_section(ctx):          # ctx: Context (the connection, budget, fleet, document)
        return collect(ctx.conn, ctx.budget, ctx.doc.get("cluster"))

`needs` are the sections that must be over before this one starts (their values are in
`ctx.doc`, or for a step in `ctx.value(name)`); a section in `requires` must also have come back,
or this one is not run and says which one it waited for. A section in `follows` is waited for
only when it is collected at all: a snapshot that asks for fewer sections (`needed_for`, the
preflight's) leaves it out without leaving this one out. A step (`keep=False`) is part of the
collection whose value feeds other sections, not the snapshot (the probe fleet's start, the
raylet pings). `record_of` names the section whose collector record this one shares (one probe
round fills `versions` and `hosts`). A section that runs `alone` starts before the sections that
become ready with it, and none starts while it runs: the probes' start is the longest path of
a snapshot, and threads beside it would only slow it down.

`found()` imports every module of the folder and keeps what they declare, like the checks
registry; `run(ctx, found())` starts each section as soon as what it needs is over, side by
side in threads, and a section that raises costs its own entry only (`collectors.<name>`).
Standard library only; ships to the cluster.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

from rldoctor.errors import first_line


class Unavailable(Exception):
    """The data source is not there (for example no dashboard); not a failure of rldoctor."""


@dataclass(frozen=True)
class Section:
    name: str
    collect: Callable[["Context"], Any]
    needs: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    keep: bool = True
    record_of: str | None = None
    alone: bool = False
    follows: tuple[str, ...] = ()

    @property
    def pulls(self) -> tuple[str, ...]:
        """The sections this one cannot run without."""
        return tuple(dict.fromkeys(self.needs + self.requires + (
            (self.record_of,) if self.record_of else ())))

    @property
    def after(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.pulls + self.follows))


def section(name: str, *, needs: Iterable[str] = (), requires: Iterable[str] = (),
            keep: bool = True, record_of: str | None = None, alone: bool = False,
            follows: Iterable[str] = ()):
    """Declare the decorated `(ctx) -> value` as the collector of snapshot section `name`."""

    def wrap(func):
        func.__rldoctor_section__ = Section(name, func, tuple(needs), tuple(requires), keep,
                                            record_of, alone, tuple(follows))
        return func

    return wrap


@dataclass
class Context:
    """What every section is given: the cluster connection, the shared deadline, the probe
    fleet, the document being filled, and the phase times (`timing`)."""

    conn: Any
    budget: Any
    fleet: Any
    doc: dict
    timing: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)  # what each section returned, steps included
    records: dict = field(default_factory=dict)  # every section's collector record, steps included

    def value(self, name: str) -> Any:
        return self.values.get(name)

    def record(self, name: str) -> dict:
        return self.records.get(name) or {}


PACKAGE = "rldoctor.cluster"


@functools.lru_cache(maxsize=None)
def found(package: str = PACKAGE) -> dict[str, Section]:
    """Every section declared in the modules of `package`, by name (declared once each)."""
    pkg = importlib.import_module(package)
    out: dict[str, Section] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package}.{info.name}")
        for value in vars(module).values():
            declared = getattr(value, "__rldoctor_section__", None)
            if declared is None or out.get(declared.name) is declared:
                continue
            if declared.name in out:
                raise ValueError(f"section {declared.name!r} is declared twice "
                                 f"({out[declared.name].collect.__module__}, {module.__name__})")
            out[declared.name] = declared
    return ordered(out)


def ordered(sections: dict[str, Section]) -> dict[str, Section]:
    """`sections` in an order where each comes after what it needs; a need that no section
    declares, or a cycle, is a ValueError that names it."""
    for s in sections.values():
        unknown = [n for n in s.after if n not in sections]
        if unknown:
            raise ValueError(f"section {s.name!r} needs {', '.join(map(repr, unknown))}, "
                             "which no section declares")
    done: dict[str, Section] = {}
    while len(done) < len(sections):
        ready = [s for s in sections.values() if s.name not in done
                 and all(n in done for n in s.after)]
        if not ready:
            raise ValueError("sections that need each other: " + ", ".join(
                sorted(n for n in sections if n not in done)))
        for s in ready:
            done[s.name] = s
    return done


def needed_for(sections: dict[str, Section], wanted: Iterable[str]) -> dict[str, Section]:
    """The sections `wanted` and every one they cannot run without, in order; a `follows` on a
    section left out is dropped. A wanted name that no section declares is a ValueError."""
    keep: set[str] = set()
    todo = list(wanted)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        if name not in sections:
            raise ValueError(f"no section {name!r} to collect")
        keep.add(name)
        todo.extend(sections[name].pulls)
    return ordered({n: replace(s, follows=tuple(f for f in s.follows if f in keep))
                    for n, s in sections.items() if n in keep})


def _collected(ctx: Context, s: Section) -> dict:
    """Run `s` (its value into ctx.values, and the document when kept): its collector record."""
    waited = [n for n in s.requires if ctx.record(n).get("status") != "ok"]
    if waited:
        first = ctx.record(waited[0])
        why = first.get("error") or first.get("reason") or first.get("status") or "not collected"
        return {"status": "unavailable",
                "reason": f"needs '{waited[0]}', which did not come back ({why})"}
    shared = dict(ctx.record(s.record_of)) if s.record_of else None
    if shared is not None and shared.get("status") != "ok":
        return shared
    try:
        value = s.collect(ctx)
    except Unavailable as exc:
        return {"status": "unavailable", "reason": str(exc)}
    except Exception as exc:  # a collector that breaks costs its section only
        return {"status": "error", "error": first_line(exc)}
    ctx.values[s.name] = value
    if s.keep:
        ctx.doc[s.name] = value
    return shared if shared is not None else {"status": "ok"}


def _run_one(ctx: Context, s: Section) -> None:
    from rldoctor.cluster import bounded

    started = time.perf_counter()
    record = _collected(ctx, s)
    if s.record_of is None:
        record["duration_s"] = round(time.perf_counter() - started, 3)
        cut = bounded.take(s.name)  # the reads that came back full (bounded.listed)
        if cut:
            record["truncated"] = cut
    ctx.records[s.name] = record
    if s.keep:
        ctx.doc["collectors"][s.name] = record
    if ctx.budget is not None:  # when each section was over, for the phases of a run
        ctx.timing.setdefault("sections_ended_s", {})[s.name] = ctx.budget.elapsed()


def run(ctx: Context, sections: dict[str, Section], workers: int = 8) -> None:
    """Fill `ctx.doc` with every section of `sections`, each started once what it needs is
    over, side by side in up to `workers` threads."""
    ctx.doc.setdefault("collectors", {})
    pending = dict(ordered(sections))
    running: dict = {}
    over: set[str] = set()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rldoctor-section") as pool:
        while pending or running:
            ready = [s for s in pending.values() if all(n in over for n in s.after)]
            if not any(sections[n].alone for n in running.values()):
                for s in [s for s in ready if s.alone] or ready:
                    running[pool.submit(_run_one, ctx, s)] = s.name
                    del pending[s.name]
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in finished:
                future.result()
                over.add(running.pop(future))
