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
Ray holds only a cluster's first driver, so each run has a fresh cluster of its own (the watch's
has one node, on addresses of its own); the two runs wait out their --timeout side by side.
`collect` goes through the same time keeper as `check` (tests/test_joinwatch.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import RLDOCTOR
from localcluster import LocalCluster, NodeSpec, loopback
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


def _held_cluster(tmp_path, nodes: int, first_host: int = 10) -> LocalCluster:
    site = hang_site(tmp_path / "hang-site", seconds=3600)
    return LocalCluster([NodeSpec(num_cpus=1, env={"PYTHONPATH": site}, ip=loopback(first_host + i))
                         for i in range(nodes)], log_monitor=False)


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


@pytest.fixture(scope="module")
def held_runs(tmp_path_factory):
    """The check's run and the watch round's, each against a fresh held cluster of its own (two
    nodes; one, on addresses of its own), side by side: each waits out its --timeout, so the
    module waits one timeout, not two. {"check" | "watch": what the run left to assert on}."""
    root = tmp_path_factory.mktemp("held")
    scenarios = {"check": (_a_check_held, 2, 10), "watch": (_a_watch_round_held, 1, 20)}
    runs: dict = {}

    def run(name: str) -> None:
        observe, nodes, first_host = scenarios[name]
        tmp_path = root / name
        tmp_path.mkdir()
        try:
            with _held_cluster(tmp_path, nodes, first_host) as held:
                runs[name] = observe(held, tmp_path, _scratch(tmp_path))
        except BaseException as exc:  # raised again by the test that reads this run
            runs[name] = exc

    threads = [threading.Thread(target=run, args=(name,)) for name in scenarios]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return runs


def _ran(runs: dict, name: str) -> dict:
    if isinstance(runs[name], BaseException):
        raise runs[name]
    return runs[name]


def _a_check_held(held, tmp_path, scratch) -> dict:
    done, took = _run_held(held, scratch, "check")
    return {"held": held, "scratch": scratch, "done": done, "took": took,
            "left": _rldoctor_pids(held.address)}


def test_a_check_joining_a_fresh_cluster_whose_workers_hang_ends_at_its_timeout(held_runs):
    run = _ran(held_runs, "check")
    held, scratch, done, took, left = (run[k] for k in ("held", "scratch", "done", "took", "left"))
    assert done.returncode == 3, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert took < TIMEOUT_S + 5, took
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("rldoctor: "), lines[0]
    _assert_the_join_line(lines[0][len("rldoctor: "):], held)
    assert done.stdout == ""
    assert left == [], left
    assert list(scratch.iterdir()) == []  # the temporary Ray log of the ended join: removed


def _a_watch_round_held(held, tmp_path, scratch) -> dict:
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
    return {"held": held, "scratch": scratch, "records": records, "took": took, "during": during,
            "returncode": watch.returncode, "err": err, "left": _rldoctor_pids(held.address)}


def test_a_watch_round_joining_a_fresh_cluster_whose_workers_hang_ends_at_its_timeout(held_runs):
    from rldoctor.watch.rounds import JOIN_GRACE_S

    run = _ran(held_runs, "watch")
    held, scratch, records, took, during = (run[k] for k in ("held", "scratch", "records", "took", "during"))
    assert records, (run["returncode"], run["err"][-2000:])
    [failed] = records
    assert failed["event"] == "round_failed", failed
    reason = failed["reason"]
    assert "\n" not in reason
    _assert_the_join_line(reason, held)
    assert reason.endswith("the collector was stopped and the next round starts a new one")
    # the child's start counts too; before, the round waited --timeout + 20 s, then 8 s more
    assert took < TIMEOUT_S + JOIN_GRACE_S + 15, took
    assert during == [], during
    assert run["returncode"] == 0, run["err"][-2000:]
    assert run["left"] == [], run["left"]
    assert list(scratch.iterdir()) == []  # the child's temporary Ray log: removed
