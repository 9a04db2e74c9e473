"""RLD501 not-serializable and RLD502 large-closure: the targets collector, the checks, the CLI.

The user code is in tests/targets/: broken on purpose (a creator closing over a lock,
a callbacks class holding an open socket, a config carrying a 12 MiB array) and fixed.
tests/test_serialization_e2e.py proves on real RLlib that the broken ones fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor.inputs.targets import collect, parse_target
from rldoctor.errors import UsageError
from rldoctor.engine.registry import load_registry
from rldoctor.engine.runner import run_check
from rldoctor.snapshot import Snapshot

TESTS = Path(__file__).resolve().parent
TARGETS = TESTS / "targets"
MIB = 2**20

BROKEN = {
    "lock": "targets.lock_env:env_creator",
    "registered": "targets.registered_lock_env:rldoctor-lock-cartpole",
    "socket": f"{TARGETS / 'socket_callbacks.py'}:MetricsCallbacks",
    "socket_config": f"{TARGETS / 'socket_callbacks.py'}:config",
    "big": "targets.big_config:config",
}
CLEAN = {
    "env_class": "targets.clean_env:LockedCartPole",
    "env_creator": "targets.clean_env:env_creator",
    "callbacks": "targets.clean_env:MetricsCallbacks",
    "config": "targets.clean_env:config",
    "script_config": f"{TARGETS / 'clean_env.py'}:config",
    "socket_module": "targets.socket_callbacks:MetricsCallbacks",
}


def _checks():
    by_code = load_registry(include_plugins=False).by_code()
    return by_code["RLD501"], by_code["RLD502"]


def _snap(targets: list[dict]) -> Snapshot:
    return Snapshot({"schema": "rldoctor.snapshot/v1", "collectors": {"targets": {"status": "ok"}},
                     "targets": targets})


@pytest.fixture(scope="module")
def inspected():
    """Every test target, inspected once in this process (importing RLlib costs seconds)."""
    texts = {**{f"broken:{k}": v for k, v in BROKEN.items()},
             **{f"clean:{k}": v for k, v in CLEAN.items()}}
    entries = collect([parse_target(t) for t in texts.values()])
    return dict(zip(texts, entries))


def _one(entry: dict) -> dict:
    assert entry["status"] == "ok", entry
    return entry["objects"][0]


# --------------------------------------------------------------------------- parsing
def test_parse_target_forms():
    spec = parse_target("pkg.mod:make_env")
    assert (spec.module, spec.attr, spec.path) == ("pkg.mod", "make_env", None)
    spec = parse_target("pkg.mod:my-env/v0")  # a registered env name may hold anything
    assert spec.attr == "my-env/v0"
    spec = parse_target(f"{TARGETS / 'lock_env.py'}:env_creator")
    assert spec.path == str(TARGETS / "lock_env.py") and spec.attr == "env_creator"


@pytest.mark.parametrize("text,says", [
    ("pkg.mod", "expected MODULE:ATTR"),
    ("pkg.mod:", "no ATTR"),
    ("pkg-mod:x", "not a module name"),
    ("no/such/file.py:x", "no such file"),
    ("some/dir:x", "must end in .py"),
    (f"{TARGETS / 'lock_env.py'}:", "no ATTR"),
])
def test_bad_targets_are_usage_errors(text, says):
    with pytest.raises(UsageError, match=says):
        parse_target(text)


# --------------------------------------------------------------------------- the collector
def test_env_creator_closing_over_a_lock(inspected):
    entry = inspected["broken:lock"]
    obj = _one(entry)
    assert entry["kind"] == "env_creator" and obj["travels_by"] == "value"
    assert obj["serializable"] is False
    assert obj["error"] == "TypeError: cannot pickle '_thread.lock' object"
    assert [(c["path"], c["type"]) for c in obj["culprits"]] == \
        [("env_creator -> closure 'lock'", "_thread.lock")]
    ray_view = obj["ray_inspect"]
    assert ray_view["serializable"] is False
    assert ray_view["failures"] == [{"path": "env_creator -> lock", "type": "_thread.lock"}]
    assert "cannot pickle '_thread.lock' object" in ray_view["report"]
    assert "\x1b" not in ray_view["report"]  # colour codes stripped


def test_registered_env_name_is_found_although_register_env_raises(inspected):
    entry = inspected["broken:registered"]
    obj = _one(entry)
    assert entry["kind"] == "registered_env" and entry["registered_as"] == "rldoctor-lock-cartpole"
    assert obj["register_env_error"] == "TypeError: cannot pickle '_thread.lock' object"
    assert obj["culprits"][0]["path"] == "env_creator -> closure 'lock'"


def test_plain_import_of_the_registering_module_really_raises():
    proc = subprocess.run([sys.executable, "-c", "import targets.registered_lock_env"], cwd=TESTS,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "TypeError: cannot pickle '_thread.lock' object" in proc.stderr


def test_callbacks_class_holding_an_open_socket(inspected):
    entry = inspected["broken:socket"]
    obj = _one(entry)
    assert entry["kind"] == "callbacks_class" and obj["travels_by"] == "value"
    assert [(c["path"], c["type"]) for c in obj["culprits"]] == \
        [("MetricsCallbacks -> telemetry -> _socket", "socket.socket")]
    # Ray's own inspector stops at the ABC bookkeeping of RLlibCallback; rldoctor does not.
    assert obj["ray_inspect"]["failures"][0]["path"] == "MetricsCallbacks -> _abc_impl"


def test_config_naming_the_socket_callbacks(inspected):
    entry = inspected["broken:socket_config"]
    obj = _one(entry)
    assert entry["kind"] == "algorithm_config"
    assert obj["culprits"][0]["path"] == "config -> callbacks_class -> telemetry -> _socket"
    assert "error" not in obj["ray_inspect"]  # pointed at the member, not the whole config


def test_module_classes_travel_by_reference(inspected):
    """Imported as a module, the same class is shipped by reference: nothing to pickle fails."""
    obj = _one(inspected["clean:socket_module"])
    assert obj["travels_by"] == "reference" and obj["serializable"] is True


def test_config_carrying_a_large_array(inspected):
    obj = _one(inspected["broken:big"])
    assert obj["serializable"] is True and obj["size_bytes"] > 12 * MIB
    assert obj["dominant_member"]["path"] == "config -> env_config['lookup_table']"
    assert obj["dominant_member"]["type"] == "numpy.ndarray"
    assert obj["dominant_member"]["size_bytes"] >= 12 * MIB
    assert obj["largest_members"][0]["path"] == "config -> env_config"


def test_clean_targets_serialize(inspected):
    for key in CLEAN:
        entry = inspected[f"clean:{key}"]
        assert entry["status"] == "ok", entry
        for obj in entry["objects"]:
            assert obj["serializable"] is True, (key, obj)
            assert obj["size_bytes"] < 64 * 2**10
    assert inspected["clean:env_class"]["kind"] == "env_class"
    assert inspected["clean:callbacks"]["kind"] == "callbacks_class"
    assert inspected["clean:config"]["kind"] == "algorithm_config"


def test_section_is_json(inspected):
    json.dumps(list(inspected.values()))


@pytest.mark.parametrize("source,attr,stage,error", [
    ("import no_such_dependency_xyz\n", "x", "import",
     "ModuleNotFoundError: No module named 'no_such_dependency_xyz'"),
    ("raise RuntimeError('database unreachable')\n", "x", "import",
     "RuntimeError: database unreachable"),
    ("def f(:\n", "f", "import", "SyntaxError: invalid syntax"),
    ("import sys\nsys.exit(3)\n", "x", "import", "SystemExit: 3"),
    ("x = 1\n", "y", "resolve", "has no attribute 'y' and registers no env named 'y'"),
])
def test_import_errors_are_recorded_not_raised(tmp_path, source, attr, stage, error):
    path = tmp_path / "user_module.py"
    path.write_text(source)
    [entry] = collect([parse_target(f"{path}:{attr}")])
    assert entry["status"] == "error" and entry["stage"] == stage
    assert error in entry["error"]
    assert len(entry["error"].splitlines()) == 1


# --------------------------------------------------------------------------- the checks
def test_checks_on_the_inspected_targets(inspected):
    rld501, rld502 = _checks()
    snap = _snap(list(inspected.values()))
    result = run_check(rld501, snap)
    assert result.status == "fail"
    got = {f.subject: f.message for f in result.findings}
    assert set(got) == {f"target:{BROKEN[k]}" for k in ("lock", "registered", "socket", "socket_config")}
    assert "env_creator -> closure 'lock' is a _thread.lock" in got[f"target:{BROKEN['lock']}"]
    assert "MetricsCallbacks -> telemetry -> _socket is a socket.socket" in \
        got[f"target:{BROKEN['socket']}"]
    assert "config -> callbacks_class -> telemetry -> _socket" in got[f"target:{BROKEN['socket_config']}"]
    for f in result.findings:
        assert "`__init__`" in f.fix and "on first use" in f.fix
    result = run_check(rld502, snap)
    assert result.status == "warn"
    [finding] = result.findings
    assert finding.subject == f"target:{BROKEN['big']}"
    assert "config -> env_config['lookup_table'] (numpy.ndarray) holds 12.0 MiB" in finding.message
    assert finding.evidence["size_bytes"] > 12 * MIB and finding.evidence["max_bytes"] == 10 * MIB


def test_clean_targets_give_no_findings(inspected):
    snap = _snap([inspected[f"clean:{k}"] for k in CLEAN])
    for c in _checks():
        result = run_check(c, snap)
        assert result.status == "ok" and result.findings == [], result


def test_large_closure_threshold_is_a_param(inspected):
    _, rld502 = _checks()
    snap = _snap([inspected["broken:big"]])
    assert run_check(rld502, snap, params={"max_bytes": 20 * MIB}).findings == []
    assert len(run_check(rld502, _snap([inspected["clean:config"]]),
                         params={"max_bytes": 1024}).findings) == 1


def test_a_target_that_did_not_import_makes_both_checks_error(inspected):
    broken = {"target": "acme.env:make", "status": "error", "stage": "import",
              "error": "ModuleNotFoundError: No module named 'acme'", "objects": []}
    for c in _checks():
        result = run_check(c, _snap([inspected["broken:lock"], broken]))
        assert result.status == "error"
        assert "acme.env:make could not be imported: ModuleNotFoundError: No module named 'acme'" \
            in result.detail
        assert "the other 1 target(s) are withheld" in result.detail


def test_checks_need_the_targets_section():
    for c in _checks():
        assert c.requires == ("targets",)
        result = run_check(c, Snapshot({"schema": "rldoctor.snapshot/v1", "collectors": {}}))
        assert result.status == "skipped"
        result = run_check(c, Snapshot({"schema": "rldoctor.snapshot/v1", "collectors": {
            "targets": {"status": "timeout", "error": "inspecting x:y took longer than 30s"}}}))
        assert result.status == "error" and "took longer" in result.detail


# --------------------------------------------------------------------------- the CLI
def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PYTHONPATH"] = str(TESTS)
    env.update(extra)
    return env


def test_cli_diagnoses_the_broken_targets_without_a_cluster():
    # RAY_ADDRESS points nowhere: contacting a cluster would fail the run with exit 3.
    result = run_rldoctor("check", "--format", "json",
                          *[a for t in (BROKEN["lock"], BROKEN["socket"], BROKEN["big"],
                                        CLEAN["config"]) for a in ("--target", t)],
                          env=_env(RAY_ADDRESS="127.0.0.1:1"))
    assert result.code == 1, result
    report = result.json()
    statuses = {c["code"]: c["status"] for c in report["checks"]}
    assert statuses.pop("RLD501") == "fail" and statuses.pop("RLD502") == "warn"
    assert set(statuses.values()) == {"skipped"}
    assert report["source"]["kind"] == "targets"
    found = sorted((f["code"], f["severity"], f["subject"]) for f in report["findings"])
    assert found == sorted([("RLD501", "fail", f"target:{BROKEN['lock']}"),
                            ("RLD501", "fail", f"target:{BROKEN['socket']}"),
                            ("RLD502", "warn", f"target:{BROKEN['big']}")])
    messages = " ".join(f["message"] for f in report["findings"])
    assert "env_creator -> closure 'lock'" in messages
    assert "MetricsCallbacks -> telemetry -> _socket" in messages
    assert "config -> env_config['lookup_table']" in messages


def test_cli_clean_target_exits_0():
    result = run_rldoctor("check", "--target", CLEAN["env_creator"], "--target",
                          f"{TARGETS / 'clean_env.py'}:LockedCartPole", env=_env())
    assert result.code == 0, result
    assert "No findings." in result.stdout


def test_cli_import_error_is_a_check_error_not_a_crash(tmp_path):
    bad = tmp_path / "train.py"
    bad.write_text("import gymnasium\nimport no_such_dependency_xyz\n")
    result = run_rldoctor("check", "--format", "json", "--target", f"{bad}:env_creator",
                          "--target", BROKEN["lock"], env=_env())
    assert result.code == 1, result
    assert "Traceback" not in result.stderr
    checks = {c["code"]: c for c in result.json()["checks"]}
    for code in ("RLD501", "RLD502"):
        assert checks[code]["status"] == "error"
        assert "ModuleNotFoundError: No module named 'no_such_dependency_xyz'" in checks[code]["detail"]
        assert f"{bad}:2" in checks[code]["detail"]  # the user's line that raised


@pytest.mark.parametrize("target,says", [
    ("not-a-target", "expected MODULE:ATTR"),
    ("missing/train.py:config", "no such file"),
])
def test_cli_bad_target_is_usage_error(target, says):
    result = run_rldoctor("check", "--target", target, env=_env())
    assert result.code == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in result.stderr


def test_cli_target_with_from_adds_the_section_to_the_snapshot():
    result = run_rldoctor("check", "--from", str(FIXTURES / "node-dead.json"), "--format", "json",
                          "--target", BROKEN["lock"], env=_env())
    assert result.code == 1, result
    codes = {f["code"] for f in result.json()["findings"]}
    assert {"RLD101", "RLD501"} <= codes


def test_a_bad_target_is_one_usage_line_before_anything_is_read(tmp_path):
    """(Was: --help and the README mention --target, which could not fail.)"""
    missing = tmp_path / "nowhere.py"
    result = run_rldoctor("check", "--from", str(FIXTURES / "node-dead.json"),
                          "--target", f"{missing}:make_config", env=_env())
    assert result.code == 2, result
    assert result.stderr.strip().splitlines() == [
        f"rldoctor: --target '{missing}:make_config': no such file: {missing}"]


def test_explain_rld501_and_rld502():
    for code in ("RLD501", "RLD502"):
        result = run_rldoctor("explain", code)
        assert result.code == 0
        for section in ("Symptom:", "Cause:", "Fix:"):
            assert section in result.stdout
    assert "max_bytes = 10485760" in run_rldoctor("explain", "RLD502").stdout

