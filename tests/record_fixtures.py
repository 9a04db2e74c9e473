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


def driver(cluster: LocalCluster, code: str) -> str:
    prologue = ("import ray, logging\n"
                f"ray.init(address={cluster.address!r}, namespace='rec', logging_level=logging.ERROR, "
                "log_to_driver=False)\n")
    proc = subprocess.run([sys.executable, "-c", prologue + code], env=cluster.client_env(),
                          capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"driver failed:\n{code}\n{proc.stderr[-2000:]}")
    return proc.stdout


def wait_dead(cluster: LocalCluster, node_id: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = driver(cluster, f"print([n['Alive'] for n in ray.nodes() if n['NodeID'] == {node_id!r}])")
        if "False" in out:
            return
        time.sleep(1)
    raise TimeoutError(f"node {node_id} not marked dead in {timeout_s}s")


def record_three_node_scenarios() -> None:
    """healthy-3node, infeasible-demands, node-dead: one cluster, three states."""
    with three_nodes() as cluster:
        collect(cluster, "healthy-3node")
        driver(cluster, (
            "@ray.remote(resources={'no_such_accelerator': 1})\n"
            "class NeedsAccelerator:\n    pass\n"
            "NeedsAccelerator.options(name='hungry', lifetime='detached').remote()\n"
            "from ray.util.placement_group import placement_group\n"
            "placement_group([{'CPU': 1}, {'CPU': 1}], strategy='STRICT_PACK', name='ppo-runners',"
            " lifetime='detached')\n"))
        time.sleep(4)  # raylets report demand to the GCS about once a second
        collect(cluster, "infeasible-demands")
        driver(cluster, (
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


SCENARIOS = {"three-node": record_three_node_scenarios, "version-mismatch": record_version_mismatch}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(SCENARIOS):
        SCENARIOS[name]()
