"""What one `rldoctor check` costs, and how it grows with the cluster.

    python benchmarks/footprint_and_scaling.py [--nodes 1,3,5] [--repeats 3]

For each cluster size (a head plus workers started with `ray start`, 1 CPU each):
  * wall time of `rldoctor check`, median of --repeats, and each collector's share;
  * footprint on the cluster: CPU seconds the cluster's own processes (GCS, raylets,
    dashboard, agents, workers) spent during one check, minus what they spend idle
    over the same time; and the resources rldoctor's probe actors reserved, read back
    from Ray's state API after the run.
Then `rldoctor check --from` on the largest recorded fixture and on a synthetic
1,000-node, 20,000-actor snapshot. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from localcluster import BIN, LocalCluster, NodeSpec  # noqa: E402
from synthetic import big_snapshot  # noqa: E402


def timed_check(cluster: LocalCluster, snapshot: Path | None = None) -> float:
    args = [str(BIN / "rldoctor"), "collect", "--output", str(snapshot)] if snapshot else \
        [str(BIN / "rldoctor"), "check"]
    args += ["--address", cluster.address]
    started = time.perf_counter()
    proc = subprocess.run(args, env=cluster.client_env(), capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(proc.stderr[-1000:])
    return time.perf_counter() - started


def probe_reservations(cluster: LocalCluster) -> list[dict]:
    out = cluster.run_driver(
        "import json\n"
        "from ray.util.state import list_actors\n"
        f"rows = list_actors(address={cluster.dashboard_url!r}, detail=True, limit=10000, "
        "raise_on_missing_output=False)\n"
        "mine = [a.required_resources for a in rows if (a.ray_namespace or '').startswith('rldoctor-')]\n"
        "print('=>', json.dumps(mine))\n")
    return json.loads(out)


def measure(nodes: int, repeats: int) -> dict:
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(nodes)]
    with LocalCluster(specs) as cluster, tempfile.TemporaryDirectory() as tmp:
        timed_check(cluster)  # warm-up
        walls, collectors = [], []
        for i in range(repeats):
            snap = Path(tmp) / f"snap{i}.json"
            walls.append(timed_check(cluster, snap))
            collectors.append(json.loads(snap.read_text())["collectors"])
        idle_before = cluster.cpu_seconds()
        time.sleep(statistics.median(walls))
        idle = cluster.cpu_seconds() - idle_before
        before = cluster.cpu_seconds()
        wall = timed_check(cluster)
        spent = cluster.cpu_seconds() - before
        reserved = probe_reservations(cluster)
    shares = {name: round(statistics.median(c[name].get("duration_s", 0) for c in collectors), 3)
              for name in collectors[0]}
    return {"nodes": nodes, "check_wall_median_s": round(statistics.median(walls), 3),
            "check_wall_samples_s": [round(w, 3) for w in walls], "collector_median_s": shares,
            "cluster_cpu_s_during_one_check": round(spent, 3),
            "cluster_cpu_s_idle_same_time": round(idle, 3),
            "cluster_cpu_s_caused_by_check": round(max(0.0, spent - idle * wall / max(
                statistics.median(walls), 1e-9)), 3),
            "probe_actors_seen": len(reserved),
            "probe_resources_reserved": sorted({json.dumps(r, sort_keys=True) for r in reserved})}


def from_file_timing() -> dict:
    largest = max((p for p in (ROOT / "fixtures").glob("*.json")
                   if not p.name.endswith(".expected.json")), key=lambda p: p.stat().st_size)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.json"
        big.write_text(json.dumps(big_snapshot(1000, 20000)))
        for label, path in ((f"fixture {largest.name}", largest), ("synthetic 1000 nodes, 20000 actors", big)):
            times = []
            for _ in range(3):
                started = time.perf_counter()
                subprocess.run([str(BIN / "rldoctor"), "check", "--from", str(path), "--output",
                                str(Path(tmp) / "r.txt")], capture_output=True)
                times.append(time.perf_counter() - started)
            out[label] = round(statistics.median(times), 3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,3,5")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",")]
    results = {"by_cluster_size": [measure(n, args.repeats) for n in sizes],
               "check_from_file_median_s": from_file_timing()}
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
