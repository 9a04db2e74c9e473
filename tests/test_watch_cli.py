"""`rldoctor watch` as a user runs it, without a cluster: what it does when nothing answers.

The real CLI and its real collector child: a cluster that is not there is a round that
fails (rldoctor_up 0, the reason logged), never a crash; SIGTERM ends it at once; a
metrics port that is taken is one line and exit 2.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import time
import urllib.request

from conftest import RLDOCTOR, _clean_env
from localcluster import free_ports


def scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            return r.read().decode()
    except OSError:
        return ""


def test_no_cluster_is_a_failed_round_with_the_reason_and_the_watch_goes_on(tmp_path):
    port, nobody = free_ports(2)
    log = tmp_path / "watch.jsonl"
    env = {**_clean_env(), "HOME": str(tmp_path)}
    proc = subprocess.Popen([RLDOCTOR, "watch", "--address", f"127.0.0.1:{nobody}", "--interval",
                             "1", "--metrics-port", str(port), "--log", str(log)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while 'rldoctor_rounds_total{result="failed"} 2.0' not in scrape(port):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, scrape(port)
            time.sleep(0.2)
        text = scrape(port)
        assert "\nrldoctor_up 0.0" in text
        assert "rldoctor_finding{" not in text
        events = [json.loads(line) for line in log.read_text().splitlines()]
        assert events and {e["event"] for e in events} == {"round_failed"}
        assert f"cannot reach a Ray cluster at 127.0.0.1:{nobody}" in events[0]["reason"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    # failed rounds are rounds: counted, and said to have failed
    assert re.search(r"stopped after (\d+) round\(s\), \1 of them failed", err), err


def test_a_metrics_port_in_use_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([RLDOCTOR, "watch", "--address", "127.0.0.1:1", "--metrics-port",
                               str(port)], env={**_clean_env(), "HOME": str(tmp_path)},
                              capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc
    assert proc.stderr.count("\n") == 1 and f"--metrics-port {port}: cannot serve" in proc.stderr
