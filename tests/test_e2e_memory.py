"""End to end: object store pressure, spilling, host memory and /dev/shm on a real cluster.

Node 1 keeps its object store on disk (`--plasma-directory`) and runs with a kill
threshold just above the host's current memory use; node 2 has an 80 MiB object
store that a long-lived actor fills, with spilling held back until it is full.
"""

from __future__ import annotations

import pytest

from conftest import check_json, wait_for_findings
from faults import hoard_objects
from localcluster import LocalCluster, NodeSpec

pytestmark = [pytest.mark.cluster,
              pytest.mark.serial]  # its threshold is the host's memory now + 6 % (tests/suite_plan.py)


def host_memory_used() -> float:
    info = dict(line.split(":", 1) for line in open("/proc/meminfo"))
    total = int(info["MemTotal"].split()[0])
    return 1 - int(info["MemAvailable"].split()[0]) / total


@pytest.fixture(scope="module")
def memory_cluster(tmp_path_factory):
    plasma = tmp_path_factory.mktemp("plasma-on-disk")
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    threshold = round(host_memory_used() + 0.06, 3)
    specs[1].env["RAY_memory_usage_threshold"] = str(threshold)
    specs[1].extra_args = ["--plasma-directory", str(plasma)]
    specs[2].object_store_memory = 80 * 2**20
    specs[2].env["RAY_object_spilling_threshold"] = "1.0"  # spill only when truly full
    with LocalCluster(specs, log_monitor=False) as cluster:
        cluster.kill_threshold = threshold
        yield cluster


def subjects(result, code):
    return {f["subject"]: f for f in result.findings(code)}


def test_disk_backed_store_and_memory_near_threshold(memory_cluster):
    node1 = memory_cluster.nodes[1].node_id
    result = check_json(memory_cluster)
    shm = subjects(result, "RLD304")
    assert set(shm) == {f"node:{node1}"}, result
    assert shm[f"node:{node1}"]["evidence"]["plasma_directory"].endswith("plasma-on-disk0")
    assert "--shm-size" in shm[f"node:{node1}"]["fix"]
    near = subjects(result, "RLD303")
    assert set(near) == {f"node:{node1}"}, result
    finding = near[f"node:{node1}"]
    assert finding["severity"] in ("warn", "fail")
    assert finding["evidence"]["kill_threshold"] == pytest.approx(memory_cluster.kill_threshold)
    assert "RAY_memory_usage_threshold on that node" in finding["message"]
    assert not result.findings("RLD301") and not result.findings("RLD302")


def test_filled_object_store_fails_rld301_on_that_node_only(memory_cluster):
    node2 = memory_cluster.nodes[2].node_id
    hoard_objects(memory_cluster, node2, chunks=15)  # 75 MiB of 80
    result = check_json(memory_cluster)
    pressure = subjects(result, "RLD301")
    assert set(pressure) == {f"node:{node2}"}, result
    finding = pressure[f"node:{node2}"]
    assert finding["severity"] == "fail"
    assert finding["evidence"]["used_fraction"] >= 0.9
    assert finding["evidence"]["capacity_bytes"] == 80 * 2**20
    assert "Hoarder" in finding["message"]  # the owner, named
    assert "max_requests_in_flight_per_env_runner" in finding["fix"]
    assert not result.findings("RLD302")  # nothing spilled yet


def test_pushing_past_full_spills_and_gives_rld302(memory_cluster):
    node2 = memory_cluster.nodes[2].node_id
    hoard_objects(memory_cluster, node2, chunks=6)  # 30 MiB more than fits
    result, _ = wait_for_findings(memory_cluster, "RLD302", timeout_s=20)
    spilled = subjects(result, "RLD302")
    assert set(spilled) == {f"node:{node2}"}, result
    finding = spilled[f"node:{node2}"]
    assert finding["evidence"]["spilled_bytes"] >= 5 * 2**20
    assert finding["evidence"]["spill_directory"].startswith(str(memory_cluster.temp_dir))
    assert finding["evidence"]["spill_disk_free_bytes"] > 0
    assert "--object-spilling-directory" in finding["fix"]
