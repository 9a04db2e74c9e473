"""Hostile input, fuzzed: snapshots and bundles mutated from the fixtures (tests/mutations.py:
wrong types, huge integers, NaN, deep nests, missing keys, int ids) never end in a traceback.

Each case is read and diagnosed the way `rldoctor check --from FILE` does it (in-process,
through rldoctor.commands.check.run, for speed; a few through the real console script), and
every format is rendered. What must hold: the exit code is one the docs list (0, 1, 3), an
error is one line, nothing raises past the CLI's handler, and no case takes longer than a
bound. A section of the wrong shape is "not collected" with a note (rldoctor.snapshot_shape),
so checks skip it rather than erroring: a check that errors on a mutant is counted and must
stay rare (the shapes catch what the report builders read).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tarfile
import time
import traceback
from pathlib import Path

import pytest

from conftest import FIXTURES, run_rldoctor
from mutations import dumps, mutants

SNAPSHOTS = sorted(p for p in FIXTURES.glob("*.json") if not p.name.endswith(".expected.json"))
CASES_PER_SNAPSHOT = 100  # 19 fixtures: 1,900 snapshot cases, and 300 bundles: 2,200
BUNDLE_CASES = 300
CASE_BOUND_S = 5.0
DOCUMENTED_EXITS = {0, 1, 3}


def _diagnose(path: Path, fmt: str) -> tuple[int | str, str, str]:
    """(exit code or "traceback", stdout, stderr) of `check --from path --format fmt`, in-process,
    as rldoctor.cli.check handles it."""
    from rldoctor.commands.check import run
    from rldoctor.errors import RldoctorError

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = run(None, str(path), [], [], fmt, None, "fail", 30.0, 10.0, {})
        return code, out.getvalue(), ""
    except RldoctorError as exc:
        return exc.exit_code, out.getvalue(), f"rldoctor: {exc}\n"
    except BaseException:  # noqa: BLE001: what the fuzzer is here to find
        return "traceback", out.getvalue(), traceback.format_exc()


def _judge(code, stdout: str, stderr: str, seconds: float, what: str, errored: list) -> None:
    assert code != "traceback", f"{what}:\n{stderr}"
    assert code in DOCUMENTED_EXITS, f"{what}: exit {code}"
    if code == 3:
        assert stderr.count("\n") == 1 and len(stderr) < 2000, f"{what}: {stderr!r}"
    else:
        assert stdout
    assert seconds < CASE_BOUND_S, f"{what}: {seconds:.1f}s"
    if code == 1 and '"status": "error"' in stdout:
        errored.append(what)


def _bundle(path: Path, manifest, snapshot_text: str) -> None:
    """A bundle as rldoctor.bundle.writer lays one out: one top folder, manifest, snapshot,
    and the log file its manifest names."""
    def add(tar, name, data: bytes):
        info = tarfile.TarInfo(f"b/{name}")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(path, "w:gz") as tar:
        add(tar, "manifest.json", dumps(manifest).encode())
        add(tar, "snapshot.json", snapshot_text.encode())
        add(tar, "nodes/n1/raylet.out", b"a line\n")


def _manifest(snapshot: dict) -> dict:
    node = next((n.get("node_id") for n in snapshot.get("nodes") or []), "n1")
    return {"schema": "rldoctor.bundle/v1", "items": [
        {"kind": "log", "node_id": node, "file": "nodes/n1/raylet.out", "status": "ok"},
        {"kind": "stack", "node_id": node, "pid": 42, "file": "nodes/n1/raylet.out", "status": "ok"},
        {"kind": "host", "node_id": node, "file": "nodes/n1/raylet.out", "status": "ok"},
        {"kind": "log", "node_id": node, "worker_id": "w1", "file": "nodes/n1/raylet.out",
         "status": "ok"}]}


FORMATS = ("json", "table", "markdown")


@pytest.fixture(autouse=True)
def _registry_once(monkeypatch):
    """The checks found once for all cases (entry points are read per run otherwise: 20 ms)."""
    from rldoctor.engine import registry

    found = registry.load_registry()
    monkeypatch.setattr(registry, "load_registry", lambda *a, **k: found)


@pytest.mark.parametrize("fixture", SNAPSHOTS, ids=lambda p: p.stem)
def test_mutated_snapshots_never_crash(fixture, tmp_path):
    doc = json.loads(fixture.read_text())
    errored: list[str] = []
    for seed in range(CASES_PER_SNAPSHOT):
        mutant, done = mutants(doc, seed)
        path = tmp_path / "snap.json"
        path.write_text(dumps(mutant))
        fmt = FORMATS[seed % len(FORMATS)]
        started = time.monotonic()
        code, out, err = _diagnose(path, fmt)
        _judge(code, out, err, time.monotonic() - started,
               f"{fixture.name} seed {seed} ({fmt}): {done}", errored)
    assert len(errored) <= CASES_PER_SNAPSHOT // 10, errored[:5]


def test_mutated_bundles_never_crash(tmp_path):
    docs = [json.loads(p.read_text()) for p in SNAPSHOTS]
    errored: list[str] = []
    for seed in range(BUNDLE_CASES):
        doc = docs[seed % len(docs)]
        both, done = mutants({"manifest": _manifest(doc), "snapshot": doc}, seed)
        manifest = both.get("manifest") if isinstance(both, dict) else None
        snapshot = both.get("snapshot") if isinstance(both, dict) else None
        path = tmp_path / "b.tar.gz"
        _bundle(path, manifest, dumps(snapshot))
        fmt = FORMATS[seed % len(FORMATS)]
        started = time.monotonic()
        code, out, err = _diagnose(path, fmt)
        _judge(code, out, err, time.monotonic() - started,
               f"bundle of {SNAPSHOTS[seed % len(docs)].name} seed {seed} ({fmt}): {done}", errored)
    assert len(errored) <= BUNDLE_CASES // 10, errored[:5]


def test_the_fuzzer_runs_at_least_2000_cases():
    assert len(SNAPSHOTS) * CASES_PER_SNAPSHOT + BUNDLE_CASES >= 2000


@pytest.mark.parametrize("seed", [3, 17, 101])
def test_mutants_through_the_console_script(seed, tmp_path):
    """The real CLI on a few mutants: one line on stderr and a documented exit, no traceback."""
    doc = json.loads((FIXTURES / "node-faults.json").read_text())
    mutant, done = mutants(doc, seed, mutations=6)
    path = tmp_path / "snap.json"
    path.write_text(dumps(mutant))
    result = run_rldoctor("check", "--from", str(path), "--format", "json", timeout=60)
    assert result.code in DOCUMENTED_EXITS, (done, result)
    assert "Traceback" not in result.stderr, (done, result)
    if result.code != 3:
        json.loads(result.stdout)  # valid JSON, NaN and Infinity included in the input


# The wrong types the issue names, each one on its own.
def _node_faults() -> dict:
    return json.loads((FIXTURES / "node-faults.json").read_text())


def _set(path: tuple, value):
    def change(doc):
        target = doc
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
        return doc
    return change


WRONG_TYPES = {
    "nodes-a-string": _set(("nodes",), "x"),
    "cpu-lots": _set(("nodes", 0, "resources_total", "CPU"), "lots"),
    "cpu-huge": _set(("nodes", 0, "resources_total", "CPU"), 10**400),
    "ip-a-dict": _set(("nodes", 0, "ip"), {"a": 1}),
    "labels-nested": _set(("nodes", 0, "labels"), {"zone": {"deep": ["x"]}}),
    "node-id-int": _set(("nodes", 0, "node_id"), 12345),
    "collectors-a-list": _set(("collectors",), ["x"]),
    "source-a-string": _set(("source",), "x"),
    "notes-a-dict": _set(("notes",), {"a": 1}),
    "nodes-rows-strings": _set(("nodes",), ["x", "y"]),
}


@pytest.mark.parametrize("name", WRONG_TYPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_each_wrong_type_the_issue_names(name, fmt, tmp_path):
    path = tmp_path / "snap.json"
    path.write_text(dumps(WRONG_TYPES[name](_node_faults())))
    code, out, err = _diagnose(path, fmt)
    assert code in DOCUMENTED_EXITS and code != "traceback", err
    assert "has the wrong shape" in " ".join(out.split())  # the notes say which and where
    if fmt == "json":
        report = json.loads(out)
        section = name.split("-")[0].replace("cpu", "nodes").replace("ip", "nodes").replace(
            "labels", "nodes").replace("node", "nodes").replace("nodess", "nodes")
        assert any(f"its '{section}' has the wrong shape" in n for n in report["notes"])
        if section == "nodes":  # the checks that need the nodes say why they did not run
            rld101 = next(c for c in report["checks"] if c["code"] == "RLD101")
            assert rld101["status"] == "skipped" and "wrong shape" in rld101["detail"]
