"""What the node probes of RLD305, RLD107, RLD106 and RLD404 add to one `rldoctor check`.

    python benchmarks/new_probes_cost.py [--repeats 5]

On the 3-node test cluster (head + 2 workers, 1 CPU each): `rldoctor collect` --repeats
times; for each run, each node's time in disk_usage_here, open_files_here and
ray_logs_here (they run one after the other inside the node's probe, the nodes side by
side, so a run pays the slowest node's sum), and the state-API read of failed jobs and
tasks (`runtime_envs`, side by side with the actor list); then a check's wall time.
Prints one JSON document; the issue's budget is 0.2 s.
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

from localcluster import BIN, three_nodes  # noqa: E402

PARTS = ("disk", "open_files", "ray_logs")


def one_run(cluster, path: Path) -> dict:
    started = time.perf_counter()
    proc = subprocess.run([str(BIN / "rldoctor"), "collect", "--address", cluster.address,
                           "--output", str(path)], env=cluster.client_env(),
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    doc = json.loads(path.read_text())
    per_node = {node_id[:8]: {part: (host.get(part) or {}).get("duration_s") or 0.0
                              for part in PARTS} for node_id, host in doc["hosts"].items()}
    return {"collect_wall_s": round(wall, 3),
            "probe_added_s": round(max(sum(p.values()) for p in per_node.values()), 4),
            "per_node_s": per_node,
            "runtime_envs_s": (doc["collectors"].get("runtime_envs") or {}).get("duration_s"),
            "actors_s": (doc["collectors"].get("actors") or {}).get("duration_s")}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with three_nodes() as cluster, tempfile.TemporaryDirectory() as tmp:
        runs = [one_run(cluster, Path(tmp) / f"snap{i}.json") for i in range(args.repeats)]
        checks = []
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run([str(BIN / "rldoctor"), "check", "--address", cluster.address],
                           env=cluster.client_env(), capture_output=True)
            checks.append(time.perf_counter() - started)
        added = [r["probe_added_s"] for r in runs]
        print(json.dumps({
            "cluster": "3 nodes, 1 CPU each (tests/localcluster.py three_nodes)",
            "repeats": args.repeats,
            "probe_added_s": {"median": round(statistics.median(added), 4), "max": max(added)},
            "runtime_envs_collector_s": {"median": statistics.median(
                r["runtime_envs_s"] or 0 for r in runs), "beside_actors_s": statistics.median(
                r["actors_s"] or 0 for r in runs)},
            "check_wall_s_median": round(statistics.median(checks), 3),
            "budget_s": 0.2,
            "within_budget": max(added) <= 0.2,
            "runs": runs,
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
