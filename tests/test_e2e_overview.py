"""The cluster overview on a real 3-node cluster agrees with what Ray itself reports.

One actor takes a CPU and holds 30 MiB in its node's object store. Ray's own CLI is read
before and after `rldoctor check` (`ray status` for CPUs, `ray memory --stats-only` for
the store), so the overview must fall within what changed between the two reads.

The cluster is conftest's `cluster3`, which this module shares with test_e2e_auth and
test_e2e_cluster (tests/suite_plan.py, SHARED): it runs first, and its actor is gone, its CPU
and store freed, before they run.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import check_json, run_rldoctor
from localcluster import BIN

pytestmark = pytest.mark.cluster
MiB = 2**20

HOLDER = """
import numpy as np

@ray.remote(num_cpus=1)
class Holder:
    def __init__(self):
        self.refs = [ray.put(np.zeros(10 * 2**20, dtype=np.uint8)) for _ in range(3)]

    def node(self):
        return ray.get_runtime_context().get_node_id()

holder = Holder.options(name="holder", lifetime="detached").remote()
print("=> " + ray.get(holder.node.remote()))
"""


@pytest.fixture(scope="module")
def cluster(cluster3):
    """cluster3 with the holder on one node; the holder killed when the module ends, and its CPU
    and its 30 MiB freed before the modules that share the cluster run."""
    cluster3.holder_node = cluster3.run_driver(HOLDER).strip()
    yield cluster3
    cluster3.run_driver('ray.kill(ray.get_actor("holder"))\n')
    assert _settled_ray_reads(cluster3, cpus=(0.0, 3.0), store_mib=0) == (0, (0.0, 3.0))


def _ray(cluster, *args: str) -> str:
    proc = subprocess.run([str(BIN / "ray"), *args, "--address", cluster.address], capture_output=True,
                          text=True, timeout=60, env=cluster.client_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _ray_reads(cluster) -> tuple[int, tuple[float, float]]:
    """(store MiB from `ray memory --stats-only`, (used, total) CPUs from `ray status`)."""
    memory = _ray(cluster, "memory", "--stats-only")
    store_mib = int(re.search(r"Plasma memory usage (\d+) MiB", memory).group(1))
    status = _ray(cluster, "status")
    used, total = re.search(r"([\d.]+)/([\d.]+) CPU", status).groups()
    return store_mib, (float(used), float(total))


def _settled_ray_reads(cluster, cpus=(1.0, 3.0), store_mib: int | None = None,
                       timeout_s: float = 60):
    """Ray's own reads once `ray status` has caught up with every node (its view comes
    from the autoscaler's state, which picks up a node that just joined a few seconds late),
    and, given `store_mib`, once `ray memory` says the store holds that much."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        reads = _ray_reads(cluster)
        settled = reads[1] == cpus and store_mib in (None, reads[0])
        if settled or time.monotonic() > deadline:
            return reads
        time.sleep(1)


def test_overview_figures_agree_with_ray_status_and_ray_memory(cluster):
    before = _settled_ray_reads(cluster)
    report = check_json(cluster).json()
    after = _ray_reads(cluster)
    ov = report["cluster"]
    # CPUs: the holder's one CPU of three, as `ray status` says both times
    assert before[1] == after[1] == (1.0, 3.0)
    assert (ov["cpus_used"], ov["cpus_total"]) == before[1]
    # Object store: Ray prints whole MiB (truncated); rldoctor counts bytes
    low, high = min(before[0], after[0]), max(before[0], after[0]) + 1
    assert low * MiB <= ov["store_used_bytes"] <= high * MiB, (before, after, ov["store_used_bytes"])
    assert ov["store_used_bytes"] >= 30 * MiB
    assert ov["store_total_bytes"] == 3 * 100 * MiB
    rows = {r["node_id"]: r for r in ov["rows"]}
    assert set(rows) == {n.node_id for n in cluster.nodes}
    holder = rows[cluster.holder_node]
    assert holder["store_used_bytes"] >= 30 * MiB and holder["cpus_used"] == 1.0
    assert holder["store_used_fraction"] == pytest.approx(holder["store_used_bytes"] / (100 * MiB), abs=1e-3)
    for i, node in enumerate(cluster.nodes):
        row = rows[node.node_id]
        assert row["ip"] == cluster.node_ip(i) and row["is_head"] == (i == 0)
        assert row["zone"] == "zone-a" and row["state"] == "ALIVE" and row["cpus_total"] == 1.0
        assert row["memory_source"] and 0 < row["memory_used_fraction"] < 1
        assert row["rtt_p50_ms"] > 0 and row["bandwidth_mib_s"] > 0
    assert ov["not_collected"] == {} and ov["versions_differ"] == []
    assert ov["ray_version"] == "2.60.0"


def test_table_and_markdown_show_the_overview_first(cluster):
    table = run_rldoctor("check", "--address", cluster.address, env=cluster.client_env())
    assert table.code in (0, 1), table
    text = table.stdout
    assert text.index("Cluster: 3 node(s) (3 ALIVE)") < text.index("code    check")
    head = next(l for l in text.splitlines() if cluster.nodes[0].node_id[:12] in l)
    assert cluster.node_ip(0) in head and " head " in head and "zone-a" in head
    holder = next(l for l in text.splitlines() if cluster.holder_node[:12] in l and "ALIVE" in l)
    assert "1/1" in holder and "/100.0 MiB" in holder
    markdown = run_rldoctor("check", "--address", cluster.address, "--format", "markdown",
                            env=cluster.client_env()).stdout
    assert markdown.index("### Cluster") < markdown.index("| code | check |")
    assert f"| {cluster.holder_node[:12]} |" in markdown
