"""Re-record the snapshots in fixtures/ from real local clusters, with `rldoctor collect`.

    python tests/record_fixtures.py [SCENARIO ...]

Each scenario builds the cluster state it is named after, records it, and trims
what varies from run to run without meaning anything (the collector timings).
The findings expected of each snapshot live beside it in <name>.expected.json;
they are written by hand after reading the snapshot, never by this script.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from localcluster import BIN, LocalCluster, NodeSpec, three_nodes  # noqa: E402

FIXTURES = HERE.parent / "fixtures"


def collect(cluster: LocalCluster, name: str) -> dict:
    out = FIXTURES / f"{name}.json"
    subprocess.run([str(BIN / "rldoctor"), "collect", "--output", str(out), "--address",
                    cluster.address], env=cluster.client_env(), check=True)
    doc = json.loads(out.read_text())
    for collector in doc["collectors"].values():
        collector.pop("duration_s", None)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"recorded {out.relative_to(HERE.parent)}")
    return doc


def wait_dead(cluster: LocalCluster, node_id: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = cluster.run_driver(
            f"print('=>', [n['Alive'] for n in ray.nodes() if n['NodeID'] == {node_id!r}])")
        if "False" in out:
            return
        time.sleep(1)
    raise TimeoutError(f"node {node_id} not marked dead in {timeout_s}s")


def record_three_node_scenarios() -> None:
    """healthy-3node, infeasible-demands, node-dead: one cluster, three states."""
    with three_nodes() as cluster:
        collect(cluster, "healthy-3node")
        cluster.run_driver((
            "@ray.remote(resources={'no_such_accelerator': 1})\n"
            "class NeedsAccelerator:\n    pass\n"
            "NeedsAccelerator.options(name='hungry', lifetime='detached').remote()\n"
            "from ray.util.placement_group import placement_group\n"
            "placement_group([{'CPU': 1}, {'CPU': 1}], strategy='STRICT_PACK', name='ppo-runners',"
            " lifetime='detached')\n"))
        time.sleep(4)  # raylets report demand to the GCS about once a second
        collect(cluster, "infeasible-demands")
        cluster.run_driver((
            "from ray.util.placement_group import get_placement_group, remove_placement_group\n"
            "ray.kill(ray.get_actor('hungry'))\n"
            "remove_placement_group(get_placement_group('ppo-runners'))\n"))
        killed = cluster.kill_node(2)
        wait_dead(cluster, killed)
        collect(cluster, "node-dead")


def record_version_mismatch() -> None:
    """version-mismatch: one worker node runs an older gymnasium than the rest."""
    with tempfile.TemporaryDirectory() as site:
        subprocess.run([str(BIN / "pip"), "install", "--quiet", "--no-deps", "--target", site,
                        "gymnasium==1.0.0"], check=True)
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}),
                 NodeSpec(labels={"ray.io/availability-zone": "zone-a"}, env={"PYTHONPATH": site})]
        with LocalCluster(specs) as cluster:
            collect(cluster, "version-mismatch")


def record_worker_faults() -> None:
    """worker-faults: a crash-looping actor and a SIGKILLed worker on node 1, memory kills on node 2."""
    from faults import (actor_that_crashes_three_times, task_on_memory_starved_node,
                        worker_killed_with_sigkill)

    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    specs[2].env["RAY_memory_usage_threshold"] = "0.02"
    with LocalCluster(specs) as cluster:
        node1, node2 = cluster.nodes[1].node_id, cluster.nodes[2].node_id
        actor_that_crashes_three_times(cluster, node1)
        worker_killed_with_sigkill(cluster, node1)
        task_on_memory_starved_node(cluster, node2)
        time.sleep(3)  # task and worker events reach the GCS about once a second
        collect(cluster, "worker-faults")


def record_memory_pressure() -> None:
    """memory-pressure: node 1 stores objects on disk and sits near its kill threshold;
    node 2's 80 MiB object store is filled by an actor, then pushed until it spills."""
    from faults import hoard_objects

    info = dict(line.split(":", 1) for line in open("/proc/meminfo"))
    used = 1 - int(info["MemAvailable"].split()[0]) / int(info["MemTotal"].split()[0])
    with tempfile.TemporaryDirectory(dir="/tmp") as plasma:
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
        specs[1].env["RAY_memory_usage_threshold"] = f"{used + 0.06:.3f}"
        specs[1].extra_args = ["--plasma-directory", plasma]
        specs[2].object_store_memory = 80 * 2**20
        specs[2].env["RAY_object_spilling_threshold"] = "1.0"
        with LocalCluster(specs) as cluster:
            hoard_objects(cluster, cluster.nodes[2].node_id, chunks=21)
            time.sleep(2)
            collect(cluster, "memory-pressure")


def record_network_delayed() -> None:
    """network-delayed: node 1 receives object chunks 200 ms late; node 2 is in zone-b and
    its workers get every task 30 ms late (Ray's own RAY_testing_asio_delay_us)."""
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    specs[1].env["RAY_testing_asio_delay_us"] = "ObjectManagerService.grpc_server.Push=200000:200000"
    specs[2].labels = {"ray.io/availability-zone": "zone-b"}
    specs[2].env["RAY_testing_asio_delay_us"] = "CoreWorkerService.grpc_server.PushTask=30000:30000"
    with LocalCluster(specs) as cluster:
        collect(cluster, "network-delayed")


SCENARIOS = {"three-node": record_three_node_scenarios, "version-mismatch": record_version_mismatch,
             "worker-faults": record_worker_faults, "memory-pressure": record_memory_pressure,
             "network-delayed": record_network_delayed}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(SCENARIOS):
        SCENARIOS[name]()
