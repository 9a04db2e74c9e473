"""Check plugins installed for real, as a dist-info with an `rldoctor.checks` entry point."""

from __future__ import annotations

import textwrap
from pathlib import Path

GOOD = '''
from rldoctor.registry import check, warn


@check("ACME001", "acme-always-warns", area="acme", requires=("nodes",))
def always_warns(snap, params):
    """A plugin check that warns about every alive node.

    Symptom:
        none; this is a test plugin.
    Cause:
        none.
    Fix:
        none.
    """
    for node in snap.alive_nodes:
        yield warn(f"node:{node['node_id']}", "acme says hello", fix="ignore it")
'''

BROKEN_IMPORT = '''
import a_module_that_does_not_exist  # noqa: F401
'''

MISBEHAVING = '''
import time

from rldoctor.registry import check


@check("BAD001", "bad-raises", area="bad", requires=("nodes",))
def raises(snap, params):
    """Raises.

    Symptom:
        x
    Cause:
        x
    Fix:
        x
    """
    raise RuntimeError("plugin exploded on purpose")
    yield


@check("BAD002", "bad-hangs", area="bad", requires=("nodes",))
def hangs(snap, params):
    """Never returns.

    Symptom:
        x
    Cause:
        x
    Fix:
        x
    """
    time.sleep(3600)
    yield
'''


def install(site: Path, dist: str, entries: dict[str, str], modules: dict[str, str]) -> Path:
    """Write modules plus `<dist>.dist-info` with entry points into `site` (a sys.path dir)."""
    site.mkdir(parents=True, exist_ok=True)
    for name, code in modules.items():
        (site / f"{name}.py").write_text(textwrap.dedent(code))
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entries.items())
    (info / "entry_points.txt").write_text(f"[rldoctor.checks]\n{lines}\n")
    return site
