"""Hostile input, case by case (issue 49): what rldoctor reads is bounded (size, nesting,
integer digits, only regular files or stdin), what it is given on the command line is judged
before anything runs, and every refusal is one line with a documented exit code.

The mutation fuzzer over snapshots and bundles is tests/test_fuzz_inputs.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, RLDOCTOR, _clean_env, run_rldoctor

SNAPSHOT = FIXTURES / "node-faults.json"


def one_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result
    return lines[0]


def piped(*args: str, stdin: bytes, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([RLDOCTOR, *args], input=stdin, capture_output=True,
                          timeout=timeout, env=_clean_env())


# -- check --from: only regular files or stdin, bounded ---------------------------------------

@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "snap.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("what", ["fifo", "/dev/zero", "/dev/urandom"])
def test_check_from_a_fifo_or_a_device_is_one_line_and_never_reads_forever(what, fifo):
    given = str(fifo) if what == "fifo" else what
    started = time.monotonic()
    result = run_rldoctor("check", "--from", given, timeout=30)
    assert result.code == 3 and time.monotonic() - started < 20, result
    line = one_line(result)
    assert given in line and ("not a snapshot file" in line or "not a regular file" in line), line


@pytest.mark.parametrize("given", ["/dev/stdin", "-"])
def test_check_from_stdin_reads_the_input_once(given):
    """It used to read two bytes to look for a bundle, then the rest as JSON: "not valid JSON"."""
    from_file = run_rldoctor("check", "--from", str(SNAPSHOT), "--format", "json")
    result = piped("check", "--from", given, "--format", "json", stdin=SNAPSHOT.read_bytes())
    assert result.returncode == from_file.code, result.stderr
    assert json.loads(result.stdout)["findings"] == from_file.json()["findings"]


def test_a_bundle_on_stdin_is_read_as_a_bundle(tmp_path):
    from test_fuzz_inputs import _bundle, _manifest

    doc = json.loads(SNAPSHOT.read_text())
    path = tmp_path / "b.tar.gz"
    _bundle(path, _manifest(doc), json.dumps(doc))
    result = piped("check", "--from", "-", "--format", "json", stdin=path.read_bytes())
    assert result.returncode in (0, 1), result.stderr
    assert json.loads(result.stdout)["source"]["kind"] == "snapshot"


def test_a_snapshot_over_the_cap_is_refused_in_one_line_without_reading_it(tmp_path):
    from rldoctor.snapshot import MAX_SNAPSHOT_BYTES

    path = tmp_path / "huge.json"
    with open(path, "wb") as handle:  # sparse: no disk is used, and nothing should read it
        handle.truncate(MAX_SNAPSHOT_BYTES + 1)
    started = time.monotonic()
    result = run_rldoctor("check", "--from", str(path))
    assert result.code == 3 and time.monotonic() - started < 20, result
    assert "refusing a snapshot of" in one_line(result)


def test_a_snapshot_over_the_cap_on_stdin_is_refused_too(monkeypatch):
    import io

    from rldoctor import snapshot
    from rldoctor.errors import Undiagnosable

    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_BYTES", 1000)
    with pytest.raises(Undiagnosable, match="larger than"):
        snapshot._read_bounded(io.BytesIO(b"{" + b" " * 5000 + b"}"), "-")


def _deep(depth: int) -> str:
    return '{"schema": "rldoctor.snapshot/v1", "x": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("text,says", [
    (_deep(100_000), "nested too deep"),
    ('{"schema": "rldoctor.snapshot/v1", "nodes": [{"node_id": ' + "9" * 5000 + "}]}",
     "a number of 5000 digits"),
])
def test_deep_nests_and_huge_integers_are_one_line(text, says, tmp_path):
    path = tmp_path / "snap.json"
    path.write_text(text)
    result = run_rldoctor("check", "--from", str(path))
    assert result.code == 3 and says in one_line(result), result
    from test_fuzz_inputs import _bundle

    bundle = tmp_path / "b.tar.gz"
    _bundle(bundle, {"schema": "rldoctor.bundle/v1", "items": []}, text)
    result = run_rldoctor("check", "--from", str(bundle))
    assert result.code == 3 and says in one_line(result), result


def test_a_nest_under_the_parsers_bound_is_a_section_not_collected(tmp_path):
    """Deep, but not too deep to parse: the section is out of bounds, read as not collected."""
    doc = json.loads(SNAPSHOT.read_text())
    nest: object = 1
    for _ in range(200):
        nest = [nest]
    doc["nodes"][0]["labels"] = {"deep": nest}
    doc["extra"] = nest
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    result = run_rldoctor("check", "--from", str(path), "--format", "json")
    notes = result.json()["notes"]
    assert any("its 'nodes' has the wrong shape" in n and "nested more than" in n for n in notes)
    assert any("its 'extra' is out of bounds" in n for n in notes)


def test_every_recorded_snapshot_and_what_the_log_reader_makes_has_the_declared_shape():
    """The declared shapes (rldoctor.snapshot_shape) never take a section out of a good file."""
    from rldoctor.inputs.logdir import read_logs
    from rldoctor.inputs.runs import read_runs
    from rldoctor.snapshot_shape import conform

    docs = {p.name: json.loads(p.read_text()) for p in
            [*FIXTURES.glob("*.json"), *(FIXTURES / "smoke").glob("*.json")]
            if not p.name.endswith(".expected.json")}
    for session in (FIXTURES / "sessions").iterdir():
        if session.is_dir():
            docs[session.name] = json.loads(json.dumps(read_logs(str(session)), default=str))
    runs = [str(p) for p in (FIXTURES / "runs").iterdir() if p.is_dir()]
    docs["runs"] = {"runs": json.loads(json.dumps(read_runs(runs), default=str))}
    for name, doc in docs.items():
        before = list(doc.get("notes") or [])
        conform(doc, name)
        assert doc.get("notes", []) == before, doc["notes"][len(before):]


def test_the_json_report_is_strict_json(tmp_path):
    """A training's figure of Infinity or NaN reaches the report as a string, never as a bare
    Infinity that strict JSON parsers (jq, JavaScript) refuse; where a figure must be finite
    (a node's round trip) it is a wrong shape, read as not collected."""
    doc = json.loads((FIXTURES / "training-hung.json").read_text())
    runner = doc["training"]["trainings"][0]["runners"][0]
    runner["steps_per_s"] = float("inf")
    runner["queued_calls"] = float("nan")
    node = doc["nodes"][0]["node_id"]
    doc["network"]["nodes"].setdefault(node, {})["p50_ms"] = float("inf")
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    result = run_rldoctor("check", "--from", str(path), "--format", "json")

    def refuse(name):
        raise AssertionError(f"{name} in the JSON report")

    report = json.loads(result.stdout, parse_constant=refuse)
    runners = report["training"][0]["runners"]
    assert runners[0]["steps_per_s"] == "Infinity" and runners[0]["queued_calls"] == "NaN"
    assert report["training"][0]["env_steps_per_s"] == "Infinity"
    assert any("its 'network' has the wrong shape" in n and "finite number" in n
               for n in report["notes"])


# -- lint: only regular files, parsers bounded -------------------------------------------------

def test_lint_a_fifo_is_one_line_and_one_in_a_folder_is_skipped_with_a_note(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    result = run_rldoctor("lint", str(tmp_path / "pipe.py"), timeout=30)
    assert result.code == 3 and "a FIFO, not a regular file" in one_line(result), result
    folder = tmp_path / "project"
    folder.mkdir()
    os.mkfifo(folder / "pipe.py")
    (folder / "train.py").write_text("x = 1\n")
    result = run_rldoctor("lint", str(folder), timeout=30)
    assert result.code == 0, result  # the FIFO is skipped, not an input that failed
    assert f"skipped {folder / 'pipe.py'}: a FIFO" in one_line(result)
    assert "in 1 file(s)" in result.stdout


def _notebook(cells) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("name,text,says", [
    ("deep.ipynb", '{"cells": [' + "[" * 100_000 + "]" * 100_000 + "]}", "nested too deep"),
    ("digits.ipynb", '{"cells": [], "n": ' + "9" * 5000 + "}", "a number of 5000 digits"),
    ("cells.ipynb", _notebook([{"cell_type": "code", "source": [1, 2]}]),
     "the source of cell 1 is not text"),
    ("object.ipynb", _notebook([{"cell_type": "markdown", "source": "x"},
                                {"cell_type": "code", "source": {"a": 1}}]),
     "the source of cell 2 is not text"),
    ("digits.yaml", "a: " + "9" * 5000 + "\n", "more digits than Python reads"),
    ("deep.yaml", "a: " + "[" * 50_000 + "]" * 50_000 + "\n", "nested too deeply"),
])
def test_lint_inputs_that_would_raise_are_one_line(name, text, says, tmp_path):
    path = tmp_path / name
    path.write_text(text)
    result = run_rldoctor("lint", str(path))
    assert result.code == 3, result
    assert says in one_line(result) and says in result.stdout


def test_a_pep_263_latin_1_source_is_linted(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n"
                     b"from ray.rllib.algorithms.ppo import PPOConfig\n"
                     b"config = PPOConfig().rollouts(num_rollout_workers=2)\n")
    result = run_rldoctor("lint", str(path), "--format", "json")
    assert result.code == 1, result
    assert {f["code"] for f in result.findings()} == {"RLD801"}
    assert not result.json()["not_linted"] if "not_linted" in result.json() else True


def test_a_source_that_is_not_what_its_coding_line_says_is_one_line(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(b"# -*- coding: ascii -*-\nname = 'caf\xc3\xa9'\n")
    result = run_rldoctor("lint", str(path))
    assert result.code == 3 and "not ascii (its coding line) text" in one_line(result), result


@pytest.mark.parametrize("spec,says", [
    ({"headGroupSpec": "hello"}, "headGroupSpec is a string, not a mapping"),
    ({"headGroupSpec": {}, "workerGroupSpecs": "x"}, "workerGroupSpecs is a string"),
    ({"headGroupSpec": {}, "workerGroupSpecs": [3]}, "workerGroupSpecs[0] is a number, not a"),
])
def test_a_kuberay_manifest_of_the_wrong_shape_is_a_finding(spec, says, tmp_path):
    import yaml

    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                    "metadata": {"name": "x"}, "spec": spec}))
    result = run_rldoctor("lint", str(path), "--format", "json")
    assert result.code == 1 and "Traceback" not in result.stderr, result
    messages = [f["message"] for f in result.findings("RLD802")]
    assert any(says in m for m in messages), messages
    assert all(c["status"] != "error" for c in result.json()["checks"])


@pytest.mark.parametrize("cached", ["[1, 2]", '{"cache_version": 1, "modules": [1]}', '"x"',
                                    '{"modules": {"ray": 1}}'])
def test_a_lint_cache_that_holds_the_wrong_thing_is_read_afresh(cached, tmp_path):
    cache = tmp_path / "cache"
    script = tmp_path / "train.py"
    script.write_text("import ray\nray.init(_system_config={'object_timeout_milliseconds': 1})\n"
                      "from ray.rllib.algorithms.ppo import PPOConfig\n")
    env = {**_clean_env(), "RLDOCTOR_CACHE_DIR": str(cache), "HOME": str(tmp_path)}
    first = run_rldoctor("lint", str(script), "--format", "json", env=env)
    files = [p for p in cache.rglob("*.json")]
    assert files, "lint wrote no cache here: the test would prove nothing"
    for path in files:
        path.write_text(cached)
    again = run_rldoctor("lint", str(script), "--format", "json", env=env)
    assert again.code == first.code and "Traceback" not in again.stderr, again
    assert again.findings() == first.findings()


@pytest.mark.parametrize("text,says", [
    ("a = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deep"),
])
def test_an_ignore_file_nested_too_deep_is_one_line(text, says, tmp_path):
    config = tmp_path / "rldoctor.toml"
    config.write_text(text)
    result = run_rldoctor("check", "--from", str(SNAPSHOT), "--config", str(config))
    assert result.code == 2 and says in one_line(result), result


def test_an_ignore_file_that_is_not_a_regular_file_is_one_line(fifo):
    result = run_rldoctor("check", "--from", str(SNAPSHOT), "--config", str(fifo), timeout=30)
    assert result.code == 2 and "not a regular file" in one_line(result), result


def test_value_flow_is_linear_on_a_name_rebound_from_itself(tmp_path):
    """`c = {**c, "xN": 1}` 4,000 times (87 KB): 18.5 s and 1.26 GB before the bound."""
    from rldoctor.lint.document import lint_document

    lines = ["from ray.rllib.algorithms.ppo import PPOConfig", "c = {}"]
    lines += [f'c = {{**c, "x{i}": 1}}' for i in range(4000)]
    lines += ["PPOConfig().training(**c)"]
    path = tmp_path / "rebound.py"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 85_000
    started = time.process_time()
    doc = lint_document([str(path)])
    assert time.process_time() - started < 3.0  # about 0.5 s of CPU; 18.5 s before
    notes = doc["lint"]["files"][0]["python"]["notes"]
    assert notes and "`c` stands for more than 64 dicts" in notes[0]
    result = run_rldoctor("lint", str(path))
    assert result.code == 0 and "not followed:" in one_line(result), result


def test_a_name_bound_a_few_times_is_still_followed(tmp_path):
    """The bound only stops a runaway name: a config built in a few steps is judged as before."""
    path = tmp_path / "train.py"
    path.write_text("from ray.rllib.algorithms.ppo import PPOConfig\n"
                    "c = {}\nc = {**c, 'num_rollout_workers': 2}\nc = {**c, 'lr': 1e-3}\n"
                    "PPOConfig().env_runners(**c)\n")
    result = run_rldoctor("lint", str(path), "--format", "json")
    assert not any(n.startswith("not followed") for n in result.json()["notes"])


def test_lint_says_its_notes_on_stderr_once_and_keeps_stdout_for_findings():
    from rldoctor.install import NO_RAY_HERE
    from rldoctor.model import CheckResult, Note, Report
    from rldoctor.report.render.lint_text import render_lint_text, side_notes

    skipped = Note("RLD802", "Ray's own cluster YAML validator was skipped", {})
    results = [CheckResult("RLD802", "invalid-cluster-config", "ok", 0.0, "", notes=[skipped])] * 2
    report = Report(results=results, source={"files": 1},
                    notes=[f"{NO_RAY_HERE}: read the shipped table", "skipped x.py: a FIFO"])
    text = render_lint_text(report)
    assert NO_RAY_HERE not in text and "validator" not in text and "FIFO" not in text
    assert side_notes(report) == ["RLD802: Ray's own cluster YAML validator was skipped",
                                  f"{NO_RAY_HERE}: read the shipped table", "skipped x.py: a FIFO"]


# -- options and messages ---------------------------------------------------------------------

@pytest.mark.parametrize("address,says", [
    ("http://[::1", "does not parse as a URL"),
    ("http://%00", "%-escapes"),
    ("http://" + "a" * 10_000 + ":8265", "characters long"),
    ("127.0.0.1:99999", "the port 99999 is out of range (1-65535)"),
    ("http://127.0.0.1:70000", "out of range"),
    ("127.0.0.1:http", "the port 'http' is not a number"),
    ("just-a-word", "it has no port"),
    ("ftp://head:8265", "the scheme 'ftp' is not http or https"),
    ("bad host:6379", "is not a host name or IP address"),
    ("", "it is empty"),
])
def test_an_address_that_is_not_one_is_one_line_exit_3(address, says):
    """Exit 3, as a malformed address always was (tests/test_unreachable.py)."""
    for command in (["check"], ["collect", "--output", "/nonexistent/x.json"]):
        result = run_rldoctor(*command, "--address", address, timeout=30)
        line = one_line(result)
        assert result.code == 3 and says in line, result
        assert "GCS address)" not in line and "cannot reach" not in line
    env = {**_clean_env(), "RAY_ADDRESS": address or " "}
    result = run_rldoctor("check", env=env, timeout=30)
    assert result.code == 3 and "RAY_ADDRESS" in one_line(result), result


@pytest.mark.parametrize("address", ["10.0.0.1:6379", "[::1]:6379", "head.example:6379",
                                     "https://head:8265", "http://[::1]:8265", "auto", "AUTO"])
def test_real_addresses_pass_the_judgement(address):
    from rldoctor.address import problem

    assert problem(address) is None


def test_an_unreachable_host_is_not_blamed_on_something_that_accepts_connections(monkeypatch):
    from rldoctor.cluster import auth
    from rldoctor.errors import Undiagnosable
    from localcluster import free_ports

    monkeypatch.setattr(auth, "ask_gcs", lambda address, token: "silent")
    monkeypatch.setattr(auth, "PROBE_TIMEOUT_S", 1.0)
    closed = free_ports(1)[0]  # nothing listens: no connection
    with pytest.raises(Undiagnosable) as caught:
        auth.decide(f"127.0.0.1:{closed}")
    assert "cannot reach" in str(caught.value) and "accepts connections" not in str(caught.value)
    import socket

    with socket.socket() as server:  # something listens but never speaks Ray
        server.bind(("127.0.0.1", 0))
        server.listen()
        with pytest.raises(Undiagnosable) as caught:
            auth.decide(f"127.0.0.1:{server.getsockname()[1]}")
    assert "accepts connections there" in str(caught.value)


@pytest.mark.parametrize("option,value", [("--check-timeout", "nan"), ("--check-timeout", "inf"),
                                          ("--check-timeout", "1e308"), ("--timeout", "nan"),
                                          ("--timeout", "-inf")])
def test_a_timeout_that_is_not_a_finite_number_is_a_usage_error(option, value):
    result = run_rldoctor("check", "--from", str(SNAPSHOT), option, value)
    assert result.code == 2 and "Traceback" not in result.stderr, result
    assert f"Invalid value for '{option}'" in result.stderr


@pytest.mark.parametrize("setting,says", [
    ("RLD201.warn_ms=abc", "expected a finite number"),
    ("RLD201.warn_ms=NaN", "expected a finite number"),
    ("RLD201.warn_ms=true", "expected a finite number"),
    ("RLD401.fail_at_restarts=2.5", "expected a whole number"),
])
def test_a_setting_of_the_wrong_kind_is_refused_before_anything_is_read(setting, says):
    result = run_rldoctor("check", "--from", "/nonexistent/snap.json", "--set", setting)
    assert result.code == 2 and says in one_line(result), result  # 2: before the file (3)


def test_a_setting_of_the_right_kind_still_applies(tmp_path):
    ok = run_rldoctor("check", "--from", str(FIXTURES / "network-delayed.json"), "--format",
                      "json", "--set", "RLD201.warn_ms=100000", "--set", "RLD201.fail_ms=200000",
                      "--set", "RLD203.zone_label=123")
    assert ok.code in (0, 1) and not ok.findings("RLD201"), ok


def test_check_and_lint_take_text_and_table_alike(tmp_path):
    table = run_rldoctor("check", "--from", str(SNAPSHOT), "--format", "table")
    text = run_rldoctor("check", "--from", str(SNAPSHOT), "--format", "text")
    assert table.code == text.code and _no_times(table.stdout) == _no_times(text.stdout)
    script = tmp_path / "train.py"
    script.write_text("from ray.rllib.algorithms.ppo import PPOConfig\n"
                      "c = PPOConfig().rollouts(num_rollout_workers=2)\n")
    as_text = run_rldoctor("lint", str(script), "--format", "text")
    as_table = run_rldoctor("lint", str(script), "--format", "table")
    assert as_text.code == as_table.code == 1 and as_text.stdout == as_table.stdout


def _no_times(text: str) -> str:
    return re.sub(r"\d+\.\d+s", "", text)


def test_lint_diff_exits_as_lint_does(tmp_path):
    """--diff prints the fixes and exits as lint would without it: documented in the table."""
    script = tmp_path / "train.py"
    script.write_text("from ray.rllib.algorithms.ppo import PPOConfig\n"
                      "c = PPOConfig().rollouts(num_rollout_workers=2)\n")
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    for path in (script, clean):
        plain = run_rldoctor("lint", str(path))
        diff = run_rldoctor("lint", "--diff", str(path))
        assert diff.code == plain.code, (plain, diff)
    assert run_rldoctor("lint", "--diff", str(script), "--fail-on", "fail").code == 1
    assert script.read_text().count("rollouts") == 1  # --diff changes nothing


def test_collect_output_refuses_an_existing_file_without_force(tmp_path):
    target = tmp_path / "snap.json"
    target.write_text("keep me")
    session = str(FIXTURES / "sessions" / "env-raises")
    result = run_rldoctor("collect", "--output", str(target), "--from", session)
    assert result.code == 3 and "pass --force" in one_line(result), result
    assert target.read_text() == "keep me"
    result = run_rldoctor("collect", "--output", str(target), "--from", session, "--force")
    assert result.code == 0 and json.loads(target.read_text())["schema"].startswith("rldoctor")
    # what is no file (/dev/null, a pipe) is written into as ever, no --force needed
    assert run_rldoctor("collect", "--output", os.devnull, "--from", session).code == 0


def test_watch_counts_its_failed_rounds():
    from test_watch_units import fixture, watch_of
    from rldoctor.watch.rounds import RoundFailed

    doc = fixture("healthy-3node")
    watch, _, _ = watch_of([RoundFailed("cannot reach"), doc, RoundFailed("cannot reach")])
    for _ in range(3):
        watch.one_round()
    assert (watch.rounds, watch.failed) == (1, 2)


def test_the_commands_page_has_one_table_of_formats_and_exit_codes():
    from conftest import ROOT
    from rldoctor.report.render import FORMATS, LINT_FORMATS

    text = (ROOT / "docs" / "commands.md").read_text()
    section = text.split("## Formats and exit codes", 1)[1].split("\n## ", 1)[0]
    for command in ("check", "lint", "collect", "watch"):
        assert f"| `{command}`" in section, command
    for fmt in set(FORMATS) | set(LINT_FORMATS):
        assert f"`{fmt}`" in section, fmt
    for code in ("0", "1", "2", "3", "130"):
        assert f"| {code} |" in section, code


def test_address_and_setting_values_fuzzed_never_raise_anything_but_one_line():
    """2,000 seeded random option values: an address is judged or refused in one line, a
    --set value applies or is a usage error; nothing else escapes."""
    import random

    from rldoctor.address import check
    from rldoctor.commands._options import check_params
    from rldoctor.engine.pipeline import Diagnosis
    from rldoctor.errors import RldoctorError

    from rldoctor.engine.registry import load_registry

    registry = load_registry()
    rng = random.Random(49)
    alphabet = "abc:/[]%@.0123456789-_ \x00\u202e\udcffhtps" + "9" * 5
    parts = ["http://", "https://", "[::1]", "127.0.0.1", ":", "%00", "auto", "9" * 30, "[", "]"]
    for _ in range(1000):
        text = "".join(rng.choice(parts) if rng.random() < 0.3 else rng.choice(alphabet)
                       for _ in range(rng.randint(0, 40)))
        try:
            check(text)
        except RldoctorError as exc:
            assert "\n" not in str(exc) and len(str(exc)) < 600, repr(text)
    for _ in range(1000):
        value = "".join(rng.choice(alphabet + '{}"e+') for _ in range(rng.randint(0, 12)))
        try:
            Diagnosis.from_options(params=check_params((f"RLD201.warn_ms={value}",), None),
                                   read_mutes=False, registry=registry)
        except RldoctorError as exc:
            assert "\n" not in str(exc), repr(value)


def test_a_bundle_is_called_a_bundle_in_the_reports_title(tmp_path):
    bundle = tmp_path / "incident.tar.gz"
    made = run_rldoctor("collect", "--bundle", str(bundle), "--from",
                        str(FIXTURES / "sessions" / "env-raises"))
    assert made.code == 0, made
    report = run_rldoctor("check", "--from", str(bundle))
    assert report.stdout.startswith(f"rldoctor report for bundle {bundle} at "), report
    source = run_rldoctor("check", "--from", str(bundle), "--format", "json").json()["source"]
    assert source["kind"] == "snapshot" and source["form"] == "bundle"  # kind as before
    plain = run_rldoctor("check", "--from", str(FIXTURES / "node-dead.json"))
    assert plain.stdout.startswith("rldoctor report for snapshot "), plain
