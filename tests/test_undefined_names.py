"""No name that a function uses is missing from its module: a NameError waits for the line to
run, and much of rldoctor runs only on a user's cluster (the collectors' job, the node probes),
where no unit test reaches it. (`--preflight-plan` once decoded with a `base64` the job's main
module never imported: every preflight through a dashboard address failed on the cluster.)"""

from __future__ import annotations

import builtins
import symtable
from pathlib import Path

from conftest import ROOT

MODULE_NAMES = {"__file__", "__name__", "__doc__", "__spec__", "__path__", "__package__",
                "__builtins__", "__loader__"}


def undefined_globals(source: str, filename: str) -> list[tuple[str, int, str]]:
    """(scope, line, name) for each global name a scope reads that the module never binds."""
    top = symtable.symtable(source, filename, "exec")
    bound = {s.get_name() for s in top.get_symbols()
             if s.is_assigned() or s.is_imported() or s.is_namespace()}
    bound |= set(dir(builtins)) | MODULE_NAMES
    missing = [("<module>", 1, s.get_name()) for s in top.get_symbols()
               if s.is_referenced() and s.get_name() not in bound]
    scopes = list(top.get_children())
    while scopes:
        scope = scopes.pop()
        scopes.extend(scope.get_children())
        missing += [(scope.get_name(), scope.get_lineno(), s.get_name()) for s in scope.get_symbols()
                    if s.is_referenced() and s.is_global() and s.get_name() not in bound]
    return missing


def test_every_name_a_module_uses_is_bound_in_it():
    sources = sorted(p for package in ("doctor", "checks") for p in (ROOT / package).rglob("*.py"))
    assert len(sources) > 100
    missing = {str(p.relative_to(ROOT)): found for p in sources
               if (found := undefined_globals(p.read_text(), str(p)))}
    assert missing == {}


def test_the_guard_finds_a_missing_import():
    source = "import json\n\ndef decode(text):\n    return json.loads(base64.b64decode(text))\n"
    assert undefined_globals(source, "main.py") == [("decode", 3, "base64")]
    assert undefined_globals("import base64\n" + source, "main.py") == []
