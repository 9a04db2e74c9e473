"""`check --from DIR`: real session directories (fixtures/sessions/, recorded by
tests/record_sessions.py from real clusters) read into a snapshot, diagnosed, and bad input.

Each fixture's expected facts and findings are in fixtures/sessions/<name>.expected.json,
written by hand after reading the session's logs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor.errors import Undiagnosable
from rldoctor.inputs.logdir import read_logs
from rldoctor.inputs.logdir import files as F
from rldoctor.registry import load_registry
from rldoctor.engine.runner import run_checks
from rldoctor.snapshot import validate

SESSIONS = FIXTURES / "sessions"
NAMES = sorted(p.name for p in SESSIONS.iterdir() if p.is_dir())


class _Ran:
    def __init__(self, code, stdout, stderr):
        self.code, self.stdout, self.stderr = code, stdout, stderr

    def json(self):
        return json.loads(self.stdout)

    def findings(self, code=None):
        return [f for f in self.json()["findings"] if code is None or f["code"] == code]

    def __repr__(self):
        return f"<exit {self.code}\n{self.stdout[-3000:]}\n{self.stderr[-2000:]}>"


def cli(*args: str) -> _Ran:
    """The CLI in this process (no interpreter start per call); only for runs that end with
    a report, since a usage error leaves through os._exit (those go through run_rldoctor)."""
    from unittest import mock

    from click.testing import CliRunner

    from rldoctor import cli as the_cli

    def leave(code):  # the CLI leaves through os._exit once ray is imported (other tests do)
        raise SystemExit(code)

    with mock.patch.object(the_cli, "_exit", leave):
        done = CliRunner().invoke(the_cli.main, list(args), catch_exceptions=False)
    return _Ran(done.exit_code, done.stdout, done.stderr)


def expected(name: str) -> dict:
    return json.loads((SESSIONS / f"{name}.expected.json").read_text())


def tree_hash(root: Path) -> str:
    """Every path, size, mode and byte under `root` (and mtimes: a read must not touch)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        digest.update(f"{path.relative_to(root)}|{st.st_size}|{st.st_mode}|{st.st_mtime_ns}".encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def copy_of(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(SESSIONS / name, target)
    return target


def test_every_session_fixture_has_expectations_and_stays_small():
    assert {"env-raises", "node-killed", "ray240-env-raises"} <= set(NAMES)
    for name in NAMES:
        assert (SESSIONS / f"{name}.expected.json").exists(), name
        size = sum(p.stat().st_size for p in (SESSIONS / name).rglob("*") if p.is_file())
        assert size < 300 * 1024, (name, size)


@pytest.mark.parametrize("name", NAMES)
def test_session_fixture_gives_the_expected_facts(name):
    want = expected(name)
    doc = read_logs(str(SESSIONS / name))
    assert doc["schema"] == "rldoctor.snapshot/v1" and doc["source"]["kind"] == "logs"
    assert doc["logs"]["ray_version"] == want["ray_version"]
    got_nodes = sorted((n["node_id"], n["ip"], n["is_head"], n["state"], n["death_reason"])
                       for n in doc["nodes"])
    assert got_nodes == sorted((n["node_id"], n["ip"], n["is_head"], n["state"], n["death_reason"])
                               for n in want["nodes"])
    dead = sorted((w["worker_id"], w["pid"], w["exit_type"], w["job_id"], w["node_id"])
                  for w in doc["workers"]["dead"])
    assert dead == sorted((w["worker_id"], w["pid"], w["exit_type"], w["job_id"], w["node_id"])
                          for w in want["dead_workers"])
    jobs = {j["submission_id"]: j for j in doc["jobs"]["jobs"]}
    assert set(jobs) == {j["submission_id"] for j in want["jobs"]}
    for job_want in want["jobs"]:
        job = jobs[job_want["submission_id"]]
        for key in ("job_id", "status", "driver_exit_code"):
            assert job[key] == job_want[key], (key, job[key])
        assert job["type"] == "SUBMISSION"
        if "entrypoint" in job_want:  # not every release writes it into the logs
            assert job["entrypoint"] == job_want["entrypoint"]
        else:
            assert "tests/ppo_job.py" in job["entrypoint"] and "--fail-fast" in job["entrypoint"]
        if "driver_log_ends_with" in job_want:  # a job that ended well may print nothing
            assert job["driver_log_tail"][-1].endswith(job_want["driver_log_ends_with"])
        assert job["start_time"] < job["end_time"] <= doc["jobs"]["now"]
        chain = [(w["class_name"], w["pid"], w["actor_id"], w["node_id"]) for w in job["worker_logs"]]
        assert chain == [(c["class_name"], c["pid"], c["actor_id"], c["node_id"])
                         for c in job_want["chain"]]
        for worker, chain_want in zip(job["worker_logs"], job_want["chain"]):
            assert any(chain_want["lines_hold"] in line for line in worker["lines"]), worker["lines"][-5:]


@pytest.mark.parametrize("name", NAMES)
def test_session_fixture_gives_exactly_the_expected_findings(name):
    want = expected(name)
    snap = validate(read_logs(str(SESSIONS / name)), name)
    results = run_checks(load_registry(include_plugins=False).checks, snap)
    assert [r for r in results if r.status == "error"] == []
    got = sorted((f.code, f.severity.label, f.subject) for r in results for f in r.findings)
    assert got == sorted((f["code"], f["severity"], f["subject"]) for f in want["findings"])
    by_key = {(f.code, f.subject): f for r in results for f in r.findings}
    for f_want in want["findings"]:  # the root cause each message must quote, and what it must not
        message = by_key[(f_want["code"], f_want["subject"])].message
        for part in f_want.get("message_holds", ()):
            assert part in message, (name, part, message)
        for part in f_want.get("message_lacks", ()):
            assert part not in message, (name, part, message)
    skipped = {r.code: r.detail for r in results if r.status == "skipped"}
    for code in ("RLD102", "RLD201", "RLD301", "RLD605", "RLD701"):  # need a live cluster
        assert "not in a cluster's logs" in skipped[code], (code, skipped[code])


def test_the_node_killed_session_names_the_dead_node_with_why_and_when():
    doc = read_logs(str(SESSIONS / "node-killed"))
    dead = [n for n in doc["nodes"] if not n["alive"]]
    assert len(dead) == 1 and dead[0]["ip"] == "127.0.0.12"
    assert dead[0]["death_message"] == "health check failed due to missing too many heartbeats"
    assert dead[0]["start_time"] < dead[0]["end_time"] <= doc["jobs"]["now"]
    runner = next(a for a in doc["actors"]["items"] if a["actor_id"].startswith("a6e5a1c9"))
    assert runner["class_name"] == "SingleAgentEnvRunner" and runner["node_id"] == dead[0]["node_id"]
    assert runner["death_cause"]["reason"] == "NODE_DIED"
    events = {e["label"] for e in doc["events"]["items"]}
    assert "RAY_NODE_REMOVED" in events


def test_the_env_raises_session_holds_the_users_exception_and_the_runner_that_raised():
    doc = read_logs(str(SESSIONS / "env-raises"))
    job = doc["jobs"]["jobs"][0]
    lines = job["worker_logs"][0]["lines"]
    assert any("RuntimeError: warehouse sensor 7 returned garbage" in x for x in lines)
    assert any('tests/ppo_job.py", line' in x and "read_the_sensor" in x for x in lines)
    runner = next(a for a in doc["actors"]["items"] if a["actor_id"] == job["worker_logs"][0]["actor_id"])
    assert runner["state"] == "DEAD" and runner["death_cause"]["reason"] == "WORKER_DIED"
    assert "exit code 1" in runner["death_cause"]["message"]
    assert job["driver"]["ip"] == "127.0.0.10" and job["driver"]["pid"] == 17942


def test_the_head_session_alone_still_tells_the_job_and_the_dead_node(tmp_path):
    """The head's session directory (what a log volume of the head pod keeps)."""
    head = next((SESSIONS / "node-killed" / "node0").iterdir())
    doc = read_logs(str(head))
    assert [n["ip"] for n in doc["nodes"] if not n["alive"]] == ["127.0.0.12"]
    assert doc["jobs"]["jobs"][0]["status"] == "FAILED"
    assert any("no logs of 2 node(s)" in note for note in doc["notes"]), doc["notes"]
    worker = doc["jobs"]["jobs"][0]["worker_logs"][0]
    assert worker["lines"] == [] and "its node's logs are missing" in worker["note"]
    logs_dir = head / "logs"  # its logs/ directory alone reads the same
    assert read_logs(str(logs_dir))["nodes"] == doc["nodes"]


def test_a_secret_in_a_worker_err_line_never_reaches_the_report_or_the_bundle(tmp_path):
    secret = expected("env-raises")["secret"]
    source = SESSIONS / "env-raises"
    assert any(secret in p.read_text(errors="replace") for p in source.rglob("worker-*.err"))
    for fmt in ("json", "table", "markdown"):
        out = cli("check", "--from", str(source), "--format", fmt)
        assert out.code in (0, 1), out
        assert secret not in out.stdout + out.stderr
    bundle = tmp_path / "b.tar.gz"
    made = run_rldoctor("collect", "--bundle", str(bundle), "--from", str(source))
    assert made.code == 0, made
    with tarfile.open(bundle) as tar:
        texts = [tar.extractfile(m).read().decode("utf-8", "replace")
                 for m in tar.getmembers() if m.isfile()]
    assert all(secret not in t for t in texts)
    assert any("warehouse_api_key=***redacted***" in t for t in texts)  # the line itself is kept
    snap = tmp_path / "s.json"
    assert cli("collect", "--output", str(snap), "--from", str(source)).code == 0
    assert secret not in snap.read_text()


def test_nothing_is_written_into_the_directory(tmp_path):
    directory = copy_of("node-killed", tmp_path)
    before = tree_hash(directory)
    assert cli("check", "--from", str(directory)).code == 1
    assert cli("check", "--from", str(directory / "node0"), "--format", "json").code == 1
    assert cli("collect", "--output", str(tmp_path / "s.json"), "--from",
                        str(directory)).code == 0
    assert run_rldoctor("collect", "--bundle", str(tmp_path / "b.tar.gz"), "--from",
                        str(directory)).code == 0
    assert tree_hash(directory) == before


def test_bundle_and_snapshot_made_from_logs_read_back_with_the_same_findings(tmp_path):
    source = SESSIONS / "node-killed"
    direct = cli("check", "--from", str(source), "--format", "json")
    bundle, snap = tmp_path / "b.tar.gz", tmp_path / "s.json"
    assert run_rldoctor("collect", "--bundle", str(bundle), "--from", str(source)).code == 0
    assert cli("collect", "--output", str(snap), "--from", str(source)).code == 0
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
    assert any(n.endswith("/logs/gcs_server.out") for n in names)
    assert any(n.endswith("/logs/job-driver-pm-node-killed.log") for n in names)
    assert any("/logs/workers/worker-" in n and "-26682.err" in n for n in names), names
    for path in (bundle, snap):
        back = cli("check", "--from", str(path), "--format", "json")
        assert back.code == direct.code == 1
        assert [(f["code"], f["subject"]) for f in back.findings()] == \
            [(f["code"], f["subject"]) for f in direct.findings()]


# -- bad input --------------------------------------------------------------------------------

def test_an_empty_directory_and_one_without_a_session_exit_3_with_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    other = tmp_path / "other"
    (other / "logs").mkdir(parents=True)
    (other / "logs" / "app.log").write_text("not ray\n")
    (other / "notes.txt").write_text("hello\n")
    for directory in (empty, other):
        out = run_rldoctor("check", "--from", str(directory))
        assert out.code == 3, out
        assert out.stdout == "" and len(out.stderr.strip().splitlines()) == 1, out
        assert "holds no Ray session directory" in out.stderr
        assert "Traceback" not in out.stderr
    with pytest.raises(Undiagnosable):
        read_logs(str(empty))
    assert run_rldoctor("collect", "--output", str(tmp_path / "s.json"), "--from",
                        str(empty)).code == 3
    assert not (tmp_path / "s.json").exists()


def test_garbage_empty_half_written_and_binary_files_are_noted_never_an_error(tmp_path):
    directory = copy_of("env-raises", tmp_path)
    logs = next((directory / "node0").iterdir()) / "logs"
    node1 = next((directory / "node1").iterdir()) / "logs"
    (logs / "raylet.out").write_bytes(b"")  # the head's raylet log, empty
    (node1 / "raylet.out").write_bytes(b"\x00\x01\x02ELF" + os.urandom(4096))  # binary
    gcs = (logs / "gcs_server.out").read_bytes()
    (logs / "gcs_server.out").write_bytes(gcs[:-40])  # half-written: its last line cut
    (logs / "job-driver-garbage.log").write_bytes(b"\xff\xfe garbage \x80\x81\n" * 50)
    (logs / ("worker-" + "ab" * 28 + "-02000000-1.err")).write_text("")  # an empty worker log
    unreadable = logs / "events" / "event_GCS.log"
    unreadable.chmod(0)
    try:
        out = cli("check", "--from", str(directory), "--format", "json")
    finally:
        unreadable.chmod(0o644)
    assert out.code in (0, 1), out
    report = out.json()
    notes = " ".join(report["notes"])
    assert "not read whole" in notes
    assert "raylet.out: empty" in notes
    assert "not text (binary data)" in notes
    assert "its last line has no end" in notes
    if os.geteuid() != 0:  # root reads a file of mode 0 anyway
        assert "event_GCS.log: unreadable" in notes
    jobs = {j["submission_id"] for j in read_logs(str(directory))["jobs"]["jobs"]}
    assert "pm-env-raises" in jobs and "garbage" in jobs  # a driver log of garbage: a job, no crash
    table = cli("check", "--from", str(directory))
    assert "not read whole" in table.stdout


def test_a_session_of_another_ray_version_is_read_and_says_so(tmp_path):
    directory = copy_of("env-raises", tmp_path)
    gcs = next((directory / "node0").iterdir()) / "logs" / "gcs_server.out"
    gcs.write_text(gcs.read_text().replace("ray_version=2.60.0", "ray_version=2.31.0"))
    doc = read_logs(str(directory))
    assert doc["logs"]["ray_version"] == "2.31.0"
    assert any("Ray 2.31.0 is outside the releases" in n for n in doc["notes"])
    assert doc["jobs"]["jobs"][0]["status"] == "FAILED"  # what it knows, it still reads


def test_a_node_whose_logs_are_missing_is_named_and_the_rest_is_read(tmp_path):
    directory = copy_of("node-killed", tmp_path)
    shutil.rmtree(directory / "node2")  # the killed node's pod is gone with its logs
    out = cli("check", "--from", str(directory), "--format", "json")
    assert out.code == 1, out
    assert [f["subject"] for f in out.findings("RLD101")] == [
        "node:6d98ee7dc5105165041e0c4079ab03fd0beddbd01db731d0b1bc969c"]
    assert any("no logs of 1 node(s)" in n and "127.0.0.12" in n for n in out.json()["notes"])


def test_a_directory_without_the_heads_logs_says_what_it_cannot_tell(tmp_path):
    directory = copy_of("env-raises", tmp_path)
    shutil.rmtree(directory / "node0")
    doc = read_logs(str(directory))
    assert any("no gcs_server.out" in n for n in doc["notes"])
    assert {n["node_id"][:8] for n in doc["nodes"]} == {"aa26f0c3", "82f5a2bf"}  # from raylets


# -- formats ----------------------------------------------------------------------------------

def _json_line(raw: str) -> str:
    """A C++ log line as Ray writes it with RAY_BACKEND_LOG_JSON=1."""
    from rldoctor.raylog.lines import FIELD, _CPP

    m = _CPP.match(raw)
    if not m:
        return raw
    stamp, millis, level, pid, _tid, component, text = m.groups()
    record = {"asctime": f"{stamp},{millis}", "levelname": level, "message": text,
              "component": component or "gcs_server", "pid": int(pid)}
    record.update(dict(FIELD.findall(text)))
    return json.dumps(record)


def test_json_log_lines_read_like_plain_ones(tmp_path):
    directory = copy_of("node-killed", tmp_path)
    for path in directory.rglob("*.out"):
        if path.name.startswith(("gcs_server", "raylet")):
            path.write_text("\n".join(_json_line(x) for x in path.read_text().splitlines()) + "\n")
    plain, as_json = read_logs(str(SESSIONS / "node-killed")), read_logs(str(directory))
    for section in ("nodes", "workers"):
        assert as_json[section] == plain[section]
    assert [a["death_cause"] for a in as_json["actors"]["items"]] == \
        [a["death_cause"] for a in plain["actors"]["items"]]


def test_rotated_siblings_are_read_with_the_current_file(tmp_path):
    directory = copy_of("node-killed", tmp_path)
    logs = next((directory / "node0").iterdir()) / "logs"
    lines = (logs / "gcs_server.out").read_text().splitlines(keepends=True)
    half = len(lines) // 2
    (logs / "gcs_server.out.1").write_text("".join(lines[:half]))  # the older part, rotated
    (logs / "gcs_server.out").write_text("".join(lines[half:]))
    got = read_logs(str(directory))
    want = read_logs(str(SESSIONS / "node-killed"))
    assert got["nodes"] == want["nodes"] and got["jobs"]["jobs"][0]["job_id"] == "02000000"


def test_a_file_over_the_byte_budget_is_read_from_its_end_and_said(tmp_path):
    directory = copy_of("node-killed", tmp_path)
    gcs = next((directory / "node0").iterdir()) / "logs" / "gcs_server.out"
    text = gcs.read_text()
    filler = "[2026-12-03 08:05:00,000 I 1 1] (gcs_server) filler.cc:1: nothing to see\n" * 20000
    head, tail = text[:text.index("Health check failed")], text[text.index("Health check failed"):]
    head = head[:head.rindex("\n") + 1]
    gcs.write_text(head + filler + tail)
    budget = F.Budget(total=64 * 2**20, per_file=64 * 1024)
    doc = read_logs(str(directory), budget=budget)
    assert [n["ip"] for n in doc["nodes"] if not n["alive"]] == ["127.0.0.12"]  # from its end
    assert {n["ip"] for n in doc["nodes"]} == {"127.0.0.10", "127.0.0.11", "127.0.0.12"}  # its start
    assert any("gcs_server.out" in p["file"] and "byte budget" in p["problem"]
               for p in doc["logs"]["problems"])


def test_since_bounds_the_jobs_counted_back_from_the_logs_end(tmp_path):
    source = str(SESSIONS / "env-raises")
    assert [j["submission_id"] for j in read_logs(source, window_s=60)["jobs"]["jobs"]] == ["pm-env-raises"]
    directory = copy_of("env-raises", tmp_path)  # the cluster ran on for two hours after the job
    gcs = next((directory / "node0").iterdir()) / "logs" / "gcs_server.out"
    with gcs.open("a") as f:
        f.write("[2026-12-03 10:04:00,000 I 13582 13582] (gcs_server) gcs_server_main.cc:266: "
                "GCS server received SIGTERM, shutting down...\n")
    assert [j["submission_id"] for j in read_logs(str(directory))["jobs"]["jobs"]] == ["pm-env-raises"]
    doc = read_logs(str(directory), window_s=3600)
    assert doc["jobs"]["jobs"] == [] and "ended more than 3600s" in doc["jobs"]["notes"][0]
    out = cli("check", "--from", str(directory), "--since", "1h", "--format", "json")
    assert out.code in (0, 1), out
    bad = run_rldoctor("check", "--from", source, "--since", "yesterday")
    assert bad.code == 2 and "--since 'yesterday'" in bad.stderr, bad
    ok = cli("check", "--from", source, "--since", "30m", "--format", "json")
    assert ok.code in (0, 1) and ok.json()["source"]["kind"] == "logs"


def test_the_reader_imports_no_ray():
    import subprocess

    code = ("import sys; from rldoctor.inputs.logdir import read_logs; "
            f"read_logs({str(SESSIONS / 'env-raises')!r}); "
            "print('ray' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_a_folder_of_several_nodes_is_found_at_any_depth_up_to_four(tmp_path):
    volume = tmp_path / "volume" / "cluster-a"
    volume.mkdir(parents=True)
    for node in ("node0", "node1", "node2"):
        shutil.copytree(SESSIONS / "node-killed" / node, volume / "pods" / node)
    sessions = F.find_sessions(str(tmp_path / "volume"))
    assert len(sessions) == 3
    assert len(read_logs(str(tmp_path / "volume"))["nodes"]) == 3


# -- RLD405 from logs: the same chain as on the live cluster ------------------------------------

def _rld405(name: str, tmp_path=None) -> dict:
    out = cli("check", "--from", str(SESSIONS / name), "--format", "json")
    assert out.code == 1, out
    found = out.findings("RLD405")
    assert len(found) == 1, out
    return found[0]


def test_rld405_from_logs_names_the_users_exception_its_frame_and_the_runner():
    finding = _rld405("env-raises")
    assert finding["subject"] == "job:pm-env-raises"
    message = finding["message"]
    for part in ("RuntimeError: warehouse sensor 7 returned garbage", "ppo_job.py:78 in read_the_sensor",
                 "SingleAgentEnvRunner", "pid 18829", "127.0.0.12"):
        assert part in message, (part, message)
    evidence = finding["evidence"]
    assert evidence["root_cause"] == "user_error" and evidence["job_id"] == "02000000"
    assert evidence["worker"]["node_id"].startswith("82f5a2bf")
    assert "system error" not in message


def test_rld405_from_logs_ties_the_failed_job_to_the_killed_node():
    finding = _rld405("node-killed")
    assert finding["subject"] == "job:pm-node-killed"
    assert "node 6d98ee7dc510 (127.0.0.12) died" in finding["message"]
    assert "UNEXPECTED_TERMINATION" in finding["message"]
    assert finding["evidence"]["node"]["node_id"] == "6d98ee7dc5105165041e0c4079ab03fd0beddbd01db731d0b1bc969c"
    assert "temporarily" not in finding["message"]  # Ray's word for a runner whose node is dead


def test_rld405_from_a_ray_240_session_names_the_job_the_runner_and_its_node():
    finding = _rld405("ray240-env-raises")
    worker = finding["evidence"]["worker"]
    assert finding["evidence"]["job_id"] == "02000000"
    assert (worker["class_name"], worker["pid"], worker["ip"]) == ("SingleAgentEnvRunner", 3749,
                                                                    "127.0.0.12")
    # Ray 2.40 re-raises the env's error in the driver as RayTaskError(RuntimeError) whose header is
    # `ray::SingleAgentEnvRunner.apply() (pid=...)`: the root cause is the remote traceback's last
    # exception and its innermost user frame, not the header nor the driver's own frame
    exception = finding["evidence"]["exception"]
    assert exception["type"] == "RuntimeError"
    assert exception["message"] == "warehouse sensor 7 returned garbage: b'\\xff\\x00' at step 51"
    assert exception["frame"]["line"] == 78 and exception["frame"]["func"] == "read_the_sensor"
    assert finding["evidence"]["root_cause"] == "user_error"
    assert "ppo_job.py:78 in read_the_sensor" in finding["fix"]
    for wrong in ("ray::", "^^^", "ppo_job.py:163", "in main"):
        assert wrong not in finding["message"], (wrong, finding["message"])
    # what this release does not write into its logs is said
    assert finding["evidence"]["not_recorded"] == [
        "the job's entrypoint: the job-driver log of Ray 2.40.0 does not print it"]


def test_rld405_names_the_jobs_command_from_its_script_on():
    finding = _rld405("env-raises")
    assert finding["message"].startswith(
        "job pm-env-raises (ppo_job.py --address 127.0.0.10:59969 --runners 2 --raise-runner 1 ")
    assert "not_recorded" not in finding["evidence"]


def test_the_table_says_once_which_figures_logs_cannot_give():
    out = cli("check", "--from", str(SESSIONS / "node-killed"))
    assert out.code == 1, out
    assert ("not in a cluster's logs (shown as -): hosts, network, object_store, versions; "
            "give --address for a live cluster") in out.stdout
    assert "check(s) need a live cluster: give --address (this report is read from logs)" in out.stdout
    assert out.stdout.startswith("rldoctor report for logs ")


def test_a_raylet_that_crashed_leaves_its_last_words_on_its_node(tmp_path):
    directory = copy_of("node-killed", tmp_path)
    err = next((directory / "node2").iterdir()) / "logs" / "raylet.err"
    err.write_text("[2026-12-03 08:06:58,001 E 26001 26001] (raylet) logging.cc:469: *** SIGSEGV "
                   "received at time=1796285218 on cpu 1 ***\n"
                   "[2026-12-03 08:06:58,001 E 26001 26001] (raylet) logging.cc:469: PC: @ 0x5 (unknown)\n")
    node = next(n for n in read_logs(str(directory))["nodes"] if not n["alive"])
    assert "*** SIGSEGV received" in node["raylet_crash"]
    assert all("raylet_crash" not in n for n in read_logs(str(SESSIONS / "node-killed"))["nodes"])


def test_the_memory_monitors_kill_is_read_from_its_lines_across_raylet_and_gcs():
    doc = read_logs(str(SESSIONS / "oom-killed"))
    worker = doc["workers"]["dead"][0]
    assert worker["exit_type"] == "NODE_OUT_OF_MEMORY"
    assert "OOM kill reason: Memory usage" in worker["exit_detail"]  # the line after the GCS's
    kill = doc["workers"]["oom_tasks"][0]
    assert (kill["worker_pid"], kill["name"]) == (20976, "SingleAgentEnvRunner.__init__")
    runner = next(a for a in doc["actors"]["items"] if a["pid"] == 20976)
    assert runner["class_name"] == "SingleAgentEnvRunner"  # named by the kill: it died in __init__
    assert runner["death_cause"]["kind"] == "oom_context"
    assert any(e["label"] == "Out of Memory" for e in doc["events"]["items"])
    out = cli("check", "--from", str(SESSIONS / "oom-killed"), "--format", "json")
    oom = out.findings("RLD402")[0]
    assert "kill threshold of 2% (Ray's kill message)" in oom["message"]
    job = out.findings("RLD405")[0]
    assert "memory monitor killed SingleAgentEnvRunner" in job["message"] and "pid 20976" in job["message"]


def test_collect_from_logs_and_an_address_are_exclusive_and_session_latest_is_read(tmp_path):
    out = run_rldoctor("collect", "--output", str(tmp_path / "s.json"), "--from",
                       str(SESSIONS / "env-raises"), "--address", "127.0.0.1:1")
    assert out.code == 2 and "--address and --from are exclusive" in out.stderr, out
    assert not (tmp_path / "s.json").exists()
    temp = tmp_path / "ray"
    session = next((SESSIONS / "env-raises" / "node0").iterdir())
    shutil.copytree(session, temp / session.name)
    (temp / "session_latest").symlink_to(temp / session.name)
    assert len(F.find_sessions(str(temp))) == 1  # the link and its target are one session
    assert read_logs(str(temp / "session_latest"))["jobs"]["jobs"][0]["status"] == "FAILED"
