"""End to end: a worker stopped with SIGTERM, the user's or one of rldoctor's own probes.

Ray 2.60 records a worker stopped with SIGTERM as SYSTEM_ERROR ("... The process receives
a SIGTERM."), and a probe worker of an rldoctor run can end that way when Ray stops it as
the run leaves. Here two real actors on worker node 1 get SIGTERM: one in a namespace of
rldoctor's own ("rldoctor-..."), one in the user's. RLD403 names only the user's, labelled
SIGTERM, and the snapshot says one of rldoctor's own was left out (the bundle's dead-worker
logs come from the same list).
"""

from __future__ import annotations

import json

import pytest

from conftest import run_rldoctor, wait_for_findings
from localcluster import LocalCluster, NodeSpec

pytestmark = pytest.mark.cluster

STOP = """
import os, signal, time
from ray.util.state import list_workers

@ray.remote(num_cpus=0)
class Stopped:
    def pid(self):
        return os.getpid()

h = Stopped.options(name="stopped", namespace=NAMESPACE, lifetime="detached",
                    label_selector={"ray.io/node-id": NODE}).remote()
pid = ray.get(h.pid.remote())
os.kill(pid, signal.SIGTERM)
for _ in range(100):
    dead = [w for w in list_workers(filters=[("is_alive", "=", "False")], detail=True)
            if w.pid == pid]
    if dead:
        print("=>", pid, dead[0].exit_type)
        break
    time.sleep(0.2)
"""


def _stop(cluster: LocalCluster, node: str, namespace: str) -> int:
    out = cluster.run_driver(f"NODE = {node!r}\nNAMESPACE = {namespace!r}\n" + STOP,
                             expect_lines=1)
    pid, exit_type = out.split()
    assert exit_type == "SYSTEM_ERROR", out  # what Ray makes of a SIGTERM
    return int(pid)


def test_rldoctor_leaves_its_own_stopped_probes_out_of_the_dead_workers(tmp_path):
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(2)]
    with LocalCluster(specs) as cluster:
        node = cluster.nodes[1].node_id
        own = _stop(cluster, node, "rldoctor-0123456789ab")
        user = _stop(cluster, node, "user-training")
        result, found = wait_for_findings(cluster, "RLD403",
                                          lambda f: user in f["evidence"]["pids"])
        assert [f["subject"] for f in result.findings("RLD403")] == [f"node:{node}"], result
        [finding] = found
        assert finding["evidence"]["pids"] == [user], finding  # never rldoctor's own
        assert finding["evidence"]["kinds"] == ["SIGTERM"] and "SIGTERM" in finding["message"]

        path = tmp_path / "snap.json"
        done = run_rldoctor("collect", "--address", cluster.address, "--output", str(path),
                            env=cluster.client_env())
        assert done.code == 0, done
        snap = json.loads(path.read_text())
        assert [node, own] in snap["actors"]["rldoctor_workers"]
        assert snap["workers"]["rldoctor_workers_left_out"] >= 1
        assert own not in [w["pid"] for w in snap["workers"]["dead"]]
        assert user in [w["pid"] for w in snap["workers"]["dead"]]
