"""End to end: a node in a memory-limited cgroup is judged against its limit (RLD303).

Worker node 1 is started inside a child cgroup of this test's own memory cgroup, limited
to 1 GiB, as in a container: every process of the node (raylet, agents, workers, the
probe) is in it. A helper process in the same group keeps the group's use at 90% of the
limit, while the host has plenty. The head runs without a limit and is judged on the
host's memory, as before.
"""

from __future__ import annotations

import json
import os

import pytest

import cgroups
from conftest import check_json, run_rldoctor
from localcluster import LocalCluster, NodeSpec
from rldoctor.node.fact_memory import memory_limit_of

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(cgroups.unavailable() is not None,
                                 reason=f"{cgroups.unavailable()}")]

LIMIT = 2**30
FILL = 0.90


@pytest.fixture(scope="module")
def limited_cluster():
    with cgroups.MemoryCgroup(LIMIT) as group:
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}),
                 NodeSpec(labels={"ray.io/availability-zone": "zone-a"}, cgroup=group.path)]
        with LocalCluster(specs) as cluster, cgroups.FillTo(group, FILL):
            cluster.group = group
            yield cluster


def test_node_in_a_cgroup_is_judged_against_its_limit(limited_cluster):
    head, limited = (n.node_id for n in limited_cluster.nodes)
    group = limited_cluster.group
    result = check_json(limited_cluster)
    assert result.seconds < 30, result
    found = {f["subject"]: f for f in result.findings("RLD303")}
    assert set(found) == {f"node:{limited}"}, result  # the head has the host's plenty
    finding = found[f"node:{limited}"]
    evidence = finding["evidence"]
    assert finding["severity"] in ("warn", "fail")
    assert evidence["judged_against"] == "cgroup"
    assert evidence["limit_source"] == f"cgroup v{group.version} {group.files[0]} at {group.path}"
    assert evidence["memory_limit_bytes"] == LIMIT
    assert 0.85 <= evidence["used_fraction"] <= 0.97
    assert evidence["host_used_fraction"] < evidence["kill_threshold"] - 0.10  # no host finding
    assert group.path in finding["message"] and "1.0 GiB" in finding["message"]
    # Ray's own monitor reads the mount root here, which is not the node's group.
    assert "Ray's memory monitor reads /sys/fs/cgroup" in finding["message"]


def test_snapshot_hosts_carry_the_memory_limit_of_every_node(limited_cluster, tmp_path):
    head, limited = (n.node_id for n in limited_cluster.nodes)
    group = limited_cluster.group
    path = tmp_path / "snap.json"
    done = run_rldoctor("collect", "--address", limited_cluster.address, "--output", str(path),
                        env=limited_cluster.client_env())
    assert done.code == 0, done
    hosts = json.loads(path.read_text())["hosts"]
    mine = hosts[limited]["memory_limit"]
    assert mine["kind"] == "cgroup" and mine["bytes"] == LIMIT
    assert mine["limit_path"] == group.path and mine["cgroup_version"] == group.version
    assert abs(mine["used_bytes"] / LIMIT - FILL) < 0.05
    assert mine["ray_monitor_sees_limit"] is False
    # The head runs in this test's own cgroup: whatever limit that has (none here: the host).
    host = hosts[head]
    theirs = host["memory_limit"]
    ours = memory_limit_of(os.getpid(), host["mem_total_bytes"], host["mem_available_bytes"])
    assert theirs["kind"] == ours["kind"] and theirs.get("limit_path") == ours.get("limit_path")
    if theirs["kind"] == "host":
        assert theirs["bytes"] == host["mem_total_bytes"]
        assert theirs["source"] == "host MemTotal"
    # The recorded snapshot gives the same judgement offline.
    offline = run_rldoctor("check", "--from", str(path), "--only", "RLD303", "--format", "json")
    assert [f["subject"] for f in offline.findings("RLD303")] == [f"node:{limited}"], offline


KILL_LIMIT = 700 * 2**20
HOG = """
import os, time
@ray.remote(num_cpus=0, max_restarts=0)
class Hog:
    def pid(self):
        return os.getpid()
    def eat(self, mib):
        blocks = [bytearray(2**20) for _ in range(mib)]
        time.sleep(30)
        return len(blocks)
h = Hog.options(name="hog", lifetime="detached", namespace="oom",
                label_selector={"ray.io/node-id": NODE}).remote()
pid = ray.get(h.pid.remote())
ref = h.eat.remote(1200)
try:
    ray.get(ref, timeout=60)
    print("=>", pid, "survived")
except Exception as exc:
    print("=>", pid, type(exc).__name__)
"""


def test_a_worker_the_kernel_oom_killer_took_is_rld402_with_its_pid(tmp_path):
    """A real kernel OOM kill: an actor in a 700 MiB cgroup asks for 1.2 GiB. Ray's own
    monitor reads the host's memory here, so the kernel acts first; its log names the pid."""
    with cgroups.MemoryCgroup(KILL_LIMIT) as group:
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}),
                 NodeSpec(labels={"ray.io/availability-zone": "zone-a"}, cgroup=group.path)]
        with LocalCluster(specs) as cluster:
            node = cluster.nodes[1].node_id
            pid, outcome = cluster.run_driver(f"NODE = {node!r}\n" + HOG, timeout=120,
                                              expect_lines=1).split()
            assert outcome != "survived", outcome
            from conftest import wait_for_findings

            result, found = wait_for_findings(
                cluster, "RLD402", lambda f: f["subject"] == f"node:{node}")
            assert found, result
            [finding] = found
            assert f"Killed process {pid}" in finding["message"], finding
            assert [k["pid"] for k in finding["evidence"]["kernel_log"]] == [int(pid)]
            # The head, outside the group, is not blamed.
            assert [f["subject"] for f in result.findings("RLD402")] == [f"node:{node}"]


def test_the_bundle_states_the_memory_limit_of_its_snapshot(limited_cluster, tmp_path):
    """host.json and snapshot.json read the node with the same code: the limited node's
    host.json names its own cgroup's 1 GiB, not the mount root's figures."""
    import tarfile

    from rldoctor.bundle.reader import read

    head, limited = (n.node_id for n in limited_cluster.nodes)
    path = tmp_path / "incident.tar.gz"
    done = run_rldoctor("collect", "--bundle", str(path), "--address", limited_cluster.address,
                        env=limited_cluster.client_env(), timeout=180)
    assert done.code == 0, done
    _, snapshot, top, _ = read(path)
    with tarfile.open(path) as tar:
        for node in (head, limited):
            host = json.load(tar.extractfile(f"{top}/nodes/{node}/host.json"))
            bundled = host["details"]["cgroup"]["memory"]["memory_limit"]
            recorded = snapshot["hosts"][node]["memory_limit"]
            assert (bundled["bytes"], bundled["source"]) == (recorded["bytes"], recorded["source"])
    assert bundled["bytes"] == LIMIT and bundled["limit_path"] == limited_cluster.group.path
