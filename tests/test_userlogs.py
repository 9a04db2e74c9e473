"""Real users' logs: `check --from` names the cause in the logs people actually have.

fixtures/userlogs/<case>/ holds Ray's lines laid out as Ray writes them (one worker's .err,
one node's raylet.err, a gcs_server.out alone, lines pasted from a driver's console, a
`kubectl logs` folder, a tarball), each with expected.json (the code, what the finding must
name, words its message must hold) and SOURCE (the public thread or Ray's format string at
its release tag). Each case must give its finding and never read OK; the recorded healthy
sessions still read clean of log-line findings.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, RLDOCTOR, _clean_env, run_rldoctor
from rldoctor.engine.runner import run_checks
from rldoctor.errors import Undiagnosable
from rldoctor.inputs import source
from rldoctor.raylog import catalogue as C
from rldoctor.registry import load_registry

CORPUS = Path(FIXTURES) / "userlogs"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.json").is_file())


def _read(case: str):
    root = CORPUS / case
    want = json.loads((root / "expected.json").read_text())
    if want["from"] == "-":
        snap, src, _ = source.read("-", stdin=(root / "stdin.txt").read_bytes())
    else:
        snap, src, _ = source.read(str(root / want["from"]))
    return want, snap, src


def _findings(snap):
    results = run_checks(load_registry(include_plugins=False).checks, snap)
    assert [r.detail for r in results if r.status == "error"] == []
    return [f for r in results for f in r.findings]


def test_the_corpus_is_large_and_spans_releases():
    assert len(CASES) >= 30
    releases = {json.loads((CORPUS / c / "expected.json").read_text())["ray"] for c in CASES}
    assert len({r for r in releases if r.startswith("2.")}) >= 5, releases
    for case in CASES:
        assert (CORPUS / case / "SOURCE").read_text().strip(), case


@pytest.mark.parametrize("case", CASES)
def test_each_case_names_its_cause_and_never_reads_ok(case):
    want, snap, src = _read(case)
    found = _findings(snap)
    assert found, f"{case}: no finding (the report would say OK)"
    mine = [f for f in found if f.code == want["code"]]
    assert mine, (case, [(f.code, f.message) for f in found])
    text = " ".join(f"{f.message} {json.dumps(f.evidence)}" for f in mine)
    for key, value in want["names"].items():
        assert value in text, (case, key, value, text[:600])
    for word in want["holds"]:
        assert word.lower() in text.lower(), (case, word, [f.message for f in mine])
    assert all(f.fix for f in mine), case
    assert src.get("input", {}).get("judged"), case  # it says what it could judge


def test_a_node_removal_keeps_its_message_parses_the_ip_and_fits_the_fix():
    _, snap, _ = _read("node-removed-247")
    [f] = [f for f in _findings(snap) if f.code == "RLD101"]
    assert "Raylet could not connect to Runtime Env Agent" in f.message
    assert "10.42.3.17" in f.message and "(?)" not in f.message
    assert "runtime env agent" in f.fix.lower() and "preempt" not in f.fix.lower()


def test_a_node_removal_in_a_session_keeps_its_message_and_gets_the_fix_it_names():
    _, snap, _ = _read("node-removed-session-240")
    [f] = [f for f in _findings(snap) if f.code == "RLD101"]
    assert "Raylet could not connect to Runtime Env Agent" in f.message and "10.42.3.18" in f.message
    assert f.fix.lower().startswith("the raylet could not reach its runtime env agent")


def test_several_files_of_one_node_tell_one_story_with_its_first_cause():
    _, snap, _ = _read("multi-node-agent-chain-260")
    mine = [f for f in _findings(snap) if f.code == "RLD101"]
    assert len(mine) == 1, [f.message for f in mine]
    lines = mine[0].evidence.get("lines") or []
    files = {os.path.basename(x["file"]) for x in lines + (mine[0].evidence.get("log_lines") or [])}
    assert "raylet.out" in files, mine[0].evidence
    assert "agent" in mine[0].message and "dashboard_agent" in mine[0].message


def test_a_report_from_worker_files_only_takes_the_logs_time():
    _, snap, _ = _read("rllib-apply-260")
    assert snap.get("created_at", "").startswith("2026-11-30T09:14:02")


def test_the_cli_reads_one_file_and_stdin_and_says_what_it_judged(tmp_path):
    err = CORPUS / "worker-segfault-260" / "logs"
    [one] = list(err.iterdir())
    started = time.perf_counter()
    out = run_rldoctor("check", "--from", str(one))
    assert time.perf_counter() - started < 10
    assert out.code == 1, out
    assert "RLD403" in out.stdout and "input: log file" in out.stdout
    assert "not judged:" in out.stdout and "no gcs_server.out" in out.stdout
    pasted = (CORPUS / "agent-failed-ray20" / "stdin.txt").read_text()
    proc = subprocess.run([RLDOCTOR, "check", "--from", "-", "--format", "json"], input=pasted,
                          capture_output=True, text=True, timeout=120, env=_clean_env())
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["source"]["input"]["kind"] == "standard input"
    assert report["summary"]["status"] != "ok"


def test_inputs_are_told_apart_in_one_place(tmp_path):
    snap_file = str(FIXTURES) + "/healthy-3node.json"
    assert source.kind_of(snap_file) == "snapshot"
    assert source.kind_of("-") == "stdin"
    assert source.kind_of(str(CORPUS / "tarball-worker-segfault" / "logs.tar.gz")) == "log-tarball"
    assert source.kind_of(str(CORPUS / "kubectl-logs-folder")) == "logs"
    result = tmp_path / "trial" / "result.json"
    result.parent.mkdir()
    result.write_text(json.dumps({"training_iteration": 1, "timesteps_total": 10,
                                  "env_runners": {"episode_return_mean": 20.0}}) + "\n")
    assert source.kind_of(str(result)) == "runs"
    assert source.kind_of(str(result.parent)) == "runs"
    out = run_rldoctor("check", "--from", str(result))
    assert "not valid JSON" not in out.stdout + out.stderr and out.code in (0, 1), out
    garbage = tmp_path / "notes.txt"
    garbage.write_text("hello, nothing here\n")
    with pytest.raises(Undiagnosable):
        source.read(str(garbage))
    with pytest.raises(Undiagnosable):
        source.read("-", stdin=b"   \n")


def test_nothing_is_written_where_it_reads():
    before = {p: p.stat().st_mtime_ns for p in CORPUS.rglob("*")}
    for case in CASES[:10]:
        _read(case)
    assert {p: p.stat().st_mtime_ns for p in CORPUS.rglob("*")} == before


@pytest.mark.parametrize("name", ["env-raises", "node-killed", "oom-killed", "ray240-env-raises"])
def test_recorded_sessions_get_no_finding_from_lines_alone_that_they_did_not_have(name):
    """The recorded sessions' expected findings stay exactly what they were (test_logdir
    asserts that); here: no log-line hit of theirs is a false alarm on a healthy process."""
    snap, _, _ = source.read(str(FIXTURES) + f"/sessions/{name}")
    for hit in snap.get("log_lines")["items"]:
        assert hit["entry"] not in ("port-bind", "accept4-fds", "disk-full", "threads"), hit


def test_the_catalogue_is_data_with_what_each_line_means():
    assert len(C.ENTRIES) >= 50
    for e in C.ENTRIES:
        assert e.releases and e.files and e.code and e.cause and e.kind, e.id
        assert e.code == "by-process" or e.code.startswith("RLD"), e.id
        assert e.fix or e.kind in ("node-removed", "heartbeat"), e.id
    assert len({e.id for e in C.ENTRIES}) == len(C.ENTRIES)


def test_a_port_bind_that_is_retried_is_no_finding_and_the_last_failed_attempt_is():
    # Ray 2.60's dashboard agent, beside another process that took its port for a moment
    # (make test, 2026-12-07: the agent bound on its second attempt and the node was healthy)
    retried = ("2026-12-07 09:59:50,009\tWARNING http_server_agent.py:79 -- Failed to bind to "
               "port 50221 (attempt 1/6). Retrying in 0.17s. Error: [Errno 98] error while "
               "attempting to bind on address ('127.0.0.10', 50221): address already in use")
    assert [e.id for e, _ in C.match(retried, "agent")] == []
    # every attempt failed: the exception logged after "failed to bind after 6 attempts"
    given_up = ("OSError: [Errno 98] error while attempting to bind on address "
                "('127.0.0.10', 50221): address already in use")
    assert [e.id for e, _ in C.match(given_up, "agent")] == ["port-bind"]
    assert [e.id for e, _ in C.match("[Errno 98] Address already in use", "raylet")] == ["port-bind"]


HEALTHY = sorted(p.name for p in CORPUS.iterdir() if p.name.startswith("healthy-"))


def test_there_are_healthy_sessions_of_each_reproducible_release():
    # the releases whose clusters this machine starts: the 2.40 and 2.55 venvs, the pinned 2.60
    assert {"healthy-ray240", "healthy-ray255", "healthy-ray260"} <= set(HEALTHY), HEALTHY


@pytest.mark.parametrize("name", HEALTHY)
def test_a_healthy_session_reads_clean(name):
    """A healthy job's session (tasks, actors that went out of scope, the driver's exit),
    recorded by tests/record_userlogs.py --healthy: `check --from` gives no warn or fail."""
    snap, src, _ = source.read(str(CORPUS / name))
    assert snap.get("log_lines")["items"] == []
    assert src["input"]["kind"] == "session directory"
    result = run_rldoctor("check", "--from", str(CORPUS / name), "--format", "json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert [(f["code"], f["message"]) for f in report["findings"]
            if f["severity"] in ("warn", "fail")] == []
    assert report["summary"]["status"] == "ok"
    assert report["summary"]["counts"]["checks_ok"] > 0


def test_pasted_lines_are_split_by_the_process_their_relay_prefix_names():
    pasted = ("\x1b[2m\x1b[36m(SingleAgentEnvRunner pid=5195, ip=10.0.0.11)\x1b[0m Fatal Python "
              "error: Segmentation fault [repeated 3x across cluster]\n"
              "(raylet, ip=10.0.0.12) [2026-01-01 00:00:00,000 E 1 1] (raylet) x.cc:1: boom\n"
              "(pid=gcs_server) [2026-01-01 00:00:01,000 E 2 2] (gcs_server) y.cc:2: bang\n"
              "(pid=4321) plain worker line\n"
              "(1) raylet crashes unexpectedly (OOM, etc.)\n").encode()
    files = {f.rel: f for f in source.console_files(pasted)}
    runner = files["(SingleAgentEnvRunner pid=5195, ip=10.0.0.11)"]
    assert runner.kind == "console-worker"
    assert runner.meta == {"old": False, "pid": "5195", "ip": "10.0.0.11", "who": "SingleAgentEnvRunner"}
    assert runner.data == b"Fatal Python error: Segmentation fault\n"
    assert files["(raylet, ip=10.0.0.12)"].kind == "console-raylet"
    assert files["(gcs_server)"].kind == "console-gcs"
    assert files["(pid=4321)"].kind == "console-worker"
    assert files["pasted lines"].data.startswith(b"(1) raylet crashes")  # no relay prefix
    snap, _, _ = source.read("-", stdin=pasted)
    [crash] = [f for f in _findings(snap) if f.code == "RLD403"]
    assert "SingleAgentEnvRunner" in crash.message and "5195" in crash.message


def test_a_tarball_is_read_in_memory_and_its_links_and_escapes_are_skipped(tmp_path):
    import io
    import tarfile

    tar_path = tmp_path / "logs.tgz"
    with tarfile.open(tar_path, "w:gz") as tar:
        def add(name, data=b"", kind=tarfile.REGTYPE, link=""):
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.size = kind, link, len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
        add("../escape/raylet.err", b"*** SIGSEGV received at time=1 on cpu 0 ***\n")
        add("n1/logs/raylet.err", kind=tarfile.SYMTYPE, link="/etc/passwd")
        add("n1/logs/worker-" + "a" * 56 + "-01000000-77.err",
            b"Fatal Python error: Aborted\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    snap, src, _ = source.read(str(tar_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing extracted
    assert src["input"]["kind"] == "tarball of logs" and src["input"]["files"] == 1
    [crash] = [f for f in _findings(snap) if f.code == "RLD403"]
    assert "Aborted" in crash.message and "77" in crash.message


def test_a_fifo_or_a_device_is_refused_with_one_line(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(Undiagnosable):
        source.read(str(fifo))
    out = run_rldoctor("check", "--from", str(fifo))
    assert out.code == 3 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_the_timeline_tells_the_node_story_in_the_logs_time():
    from rldoctor.report import timeline

    snap, _, _ = source.read(str(CORPUS / "ray260-agent-killed"))
    rows = timeline.build(snap)
    kinds = [r["kind"] for r in rows]
    assert "agent_failed" in kinds and "node_dead" in kinds
    assert kinds.index("agent_failed") <= kinds.index("node_dead")
    assert all(r["time"] and r["time"].startswith("2026-12-06") for r in rows)


def _live_bundle(path, files: dict):
    """A bundle of a live cluster (the healthy 3-node snapshot) carrying node logs."""
    from rldoctor.bundle import SCHEMA
    from rldoctor.bundle.target import BundleFile
    from rldoctor.bundle.writer import Member

    healthy = Path(FIXTURES) / "healthy-3node.json"
    node = json.loads(healthy.read_text())["nodes"][1]["node_id"]
    items, members = [], []
    for name, text in files.items():
        rel = f"nodes/{node[:12]}/logs/{name}"
        items.append({"file": rel, "node_id": node, "kind": "log", "status": "ok"})
        members.append(Member(rel, text.encode(), "log"))
    manifest = {"schema": SCHEMA, "items": items}
    BundleFile(str(path), force=True).write("rldoctor-bundle-test", [
        Member("manifest.json", json.dumps(manifest).encode()),
        Member("snapshot.json", healthy.read_bytes()), *members])
    return node


def test_a_live_clusters_bundle_reads_its_node_logs_against_the_catalogue(tmp_path):
    crashed = tmp_path / "crashed.tar.gz"
    node = _live_bundle(crashed, {"raylet.err": "*** SIGABRT received at time=1764000000 on cpu 1 ***\n",
                                  "raylet.out": "[2026-01-01 00:00:00,000 I 1 1] (raylet) main.cc:1: ok\n"})
    snap, _, _ = source.read(str(crashed))
    assert [h["entry"] for h in snap.get("log_lines")["items"]] == ["absl-signal"]
    [found] = [f for f in _findings(snap) if f.code == "RLD101"]
    assert found.subject == f"node:{node}" and "SIGABRT" in found.message
    quiet = tmp_path / "quiet.tar.gz"
    _live_bundle(quiet, {"raylet.out": "[2026-01-01 00:00:00,000 I 1 1] (raylet) main.cc:1: ok\n"})
    snap, _, _ = source.read(str(quiet))
    assert snap.get("log_lines")["items"] == []
    assert not [f for f in _findings(snap) if f.evidence.get("from") == "Ray's log lines"]


def test_a_node_stopped_or_scaled_down_on_purpose_is_no_finding():
    pasted = (b"[2026-12-01 10:20:07,000 I 10 10] (gcs_server) gcs_node_manager.cc:645: , death "
              b"reason = EXPECTED_TERMINATION, death message = received SIGTERM node_id=" + b"a" * 56
              + b"\n[2026-12-01 10:21:07,000 I 10 10] (gcs_server) gcs_node_manager.cc:645: , death "
              b"reason = AUTOSCALER_DRAIN_IDLE, death message = idle for 60 s node_id=" + b"b" * 56 + b"\n")
    snap, _, _ = source.read("-", stdin=pasted)
    assert snap.get("log_lines")["items"] == []


def test_a_failed_jobs_runner_is_one_finding_not_a_second_from_its_lines():
    """The runner whose exception failed the job is the job's RLD405 (with its pid): its own
    lines in the logs are that finding's story, not a second RLD405 on its node. A worker the
    job's finding does not name still gets its own."""
    from rldoctor.checks import _loglines
    from rldoctor.engine.registry import fail
    from rldoctor.snapshot import Snapshot

    def hit(pid):
        return {"code": "RLD405", "kind": "exception", "severity": "fail", "file": f"worker-{pid}.err",
                "cause": "an RLlib env's step() raised", "names": {"pid": str(pid), "ip": "127.0.0.11"},
                "time": 1796600000.0}

    snap = Snapshot({"schema": "rldoctor.snapshot/v1", "log_lines": {"items": [hit(18481), hit(4242)]}})
    job = fail("job:warehouse-sensor", "the job failed: its env runner (pid 18481) raised",
               {"worker": {"class_name": "SingleAgentEnvRunner", "pid": 18481}}, "")
    found = _loglines.findings(snap, "RLD405", [job])
    assert [f.evidence["names"]["pid"] for f in found] == ["4242"], [f.message for f in found]
