"""End to end: a check that never hangs (issue 48).

A fresh 2-node cluster whose every worker hangs at start (tests/node_faults.py's
sitecustomize.py, held far longer than any wait; a CPU each, so that Ray starts workers ahead
for the first driver, unlike test_e2e_slow_worker_start.py): Ray's raylet holds the cluster's first driver until the workers it starts for it register, and
its registration holds the interpreter, so rldoctor's own 10 s join bound cannot fire. The
join's time keeper (rldoctor.joinwatch, a process outside that interpreter) ends it at
--timeout: exit 3 within --timeout + 5 s, one line on stderr naming what it waited for and the
node to look at, and nothing left behind (no process, no temporary log).
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from conftest import RLDOCTOR
from localcluster import LocalCluster, NodeSpec
from node_faults import hang_site

pytestmark = pytest.mark.cluster

TIMEOUT_S = 15


def _rldoctor_pids(address: str) -> list[int]:
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace")
        except OSError:
            continue
        if "rldoctor" in args and address in args:
            found.append(int(pid))
    return found


def test_a_check_joining_a_fresh_cluster_whose_workers_hang_ends_at_its_timeout(tmp_path):
    site = hang_site(tmp_path / "hang-site", seconds=3600)
    specs = [NodeSpec(num_cpus=1, env={"PYTHONPATH": site}) for _ in range(2)]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    with LocalCluster(specs) as cluster:
        env = cluster.client_env(TMPDIR=str(scratch))
        started = time.monotonic()
        done = subprocess.run([RLDOCTOR, "check", "--address", cluster.address, "--timeout",
                               str(TIMEOUT_S)], capture_output=True, text=True, env=env,
                              timeout=TIMEOUT_S + 60, stdin=subprocess.DEVNULL)
        took = time.monotonic() - started
        left = _rldoctor_pids(cluster.address)
        node_ids = [n.node_id[:12] for n in cluster.nodes]
    assert done.returncode == 3, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert took < TIMEOUT_S + 5, took
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    line = lines[0]
    assert line.startswith("rldoctor: Ray did not let rldoctor join the cluster at "), line
    assert f"within {TIMEOUT_S}s (--timeout)" in line and "raylet.out" in line, line
    assert any(f"on node {node} (" in line for node in node_ids), (line, node_ids)
    assert done.stdout == ""
    assert left == [], left
    assert list(scratch.iterdir()) == []  # the temporary Ray log of the ended join: removed
