"""End to end: a cluster with a history (finished tasks, dead actors and workers) whose reads
cross their limits; the snapshot says which reads were cut and the checks on those sections
say so in their notes.

The limits are lowered for the run (`bounded.CAP`, in the collecting process only) so a few
dozen dead actors cross them, instead of the thousands the real limits take; the reads, the
cluster and the deaths are real. benchmarks/history_cost.py measures the cost at full size.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import run_rldoctor
from localcluster import LocalCluster, NodeSpec

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CAP = 10
DEATHS = 2 * CAP + 4

HISTORY = f"""
import os
@ray.remote(num_cpus=0)
def tiny(i):
    return i

@ray.remote(num_cpus=0, max_restarts=0)
class Crasher:
    def pid(self):
        return os.getpid()
    def crash(self):
        os._exit(1)

assert sum(ray.get([tiny.remote(i) for i in range(200)])) == sum(range(200))
crashers = [Crasher.remote() for _ in range({DEATHS})]
ray.get([c.pid.remote() for c in crashers])
for c in crashers:
    c.crash.remote()
import time
from ray.util.state import list_actors
for _ in range(150):
    dead = list_actors(filters=[("state", "=", "DEAD"), ("class_name", "=", "Crasher")],
                       limit=1000)
    if len(dead) >= {DEATHS}:
        break
    time.sleep(0.2)
print("=>", len(dead))
"""

COLLECT = ("import sys\n"
           "from rldoctor.cluster import bounded\n"
           f"bounded.CAP = {CAP}\n"
           "from rldoctor.cli import main\n"
           "sys.argv[0] = 'rldoctor'\n"
           "main()\n")


def test_a_history_that_crosses_the_limits_is_said_in_the_snapshot_and_the_checks(tmp_path):
    specs = [NodeSpec(num_cpus=1), NodeSpec(num_cpus=1)]
    with LocalCluster(specs, log_monitor=False) as cluster:
        assert int(cluster.run_driver(HISTORY, timeout=180, expect_lines=1)) >= DEATHS
        snap_path = tmp_path / "snap.json"
        proc = subprocess.run([*cluster.client_prefix, sys.executable, "-c", COLLECT, "collect",
                               "--address", cluster.address, "--output", str(snap_path)],
                              capture_output=True, text=True, timeout=180,
                              env=cluster.client_env(), stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr[-3000:]
    snap = json.loads(snap_path.read_text())
    actors_cut = snap["collectors"]["actors"]["truncated"]
    dead_read = [c for c in actors_cut if c["filters"] == ["state = DEAD"]]
    assert dead_read and dead_read[0]["limit"] == CAP and dead_read[0]["returned"] == CAP
    assert dead_read[0]["read"] == "list_actors"
    assert snap["actors"]["truncated"] is True
    assert snap["actors"]["listed"] < DEATHS <= snap["actors"]["total"]  # Ray's count says more
    assert sum(a["state"] == "DEAD" for a in snap["actors"]["items"]) <= CAP
    workers_cut = snap["collectors"]["workers"]["truncated"]
    assert any(c["read"] == "list_workers" and c["limit"] == CAP for c in workers_cut)
    assert snap["workers"]["truncated"] is True
    # a section whose reads stayed under their limits says nothing was cut
    assert "truncated" not in snap["collectors"]["nodes"]
    # no runtime env agent logged a failure: the failed tasks were not read (a task read scans
    # the whole history); nothing lives, so no calls in flight were read either
    assert snap["runtime_envs"]["tasks_read"] is False

    result = run_rldoctor("check", "--from", str(snap_path), "--format", "json",
                          env=cluster.client_env())
    assert result.code in (0, 1), result
    checks = {c["code"]: c for c in json.loads(result.stdout)["checks"]}
    for code, section in (("RLD401", "actors"), ("RLD403", "workers"), ("RLD402", "workers")):
        notes = [n for n in checks[code].get("notes") or () if n["subject"] == f"snapshot.{section}"]
        assert notes, (code, checks[code])
        assert f"returned its limit of {CAP} rows" in notes[0]["message"]
    assert not [n for n in checks["RLD101"].get("notes") or () if n["subject"].startswith("snapshot.")]
