"""Nothing ships or runs only because someone remembered a list: check modules are found in
`checks/`, every package of the source tree is in pyproject, and the --format choices are
the renderers. Each test fails when a new part is added the way a newcomer would add it but
one of those places is forgotten; and a new wait on the probes' answers uses the one fan-out
(fleet.ask) instead of a loop of its own."""

from __future__ import annotations

import importlib
import json
import pkgutil
import tomllib
from pathlib import Path

import click
import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor import cli
from rldoctor.engine.registry import CHECK_PACKAGES, _checks_in, builtin_checks, builtin_modules
from rldoctor.report.render import FORMATS, LINT_FORMATS, LINT_RENDERERS, RENDERERS

ROOT = Path(__file__).resolve().parent.parent


def test_every_module_of_checks_with_a_check_runs_and_helpers_hold_none():
    ran = {c.func.__module__ for c in builtin_checks()}
    for package_name in CHECK_PACKAGES:  # rldoctor.checks (area subpackages too), the lint rules
        package = importlib.import_module(package_name)
        assert not _checks_in(package), f"{package_name}/__init__.py declares checks: move them"
        for module in pkgutil.walk_packages(package.__path__, f"{package_name}."):
            declared = _checks_in(importlib.import_module(module.name))
            parts = module.name[len(package_name) + 1:].split(".")
            if module.ispkg:
                assert not declared, f"{module.name}/__init__.py declares checks: move them"
            elif any(part.startswith("_") for part in parts):
                assert not declared, f"{module.name} is a helper (leading _) but declares checks: rename it"
            else:
                assert module.name in builtin_modules() and (not declared or module.name in ran)


def test_a_new_check_module_is_found_without_being_listed(tmp_path, monkeypatch):
    import rldoctor.checks as package

    (tmp_path / "newarea.py").write_text(
        "from rldoctor.engine.registry import check, warn\n\n"
        "@check('ZZZ901', 'new-area-check', area='cluster')\n"
        "def new_area(snap, params):\n"
        "    '''A new area.\n\n    Symptom:\n        s\n\n    Cause:\n        c\n\n    Fix:\n        f\n    '''\n"
        "    return []\n")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    assert "ZZZ901" in {c.code for c in builtin_checks()}


def _source_packages() -> set[str]:
    found = set()
    for top, name in (("doctor", "rldoctor"), ("checks", "rldoctor.checks")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    return found


def test_every_source_package_ships():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    assert _source_packages() <= listed, f"add to pyproject's packages: {_source_packages() - listed}"
    for package in listed:  # and each of them imports from the installed tree
        importlib.import_module(package)


def _choices(command: click.Command) -> tuple[str, ...]:
    [option] = [p for p in command.params if p.name == "fmt"]
    return tuple(option.type.choices)


def test_format_choices_are_the_renderers_and_each_renders_a_report():
    assert _choices(cli.check) == _choices(cli.smoke_train) == FORMATS == tuple(RENDERERS)
    assert _choices(cli.lint) == LINT_FORMATS == tuple(LINT_RENDERERS)
    assert set(LINT_FORMATS) - {"text"} <= set(RENDERERS)
    for fmt in FORMATS:
        result = run_rldoctor("check", "--from", str(FIXTURES / "node-dead.json"), "--format", fmt)
        assert result.code == 1 and "RLD101" in result.stdout, (fmt, result.stderr[-500:])


def _waits_on_many_refs(path: Path) -> list[int]:
    """Lines of `path` that call ray.wait on anything but a one-element list literal."""
    import ast

    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "wait" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "ray"):
            first = node.args[0] if node.args else None
            if not (isinstance(first, ast.List) and len(first.elts) == 1):
                lines.append(node.lineno)
    return lines


def test_every_fan_out_to_the_probes_goes_through_fleet_ask(tmp_path):
    """One fan-out-and-wait (rldoctor.cluster.fleet.ask: per-call deadline, an answer for a
    late, failed or missing probe); a module that waits on many refs itself fails here."""
    fleet = ROOT / "doctor" / "cluster" / "fleet.py"
    found = {str(p.relative_to(ROOT)): lines for p in sorted((ROOT / "doctor").rglob("*.py"))
             if p != fleet and (lines := _waits_on_many_refs(p))}
    assert found == {}, f"use rldoctor.cluster.fleet.ask instead of ray.wait: {found}"
    assert _waits_on_many_refs(fleet)  # the guard sees a wait where there is one
    loop = tmp_path / "loop.py"
    loop.write_text("import ray\nready, late = ray.wait(list(refs), num_returns=len(refs))\n")
    assert _waits_on_many_refs(loop) == [2]


def _codes_named(text: str) -> set[str]:
    """The codes a docstring's title names: RLD101, and ranges written RLD201-RLD204."""
    import re

    codes = set()
    for first, last in re.findall(r"\b([A-Z]{2,6}[0-9]{3})(?:\s*-\s*([A-Z]{2,6}[0-9]{3}))?\b", text):
        if last:
            prefix = first[:-3]
            codes.update(f"{prefix}{n:03d}" for n in range(int(first[-3:]), int(last[-3:]) + 1))
        else:
            codes.add(first)
    return codes


def test_every_code_lives_in_the_module_of_its_area_whose_title_lists_exactly_its_codes():
    """checks/<area>/<family>.py for a check, doctor/lint/rules/<code>.py for a lint rule: the
    path says the area, and the module's title (its docstring's first paragraph) says the codes."""
    held: dict[str, set[str]] = {}
    for c in builtin_checks():
        module = c.func.__module__
        if c.area == "code":
            assert module == f"rldoctor.lint.rules.{c.code.lower()}", f"{c.code} is in {module}"
        else:
            assert module.startswith(f"rldoctor.checks.{c.area}."), (
                f"{c.code} (area {c.area}) is in {module}: move it to checks/{c.area}/")
            assert module.count(".") == 3, f"{c.code}: one module per code family in checks/{c.area}/"
        held.setdefault(module, set()).add(c.code)
    assert len(held) >= 14
    for module, codes in held.items():
        doc = importlib.import_module(module).__doc__ or ""
        title = doc.strip().split("\n\n")[0]
        assert _codes_named(title) == codes, f"{module}'s docstring title names {sorted(_codes_named(title))}, it holds {sorted(codes)}"


def test_the_docstring_code_reader_reads_lists_and_ranges():
    assert _codes_named("Latency and ports: RLD201-RLD204.") == {"RLD201", "RLD202", "RLD203", "RLD204"}
    assert _codes_named("RLD605 hung, RLD606 lost,\nRLD608 drop; RLD601-RLD602") == {
        "RLD605", "RLD606", "RLD608", "RLD601", "RLD602"}
    assert _codes_named("no codes here") == set()


def test_a_check_module_in_a_new_area_package_is_found(tmp_path, monkeypatch):
    import rldoctor.checks as package

    area = tmp_path / "areapkg"
    area.mkdir()
    (area / "__init__.py").write_text('"""A new area."""\n')
    (area / "family.py").write_text(
        "from rldoctor.engine.registry import check\n\n"
        "@check('ZZZ902', 'new-area-family', area='areapkg')\n"
        "def new_family(snap, params):\n"
        "    '''A new family.\n\n    Symptom:\n        s\n\n    Cause:\n        c\n\n    Fix:\n        f\n    '''\n"
        "    return []\n")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    try:
        assert "rldoctor.checks.areapkg.family" in builtin_modules()
        assert "ZZZ902" in {c.code for c in builtin_checks()}
    finally:
        import sys
        for name in [n for n in sys.modules if n.startswith("rldoctor.checks.areapkg")]:
            del sys.modules[name]


RAYLET_CALLS = ("raylet_ping", "raylet_node_stats")


def _own_raylet_pool(path: Path) -> bool:
    """A module that calls a raylet RPC and builds its own thread pool for it."""
    text = path.read_text(encoding="utf-8")
    return any(f"{c}(" in text or f"{c}," in text for c in RAYLET_CALLS) and "ThreadPoolExecutor" in text


def test_every_fan_out_to_the_raylets_goes_through_raylets_fan_out(tmp_path):
    """One raylet fan-out (rldoctor.cluster.raylets.fan_out, addresses from the nodes
    section) serves the pings and the store figures; a module with a pool of its own fails."""
    allowed = {ROOT / "doctor" / "cluster" / "raylets.py", ROOT / "doctor" / "cluster" / "private.py"}
    found = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "doctor").rglob("*.py"))
             if p not in allowed and _own_raylet_pool(p)]
    assert found == [], f"use rldoctor.cluster.raylets.fan_out: {found}"
    for user in ("control_plane.py", "objectstore.py"):
        assert "fan_out(" in (ROOT / "doctor" / "cluster" / user).read_text()
    pool = tmp_path / "pool.py"
    pool.write_text("from concurrent.futures import ThreadPoolExecutor\n"
                    "with ThreadPoolExecutor(16) as p:\n    p.map(lambda n: raylet_ping(*n, 2), nodes)\n")
    assert _own_raylet_pool(pool)


def test_raylet_addresses_come_from_the_nodes_section():
    from rldoctor.cluster.raylets import addresses, fan_out

    nodes = [{"node_id": "a", "alive": True, "ip": "10.0.0.1", "ports": {"node_manager": 4000}},
             {"node_id": "b", "alive": False, "ip": "10.0.0.2", "ports": {"node_manager": 4001}},
             {"node_id": "c", "alive": True, "ip": "10.0.0.3", "ports": {"node_manager": 4002}}]
    assert addresses(nodes) == {"a": ("10.0.0.1", 4000), "c": ("10.0.0.3", 4002)}
    assert addresses([nodes[1]]) == {}  # a section with no alive node: nothing to ask, no ray
    pool, futures = fan_out(addresses(nodes), lambda ip, port: f"{ip}:{port}")
    with pool:
        assert {n: f.result(timeout=5) for n, f in futures.items()} == {
            "a": "10.0.0.1:4000", "c": "10.0.0.3:4002"}


# The host keys a probe's answer holds (the snapshot's hosts.<id>, ../shared/DESIGN.md): the
# node-side facts found in rldoctor.node, read on the node.
HOST_KEYS = {"hostname", "mem_total_bytes", "mem_available_bytes", "memory_limit",
             "kernel_oom_kills", "cgroup_oom_kills", "memory_monitor", "shm_total_bytes",
             "shm_free_bytes", "raylet", "kernel_oom_log", "listening", "disk", "open_files",
             "ray_logs"}


def test_a_new_node_side_fact_module_is_found_without_being_listed(tmp_path, monkeypatch):
    """A newcomer adds a node-side fact by adding one module to rldoctor.node: node_facts'
    reading finds it (and keeps every fact it found before)."""
    import rldoctor.node as package
    from rldoctor.node import facts

    (tmp_path / "fact_newcomer.py").write_text(
        "from rldoctor.node.facts import fact\n\n"
        "@fact('newcomer')\n"
        "def newcomer_here() -> dict:\n"
        "    return {'status': 'ok', 'said': 42}\n")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    monkeypatch.setattr(facts, "FOUND", {})
    read = facts.read_facts(facts.found())
    assert read["host"]["newcomer"] == {"status": "ok", "said": 42}
    assert set(read["host"]) == HOST_KEYS | {"newcomer"} and "versions" in read


def test_a_node_side_fact_declared_twice_is_an_error(tmp_path, monkeypatch):
    import rldoctor.node as package
    from rldoctor.node import facts

    (tmp_path / "fact_again.py").write_text(
        "from rldoctor.node.facts import fact\n\n@fact('disk')\ndef disk_again():\n    return {}\n")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    monkeypatch.setattr(facts, "FOUND", {})
    with pytest.raises(ValueError, match="'disk' is declared twice"):
        facts.found()


def test_node_side_facts_travel_by_value_to_a_node_without_rldoctor(tmp_path):
    """What the probe reads on a node is pickled by value with what was found here: a Python
    that cannot import rldoctor reads every fact, the snapshot's host keys and no other, and
    reads a node's Ray log with the catalogue of Ray's lines (rldoctor.raylog) all the same."""
    import subprocess
    import sys

    import ray.cloudpickle

    from rldoctor.node import facts, probes
    from rldoctor.node.fact_ray_logs import read_logs

    probes.register()
    (tmp_path / "facts.pkl").write_bytes(ray.cloudpickle.dumps((facts.read_facts, facts.found,
                                                               read_logs)))
    raylet_log = FIXTURES / "userlogs" / "disk-full-raylet" / "logs" / "raylet.out"
    code = (
        "import json, pickle, sys\n"
        "class NoRldoctor:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'rldoctor' or name.startswith('rldoctor.'):\n"
        "            raise ImportError('rldoctor is not installed on this node')\n"
        "sys.meta_path.insert(0, NoRldoctor())\n"
        "import ray.cloudpickle\n"
        "read, found, read_logs = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "out = read(found())\n"
        "logs = read_logs([('raylet', sys.argv[2])])\n"
        "assert not [m for m in sys.modules if m.startswith('rldoctor')], 'rldoctor imported'\n"
        "print(json.dumps({'host': sorted(out['host']), 'versions': out['versions']['python'],\n"
        "                  'signals': sorted(logs['signals']),\n"
        "                  'codes': [h['code'] for h in logs['log_lines']['items']]}))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "facts.pkl"), str(raylet_log)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(answer["host"]) == HOST_KEYS and answer["versions"]
    assert answer["signals"] == ["disk_over_capacity"] and answer["codes"] == ["RLD305"]
