"""An honest status (issue 48): never `status: OK` with exit 0 when nothing was read.

Each case of "OK over nothing" gives its own line, NOT JUDGED in the status line (JSON
`verdict_basis`, `summary.status` "error") and exit 3 (DESIGN.md: nothing could be
diagnosed): a session directory that gave no node (only empty worker files; the head's logs
unreadable by permissions), a snapshot that holds only its schema, `--run` on a file that is not
a training's results or has no row yet. What was read and judged still exits 0 or 1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import FIXTURES, RLDOCTOR, run_rldoctor

SESSION = FIXTURES / "sessions" / "ended-well"


def _not_judged(out, why: str) -> dict:
    assert out.code == 3, out
    stderr = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(stderr) == 1 and stderr[0].startswith("rldoctor: nothing to judge: "), out.stderr
    assert why in stderr[0], stderr
    return stderr[0]


def _empty_worker_files(tmp_path, count=200):
    logs = tmp_path / "volume" / "session_2026-12-06_16-49-05_033940_12940" / "logs"
    logs.mkdir(parents=True)
    for n in range(count):
        (logs / f"worker-{n:056x}-01000000-{1000 + n}.out").write_bytes(b"")
    return logs.parent.parent


def test_a_session_directory_of_empty_worker_files_is_not_judged(tmp_path):
    folder = _empty_worker_files(tmp_path)
    table = run_rldoctor("check", "--from", str(folder))
    _not_judged(table, "no node was read from the logs")
    assert "status: NOT JUDGED  (nothing to judge: no node was read from the logs in" in table.stdout
    assert "status: OK" not in table.stdout
    report = run_rldoctor("check", "--from", str(folder), "--format", "json")
    _not_judged(report, "200 file(s) found, 0 byte(s) read")
    doc = report.json()
    assert doc["summary"]["status"] == "error"
    basis = doc["verdict_basis"]
    assert basis["judged"] is False and basis["read"] == "logs: 0 node(s), 0 job(s)"
    assert "no node was read" in basis["why_not"]
    markdown = run_rldoctor("check", "--from", str(folder), "--format", "markdown")
    assert markdown.code == 3 and markdown.stdout.startswith("## rldoctor report: NOT JUDGED")


@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs setpriv to read as another user")
def test_a_session_directory_whose_head_logs_this_user_cannot_read_is_not_judged(tmp_path):
    """As a user who may not read the head's logs (root reads a file of mode 0 anyway, so the
    CLI runs as nobody when the tests run as root)."""
    home = Path(tempfile.mkdtemp(prefix="rldoctor-basis-", dir="/tmp"))  # pytest's is 0700
    try:
        top = home / "volume"
        shutil.copytree(SESSION, top)
        for path in [home, top, *top.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        for path in (next(top.iterdir()) / "logs").iterdir():
            if path.is_file():
                path.chmod(0)  # every log of the head: unreadable
        as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] \
            if os.geteuid() == 0 else []
        done = subprocess.run([*as_user, RLDOCTOR, "check", "--from", str(top)], capture_output=True,
                              text=True, timeout=60, env={"PATH": os.environ["PATH"], "HOME": str(home)})
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 3, (done.stdout[-2000:], done.stderr)
    assert "status: NOT JUDGED" in done.stdout and "status: OK" not in done.stdout
    assert "unreadable" in done.stderr or "Permission denied" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_a_snapshot_that_holds_only_its_schema_is_not_judged(tmp_path):
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"schema": "rldoctor.snapshot/v1"}))
    out = run_rldoctor("check", "--from", str(path), "--format", "json")
    _not_judged(out, "every check was skipped")
    basis = out.json()["verdict_basis"]
    assert basis["checks_judged"] == 0 and basis["checks_skipped"] == len(out.json()["checks"])
    assert "only its schema" in basis["why_not"]
    assert "status: NOT JUDGED" in run_rldoctor("check", "--from", str(path)).stdout


@pytest.mark.parametrize("lines", [['{"foo": 1}', '{"bar": 2}'], []], ids=["not-results", "no-row-yet"])
def test_run_on_a_file_that_holds_no_training_results_is_exit_3(tmp_path, lines):
    path = tmp_path / "result.json"
    path.write_text("".join(line + "\n" for line in lines))
    out = run_rldoctor("check", "--run", str(path), "--format", "json")
    _not_judged(out, f"--run {path}: no row of an RLlib training's results")
    assert out.json()["verdict_basis"]["judged"] is False


def test_what_was_read_and_judged_keeps_its_status_and_says_what_it_stood_on():
    logs = run_rldoctor("check", "--from", str(SESSION), "--format", "json")
    assert logs.code == 0 and logs.stderr.strip() == "", logs
    basis = logs.json()["verdict_basis"]
    assert basis == {"judged": True, "checks_judged": 8, "checks_skipped": 27,
                     "read": "logs: 2 node(s), 2 job(s)", "why_not": None, "lacking": None}
    run = run_rldoctor("check", "--run", str(FIXTURES / "runs" / "healthy"), "--format", "json")
    assert run.code == 0 and run.json()["verdict_basis"]["judged"] is True, run
    snap = run_rldoctor("check", "--from", str(FIXTURES / "healthy-3node.json"))
    assert snap.code == 0 and "status: OK" in snap.stdout, snap
