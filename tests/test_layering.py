"""The arrows of the tree (README "Layout"): which folder may import which.

    doctor/node/      pickled by value onto the nodes: the standard library, ray (and what the
                      cluster's ray[rllib] brings, for the smoke trainer) and stdlib-only shared
                      modules (metric_numbers, words, raylog: the catalogue of Ray's lines),
                      nothing else of rldoctor
    doctor/cluster/, doctor/node/, doctor/job/   the cluster side (what the dashboard path
                      ships): of the rest of rldoctor only the stdlib-only SHARED modules below,
                      so never the checks, the reports, the diagnosis pipeline, the commands,
                      the snapshot reader or the bundle's writing side (its assembly, build,
                      archive and reader); of the bundle only its format (rldoctor.bundle,
                      .manifest) and its size cap (.writer: a member and `fit`, no file written)
    SHARED            each imports only the standard library and other SHARED modules (and ray
                      inside a function, which runs on the cluster side only)
    checks/           a check is a pure function of a snapshot: the standard library, the
                      checks' own helpers and the snapshot side (SNAPSHOT_SIDE), nothing else
    doctor/engine/    the pipeline: reports, the lint document, the snapshot; never a
                      collector, a command, the CLI, the watch or ray (checks are found by a
                      package scan, never imported by name)
    doctor/report/    no collector (nothing of cluster/, node/, job/, inputs/), no check, no
                      command, no pipeline
    the client        (everything outside cluster/, node/, job/) never imports ray at module
                      level: `rldoctor check --from`, `lint` and `explain` run without it
    no circles        no module imports (directly or through others) a module that imports
                      it back, function-level imports included; a package's modules may
                      import their own package (Python runs it first anyway)

Every import counts, function-level ones too (they run on the cluster just the same), read
from the syntax tree of every module of doctor/ and checks/. Every module a rule names must
exist (test_the_rules_name_only_modules_that_exist), and each rule is shown to fire on a
small tree with one wrong import per rule (test_the_checker_flags_an_import_against_the_arrows).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CLUSTER_SIDE = ("rldoctor.cluster", "rldoctor.node", "rldoctor.job")
# stdlib-only modules the nodes may import (they travel by value or in the shipped package)
NODE_SHARED = ("rldoctor.metric_numbers", "rldoctor.words", "rldoctor.raylog",
               "rldoctor.raylog.catalogue", "rldoctor.raylog.hits", "rldoctor.raylog.kinds",
               "rldoctor.raylog.lines")
# what the cluster's own ray[default,rllib] installs: the smoke trainer hosts RLlib
RAY_AND_ITS_OWN = ("ray", "gymnasium", "numpy", "torch")
# the only modules outside the cluster side that the cluster side may import (exact names):
# stdlib-only, shipped with it (tests/test_dashboard_units.py checks the zip holds no more)
SHARED = ("rldoctor", "rldoctor.auth_token", "rldoctor.errors", "rldoctor.redact",
          "rldoctor.snapshot_document", "rldoctor.node_state", "rldoctor.metric_numbers",
          "rldoctor.rllib_roles", "rldoctor.words",
          "rldoctor.bundle", "rldoctor.bundle.manifest", "rldoctor.bundle.writer",
          "rldoctor.raylog", "rldoctor.raylog.catalogue", "rldoctor.raylog.hits",
          "rldoctor.raylog.kinds", "rldoctor.raylog.lines")
# what a check may read besides the standard library and rldoctor.checks (exact names)
SNAPSHOT_SIDE = ("rldoctor", "rldoctor.snapshot", "rldoctor.node_state", "rldoctor.words",
                 "rldoctor.metric_numbers", "rldoctor.rllib_roles", "rldoctor.model",
                 "rldoctor.registry", "rldoctor.engine.registry", "rldoctor.failure_chains",
                 "rldoctor.worker_exits")
COLLECTORS = ("rldoctor.cluster", "rldoctor.node", "rldoctor.job", "rldoctor.inputs")
# what the pipeline never reaches (besides the collectors)
NOT_FOR_THE_ENGINE = ("rldoctor.commands", "rldoctor.cli", "rldoctor.watch", "rldoctor.dashboard",
                      "rldoctor.acquire", "rldoctor.checks")
NOT_FOR_A_REPORT = ("rldoctor.checks", "rldoctor.commands", "rldoctor.cli", "rldoctor.engine")
# Circles left in areas other work is changing now (lint, watch): each goes when its area is
# next touched, and this list with it (the test fails while a listed circle is gone)
KNOWN_CIRCLES = (
    ("rldoctor.lint.ray_modules", "rldoctor.lint.ray_table"),
    ("rldoctor.lint.rules._config_dicts", "rldoctor.lint.rules._rllib_api_usage"),
    ("rldoctor.watch.dashboard_rounds", "rldoctor.watch.rounds"),
)


def _within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def modules(root: Path) -> dict[str, Path]:
    """{module name: file} of the rldoctor package (doctor/) and rldoctor.checks (checks/)."""
    found = {}
    for top, package in (("doctor", "rldoctor"), ("checks", "rldoctor.checks")):
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root / top).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) for every import in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []

    def visit(node, top_level):
        for child in ast.iter_child_nodes(node):
            inner = top_level and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                         ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, top_level) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.rsplit(".", child.level - 1)[0] if child.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                found.append((base, child.lineno, top_level))
                found.extend((f"{base}.{a.name}", child.lineno, top_level) for a in child.names
                             if f"{base}.{a.name}" in known)
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), True)
    return found


def _resolved(imported: str, known: set[str]) -> str | None:
    """The module of rldoctor an import runs (`pkg.name` of `from pkg import name`: pkg)."""
    while imported and imported not in known:
        imported = imported.rpartition(".")[0]
    return imported or None


def _ancestor(package: str, name: str) -> bool:
    return name.startswith(package + ".")


def circles(root: Path = ROOT) -> list[tuple[str, ...]]:
    """Every set of modules that import each other round (strongly connected, more than one),
    every import counted, an import of one's own package not."""
    mods = modules(root)
    known = set(mods)
    edges = {name: sorted({m for imp, _, _ in imports(name, path, known)
                           if (m := _resolved(imp, known)) and m != name and not _ancestor(m, name)})
             for name, path in mods.items()}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(tuple(sorted(group)))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(mods) + 100))
    try:
        for name in sorted(mods):
            if name not in index:
                visit(name)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def violations(root: Path = ROOT) -> list[str]:
    mods = modules(root)
    known = set(mods)
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    wrong = []
    for name, path in sorted(mods.items()):
        where = f"{path.relative_to(root)}"
        for imported, line, top_level in imports(name, path, known):
            top = imported.split(".")[0]
            said = f"{where}:{line} imports {imported}"
            ours = top == "rldoctor"
            if _within(name, ("rldoctor.node",)):
                if ours:
                    if not _within(imported, ("rldoctor.node",) + NODE_SHARED) and imported != "rldoctor":
                        wrong.append(f"{said}: node code imports only the standard library, ray "
                                     f"and {', '.join(NODE_SHARED)}")
                elif top not in stdlib and top not in RAY_AND_ITS_OWN:
                    wrong.append(f"{said}: node code imports only the standard library and ray")
            if _within(name, CLUSTER_SIDE) and ours and not _within(imported, CLUSTER_SIDE) \
                    and imported not in SHARED:
                wrong.append(f"{said}: the cluster side imports of the rest only the stdlib-only "
                             f"shared modules (never checks, reports, pipeline, commands, the "
                             f"snapshot reader or the bundle's writing side)")
            if name in SHARED and (ours and imported not in SHARED or not ours and top not in stdlib
                                   and not (top == "ray" and not top_level)):
                wrong.append(f"{said}: a module the cluster side shares imports only the standard "
                             f"library and other shared modules (ray inside a function)")
            if _within(name, ("rldoctor.checks",)) and (
                    ours and not _within(imported, ("rldoctor.checks",)) and imported not in SNAPSHOT_SIDE
                    or not ours and top not in stdlib):
                wrong.append(f"{said}: a check reads the snapshot only (the standard library, "
                             f"rldoctor.checks and the snapshot side)")
            if _within(name, ("rldoctor.engine",)) and (
                    _within(imported, COLLECTORS + NOT_FOR_THE_ENGINE) or top == "ray"):
                wrong.append(f"{said}: the pipeline imports no collector, command, CLI, watch, "
                             f"check or ray")
            if _within(name, ("rldoctor.report",)) and (
                    _within(imported, COLLECTORS + NOT_FOR_A_REPORT) or top == "ray"):
                wrong.append(f"{said}: reports import no collector, check, command or pipeline")
            if not _within(name, CLUSTER_SIDE) and top == "ray" and top_level:
                wrong.append(f"{said}: a client module imports ray inside a function only")
    for group in circles(root):
        if group not in KNOWN_CIRCLES:
            wrong.append(f"{' <-> '.join(group)}: these modules import each other round")
    return wrong


def test_imports_follow_the_arrows():
    assert violations() == []


def test_the_rules_name_only_modules_that_exist():
    """A stale name in a rule guards nothing: every module a rule names is in the tree."""
    known = set(modules(ROOT))
    named = (CLUSTER_SIDE + NODE_SHARED + SHARED + SNAPSHOT_SIDE + COLLECTORS + NOT_FOR_THE_ENGINE
             + NOT_FOR_A_REPORT + tuple(m for group in KNOWN_CIRCLES for m in group))
    assert sorted(set(named) - known) == []


def test_the_known_circles_are_still_there():
    """A circle undone leaves the list: it never holds one that is gone."""
    assert set(KNOWN_CIRCLES) <= set(circles())


def test_the_checker_flags_an_import_against_the_arrows(tmp_path):
    """A tree with one wrong import per rule, and one right import per rule: exactly the
    wrong ones are flagged."""
    files = {
        "doctor/__init__.py": "",
        "doctor/metric_numbers.py": "import math\n",
        "doctor/words.py": "import json\n\ndef register():\n    import ray.cloudpickle\n",
        "doctor/errors.py": "from rldoctor.words import first_line\nfrom rldoctor.snapshot import x\n"
                            "import yaml\n",
        "doctor/node/__init__.py": "",
        "doctor/node/fine.py": "import os\nimport ray\nfrom rldoctor.metric_numbers import x\n",
        "doctor/node/bad.py": "def f():\n    from rldoctor.snapshot import Snapshot\n    import requests\n",
        "doctor/cluster/__init__.py": "",
        "doctor/cluster/bad.py": "import ray\n\ndef f():\n    from rldoctor.checks import _rllib\n"
                                 "    from rldoctor.bundle import assemble\n"
                                 "    from rldoctor.bundle.writer import fit\n"
                                 "    from rldoctor.inputs import targets\n",
        "doctor/job/__init__.py": "",
        "doctor/job/bad.py": "from ..report import overview\n",
        "doctor/report/__init__.py": "",
        "doctor/report/bad.py": "from rldoctor.cluster.session import NOT_FROM_A_LIVE_CLUSTER\n",
        "doctor/report/also_bad.py": "from rldoctor.snapshot import Snapshot\n\n"
                                     "def f():\n    from rldoctor.checks import _rllib\n",
        "doctor/engine/__init__.py": "",
        "doctor/engine/bad.py": "from rldoctor.report import overview\n\n"
                                "def f():\n    from rldoctor.cluster import session\n"
                                "    from rldoctor.commands import check\n",
        "doctor/bundle/__init__.py": "", "doctor/bundle/writer.py": "", "doctor/bundle/assemble.py": "",
        "doctor/commands/__init__.py": "",
        "doctor/commands/bad.py": "import ray\n\ndef fine():\n    import ray\n",
        # a circle through a function-level import; a module importing its own package is none
        "doctor/one.py": "def f():\n    from rldoctor import two\n",
        "doctor/two.py": "from rldoctor.one import f\n",
        "doctor/pkg/__init__.py": "from rldoctor.pkg.sub import g\n",
        "doctor/pkg/sub.py": "from rldoctor.pkg import other\n",
        "checks/__init__.py": "", "checks/_rllib.py": "",
        "checks/fine.py": "import re\nfrom rldoctor import words\nfrom rldoctor.checks import _rllib\n"
                          "from rldoctor.snapshot import Snapshot\n",
        "checks/bad.py": "import numpy\nfrom rldoctor.cluster import nodes\n\n"
                         "def f():\n    from rldoctor.report import overview\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    found = violations(tmp_path)
    flagged = sorted({v.split(" imports ")[0] + " " + v.split(" imports ")[1].split(":")[0]
                      for v in found if " imports " in v})
    assert flagged == [
        "checks/bad.py:1 numpy",
        "checks/bad.py:2 rldoctor.cluster",
        "checks/bad.py:5 rldoctor.report",
        "doctor/cluster/bad.py:4 rldoctor.checks",
        "doctor/cluster/bad.py:4 rldoctor.checks._rllib",
        "doctor/cluster/bad.py:5 rldoctor.bundle.assemble",
        "doctor/cluster/bad.py:7 rldoctor.inputs",
        "doctor/commands/bad.py:1 ray",
        "doctor/engine/bad.py:4 rldoctor.cluster",
        "doctor/engine/bad.py:5 rldoctor.commands",
        "doctor/errors.py:2 rldoctor.snapshot",
        "doctor/errors.py:3 yaml",
        "doctor/job/bad.py:1 rldoctor.report",
        "doctor/node/bad.py:2 rldoctor.snapshot",
        "doctor/node/bad.py:3 requests",
        "doctor/report/also_bad.py:4 rldoctor.checks",
        "doctor/report/also_bad.py:4 rldoctor.checks._rllib",
        "doctor/report/bad.py:1 rldoctor.cluster.session",
    ], flagged
    assert [v for v in found if " imports " not in v] == [
        "rldoctor.one <-> rldoctor.two: these modules import each other round"]
