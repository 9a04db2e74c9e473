"""What one `rldoctor check` costs, and how it grows with the cluster.

    python benchmarks/footprint_and_scaling.py [--nodes 3,10,20] [--repeats 3]

For each cluster size (a head plus workers started with `ray start`, 1 CPU and an 80 MiB
object store each):
  * wall time of `rldoctor check`, median of --repeats, and each collector's share, with how
    many nodes' probes answered in each run (a check whose probes timed out measured less);
  * the client's CPU seconds (the `rldoctor` process and its children) and the GCS server's
    CPU seconds during one check, in total and per node: what the check's cost grows with;
  * footprint on the cluster: CPU seconds the cluster's own processes (GCS, raylets,
    dashboard, agents, workers) spent during one check, minus what they spend idle
    over the same time; and the resources rldoctor's probe actors reserved, read back
    from Ray's state API after the run.
Then `rldoctor check --from` on the largest recorded fixture and on synthetic 1,000-node,
20,000-actor and 5,000-node, 100,000-actor snapshots (the checks and the report alone: wall and
peak RSS). Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import resource
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
    return timed_check_with_cpu(cluster, snapshot)[0]


def timed_check_with_cpu(cluster: LocalCluster, snapshot: Path | None = None) -> tuple[float, float]:
    """(wall s, CPU s of the client: the rldoctor process and every process it waited for)."""
    args = [str(BIN / "rldoctor"), "collect", "--output", str(snapshot)] if snapshot else \
        [str(BIN / "rldoctor"), "check"]
    args += ["--address", cluster.address]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(args, env=cluster.client_env(), capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise RuntimeError(proc.stderr[-1000:])
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def gcs_cpu_seconds(cluster: LocalCluster) -> float:
    import psutil

    total = 0.0
    for pid in cluster.processes():
        try:
            proc = psutil.Process(pid)
            if proc.name().startswith("gcs_server"):
                t = proc.cpu_times()
                total += t.user + t.system
        except psutil.Error:
            continue
    return total


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
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}, object_store_memory=80 * 2**20)  # Ray 2.60 refuses under 75 MiB
             for _ in range(nodes)]
    with LocalCluster(specs) as cluster, tempfile.TemporaryDirectory() as tmp:
        timed_check(cluster)  # warm-up
        walls, collectors, answered = [], [], []
        for i in range(repeats):
            snap = Path(tmp) / f"snap{i}.json"
            walls.append(timed_check(cluster, snap))
            doc = json.loads(snap.read_text())
            collectors.append(doc["collectors"])
            answered.append(len((doc.get("versions") or {}).get("nodes") or {}))
        idle_before = cluster.cpu_seconds()
        time.sleep(statistics.median(walls))
        idle = cluster.cpu_seconds() - idle_before
        before = cluster.cpu_seconds()
        wall = timed_check(cluster)
        spent = cluster.cpu_seconds() - before
        client_cpu, gcs_cpu = [], []
        for _ in range(repeats):
            gcs_before = gcs_cpu_seconds(cluster)
            client_cpu.append(timed_check_with_cpu(cluster)[1])
            gcs_cpu.append(gcs_cpu_seconds(cluster) - gcs_before)
        reserved = probe_reservations(cluster)
    shares = {name: round(statistics.median(c[name].get("duration_s", 0) for c in collectors), 3)
              for name in collectors[0]}
    return {"nodes": nodes, "check_wall_median_s": round(statistics.median(walls), 3),
            "check_wall_samples_s": [round(w, 3) for w in walls], "collector_median_s": shares,
            # a check whose probes did not answer measured less: each run's count is shown
            "probes_answered": [f"{n}/{nodes}" for n in answered],
            "client_cpu_s": spread(client_cpu),
            "client_cpu_s_per_node": round(statistics.median(client_cpu) / nodes, 3),
            "gcs_cpu_s": spread(gcs_cpu),
            "gcs_cpu_s_per_node": round(statistics.median(gcs_cpu) / nodes, 4),
            "cluster_cpu_s_during_one_check": round(spent, 3),
            "cluster_cpu_s_idle_same_time": round(idle, 3),
            "cluster_cpu_s_caused_by_check": round(max(0.0, spent - idle * wall / max(
                statistics.median(walls), 1e-9)), 3),
            "probe_actors_seen": len(reserved),
            "probe_resources_reserved": sorted({json.dumps(r, sort_keys=True) for r in reserved})}


def spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3), "n": len(values)}


def check_from(path: Path, out: Path) -> tuple[float, float]:
    """(wall s, peak RSS MiB) of one `rldoctor check --from`, in a child of its own."""
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "subprocess.run(sys.argv[1:], capture_output=True)\n"
            "w = time.perf_counter() - t\n"
            "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(BIN / "rldoctor"), "check", "--from",
                           str(path), "--output", str(out)], capture_output=True, text=True)
    wall, rss = proc.stdout.split()
    return float(wall), float(rss)


def from_file_timing() -> dict:
    largest = max((p for p in (ROOT / "fixtures").glob("*.json")
                   if not p.name.endswith(".expected.json")), key=lambda p: p.stat().st_size)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        inputs = [(f"fixture {largest.name}", largest)]
        for n, actors in ((1000, 20000), (5000, 100000)):
            path = Path(tmp) / f"synthetic-{n}.json"
            path.write_text(json.dumps(big_snapshot(n, actors)))
            inputs.append((f"synthetic {n} nodes, {actors} actors", path))
        for label, path in inputs:
            runs = [check_from(path, Path(tmp) / "r.txt") for _ in range(3)]
            out[label] = {"wall_s": spread([w for w, _ in runs]),
                          "peak_rss_mib": spread([r for _, r in runs])}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="3,10,20")
    parser.add_argument("--from-only", action="store_true", help="only the --from timings")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",")]
    results = {"by_cluster_size": [] if args.from_only else [measure(n, args.repeats) for n in sizes],
               "check_from_file": from_file_timing()}
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
