"""The arrows of the tree (README "Layout"): which folder may import which.

    doctor/node/      pickled by value onto the nodes: the standard library, ray (and what the
                      cluster's ray[rllib] brings, for the smoke trainer) and stdlib-only shared
                      modules, nothing else of rldoctor
    doctor/cluster/, doctor/node/, doctor/job/   the cluster side (what the dashboard path
                      ships): never the checks, the reports, the diagnosis pipeline, the
                      commands or the bundle's writing side; of the bundle only its
                      stdlib-only format modules
    doctor/report/    no collector (nothing of cluster/, node/, job/, inputs/)
    the client        (everything outside cluster/, node/, job/) never imports ray at module
                      level: `rldoctor check --from`, `lint` and `explain` run without it

Every import counts, function-level ones too (they run on the cluster just the same), read
from the syntax tree of every module of doctor/ and checks/.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CLUSTER_SIDE = ("rldoctor.cluster", "rldoctor.node", "rldoctor.job")
# stdlib-only modules the nodes may import (they travel by value or in the shipped package)
NODE_SHARED = ("rldoctor.metric_numbers", "rldoctor.words")
# what the cluster's own ray[default,rllib] installs: the smoke trainer hosts RLlib
RAY_AND_ITS_OWN = ("ray", "gymnasium", "numpy", "torch")
# client-side parts the cluster side must never reach
CLIENT_ONLY = ("rldoctor.checks", "rldoctor.report", "rldoctor.engine", "rldoctor.commands",
               "rldoctor.cli", "rldoctor.diagnose", "rldoctor.runner", "rldoctor.registry",
               "rldoctor.muting", "rldoctor.docs", "rldoctor.output", "rldoctor.lint",
               "rldoctor.watch", "rldoctor.dashboard", "rldoctor.acquire", "rldoctor.inputs.targets",
               "rldoctor.bundle", "rldoctor.cache",
               # reading snapshot files and their per-node views: the cluster side only starts
               # a document (rldoctor.snapshot_document)
               "rldoctor.snapshot")
# of the bundle, the cluster side may use only its stdlib-only file-format modules
BUNDLE_FORMAT = ("rldoctor.bundle", "rldoctor.bundle.writer", "rldoctor.bundle.manifest")
COLLECTORS = ("rldoctor.cluster", "rldoctor.node", "rldoctor.job", "rldoctor.inputs")


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
            if _within(name, ("rldoctor.node",)):
                if top == "rldoctor":
                    if not _within(imported, ("rldoctor.node",) + NODE_SHARED) and imported != "rldoctor":
                        wrong.append(f"{said}: node code imports only the standard library, ray "
                                     f"and {', '.join(NODE_SHARED)}")
                elif top not in stdlib and top not in RAY_AND_ITS_OWN:
                    wrong.append(f"{said}: node code imports only the standard library and ray")
            if _within(name, CLUSTER_SIDE) and _within(imported, CLIENT_ONLY) \
                    and imported not in BUNDLE_FORMAT:
                wrong.append(f"{said}: the cluster side never imports the client "
                             f"(checks, reports, pipeline, commands, bundle writing)")
            if _within(name, ("rldoctor.report",)) and (_within(imported, COLLECTORS) or top == "ray"):
                wrong.append(f"{said}: reports import no collector")
            if not _within(name, CLUSTER_SIDE) and top == "ray" and top_level:
                wrong.append(f"{said}: a client module imports ray inside a function only")
    return wrong


def test_imports_follow_the_arrows():
    assert violations() == []


def test_the_checker_flags_an_import_against_the_arrows(tmp_path):
    """A tree with one wrong import per rule, and one right import per rule: exactly the
    wrong ones are flagged."""
    files = {
        "doctor/__init__.py": "",
        "doctor/metric_numbers.py": "import math\n",
        "doctor/node/__init__.py": "",
        "doctor/node/fine.py": "import os\nimport ray\nfrom rldoctor.metric_numbers import x\n",
        "doctor/node/bad.py": "def f():\n    from rldoctor.snapshot import Snapshot\n    import requests\n",
        "doctor/cluster/__init__.py": "",
        "doctor/cluster/bad.py": "import ray\n\ndef f():\n    from rldoctor.checks import _rllib\n"
                                 "    from rldoctor.bundle import assemble\n"
                                 "    from rldoctor.bundle.writer import fit\n",
        "doctor/job/__init__.py": "",
        "doctor/job/bad.py": "from ..report import overview\n",
        "doctor/report/__init__.py": "",
        "doctor/report/bad.py": "from rldoctor.cluster.session import NOT_FROM_A_LIVE_CLUSTER\n",
        "doctor/bundle/__init__.py": "", "doctor/bundle/writer.py": "", "doctor/bundle/assemble.py": "",
        "doctor/commands/__init__.py": "",
        "doctor/commands/bad.py": "import ray\n\ndef fine():\n    import ray\n",
        "checks/__init__.py": "", "checks/_rllib.py": "",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    flagged = sorted({v.split(" imports ")[0] + " " + v.split(" imports ")[1].split(":")[0]
                      for v in violations(tmp_path)})
    assert flagged == [
        "doctor/cluster/bad.py:4 rldoctor.checks",
        "doctor/cluster/bad.py:4 rldoctor.checks._rllib",
        "doctor/cluster/bad.py:5 rldoctor.bundle.assemble",
        "doctor/commands/bad.py:1 ray",
        "doctor/job/bad.py:1 rldoctor.report",
        "doctor/node/bad.py:2 rldoctor.snapshot",
        "doctor/node/bad.py:3 requests",
        "doctor/report/bad.py:1 rldoctor.cluster.session",
    ], flagged
