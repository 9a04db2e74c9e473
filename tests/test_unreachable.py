"""No cluster where rldoctor is pointed: exit 3 within 15 s, one line, no traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import threading

import pytest

from conftest import run_rldoctor

pytestmark = pytest.mark.serial  # every test bounds a time (tests/suite_plan.py)


def _one_clear_line(result) -> None:
    assert result.code == 3, result
    assert result.seconds < 15, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result
    assert lines[0].startswith("rldoctor: ") and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_closed_port_exits_3_quickly():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run_rldoctor("check", "--address", f"127.0.0.1:{port}")
    _one_clear_line(result)
    assert f"127.0.0.1:{port}" in result.stderr and "ray start --head" in result.stderr


@pytest.fixture
def silent_port():
    """A socket that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_port_that_never_answers_exits_3_within_15s(silent_port):
    result = run_rldoctor("check", "--address", f"127.0.0.1:{silent_port}", timeout=60)
    _one_clear_line(result)
    assert "no answer" in result.stderr


def test_collect_to_closed_port_writes_nothing(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "snap.json"
    result = run_rldoctor("collect", "--output", str(out), "--address", f"127.0.0.1:{port}")
    _one_clear_line(result)
    assert not out.exists()


# A machine where nothing runs: rldoctor in a PID namespace of its own, with its own /proc (Ray
# finds a cluster for `auto` by the GCS processes it sees; the suite runs clusters beside this).
ALONE = ["unshare", "--pid", "--fork", "--mount-proc"]


def test_auto_with_nothing_running_exits_3(tmp_path):
    seen = subprocess.run([*ALONE, "sh", "-c", "cat /proc/[0-9]*/comm"], capture_output=True,
                          text=True, check=True).stdout
    assert "gcs_server" not in seen and "raylet" not in seen, seen
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["RAY_TMPDIR"] = str(tmp_path)
    result = run_rldoctor("check", "--address", "auto", env=env, prefix=ALONE)
    _one_clear_line(result)
    assert "no Ray cluster found" in result.stderr
    env["RAY_ADDRESS"] = "auto"  # the same through the environment
    _one_clear_line(run_rldoctor("check", env=env, prefix=ALONE))


def test_not_host_port_is_one_line():
    result = run_rldoctor("check", "--address", "nonsense")
    _one_clear_line(result)
