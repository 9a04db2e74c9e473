"""End to end: a check that never hangs (issue 48).

A fresh 2-node cluster whose every worker hangs at start (tests/node_faults.py's
sitecustomize.py, held far longer than any wait; a CPU each, so that Ray starts workers ahead
for the first driver, unlike test_e2e_slow_worker_start.py): Ray's raylet holds the cluster's first driver until the workers it starts for it register, and
its registration holds the interpreter, so rldoctor's own 10 s join bound cannot fire. The
join's time keeper (rldoctor.joinwatch, a process outside that interpreter) ends it at
--timeout: exit 3 within --timeout + 5 s, one line on stderr naming what it waited for and the
node to look at, and nothing left behind (no process, no temporary log). The same for a
`watch` round on such a cluster (its collector child tells the round that it joins; the round
ends at --timeout with that line as its round_failed record, the child and its files gone).
Ray holds only a cluster's first driver, so each test starts its own cluster (the watch's has
one node). `collect` goes through the same time keeper as `check` (tests/test_joinwatch.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from conftest import RLDOCTOR
from localcluster import LocalCluster, NodeSpec
from node_faults import hang_site

pytestmark = pytest.mark.cluster

TIMEOUT_S = 15


def _rldoctor_pids(address: str, holding: str = "rldoctor") -> list[int]:
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[-1].split()[0] == "Z":
                    continue  # killed, not yet reaped by its new parent
        except OSError:
            continue
        if holding in args and address in args:
            found.append(int(pid))
    return found


def _held_cluster(tmp_path, nodes: int) -> LocalCluster:
    site = hang_site(tmp_path / "hang-site", seconds=3600)
    return LocalCluster([NodeSpec(num_cpus=1, env={"PYTHONPATH": site}) for _ in range(nodes)])


def _scratch(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    return scratch


def _assert_the_join_line(line: str, cluster, timeout_s: float = TIMEOUT_S) -> None:
    node_ids = [n.node_id[:12] for n in cluster.nodes]
    assert line.startswith("Ray did not let rldoctor join the cluster at "), line
    assert f"within {timeout_s:g}s (--timeout)" in line and "raylet.out" in line, line
    assert any(f"on node {node} (" in line for node in node_ids), (line, node_ids)


def _run_held(cluster, scratch, *args: str):
    env = cluster.client_env(TMPDIR=str(scratch))
    started = time.monotonic()
    done = subprocess.run([RLDOCTOR, *args, "--address", cluster.address, "--timeout",
                           str(TIMEOUT_S)], capture_output=True, text=True, env=env,
                          timeout=TIMEOUT_S + 60, stdin=subprocess.DEVNULL, cwd=scratch.parent)
    return done, time.monotonic() - started


def test_a_check_joining_a_fresh_cluster_whose_workers_hang_ends_at_its_timeout(tmp_path):
    scratch = _scratch(tmp_path)
    with _held_cluster(tmp_path, nodes=2) as held:
        done, took = _run_held(held, scratch, "check")
        left = _rldoctor_pids(held.address)
    assert done.returncode == 3, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert took < TIMEOUT_S + 5, took
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("rldoctor: "), lines[0]
    _assert_the_join_line(lines[0][len("rldoctor: "):], held)
    assert done.stdout == ""
    assert left == [], left
    assert list(scratch.iterdir()) == []  # the temporary Ray log of the ended join: removed


def test_a_watch_round_joining_a_fresh_cluster_whose_workers_hang_ends_at_its_timeout(tmp_path):
    scratch = _scratch(tmp_path)
    with _held_cluster(tmp_path, nodes=1) as held:
        _a_watch_round_held(held, tmp_path, scratch)


def _a_watch_round_held(held, tmp_path, scratch) -> None:
    from rldoctor.watch.rounds import JOIN_GRACE_S

    log = tmp_path / "watch.log"
    env = held.client_env(TMPDIR=str(scratch))
    started = time.monotonic()
    watch = subprocess.Popen([RLDOCTOR, "watch", "--address", held.address, "--timeout",
                              str(TIMEOUT_S), "--interval", "600", "--metrics-port", "0",
                              "--log", str(log)], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        records = []
        # the child's start (Ray's import) on a loaded host, then --timeout and the grace
        deadline = started + TIMEOUT_S + JOIN_GRACE_S + 30
        while time.monotonic() < deadline and not records:
            time.sleep(0.5)
            if log.exists():
                records = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        took = time.monotonic() - started
        # the round's failure is logged after its child is gone
        during = _rldoctor_pids(held.address, holding="rldoctor.watch.gcs_child")
    finally:
        watch.send_signal(signal.SIGTERM)
        _, err = watch.communicate(timeout=30)
    assert records, (watch.returncode, err[-2000:])
    [failed] = records
    assert failed["event"] == "round_failed", failed
    reason = failed["reason"]
    assert "\n" not in reason
    _assert_the_join_line(reason, held)
    assert reason.endswith("the collector was stopped and the next round starts a new one")
    # the child's start counts too; before, the round waited --timeout + 20 s, then 8 s more
    assert took < TIMEOUT_S + JOIN_GRACE_S + 15, took
    assert during == [], during
    assert watch.returncode == 0, err[-2000:]
    assert _rldoctor_pids(held.address) == []
    assert list(scratch.iterdir()) == []  # the child's temporary Ray log: removed
