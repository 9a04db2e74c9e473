"""What reading the autoscaler adds to `rldoctor check` (budget 0.1 s): the `autoscaler`
collector's own time (the GCS reads and the head probe's look at the monitor, its config and
event log), over repeated `rldoctor collect` runs against a real autoscaling cluster (Ray's
autoscaler v1, fake multi-node provider, two 1-CPU nodes launched), and the whole collection
for scale. Prints median and spread.

    python benchmarks/autoscaler_cost.py [RUNS]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from autoscaling import autoscaling_cluster, wait_nodes, worker_type  # noqa: E402
from localcluster import BIN  # noqa: E402


def main(runs: int = 7) -> None:
    cluster = autoscaling_cluster({"cpu_worker": worker_type(1, max_workers=2)}, max_workers=2)
    with cluster:
        driver = subprocess.Popen([cluster.python, "-c", (
            "import ray, sys, time\nray.init(address=sys.argv[1])\n"
            "@ray.remote(num_cpus=1)\nclass L:\n    pass\n"
            "ls = [L.remote() for _ in range(2)]\nwhile True: time.sleep(60)\n"), cluster.address],
            env=cluster.client_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_nodes(cluster, 3, timeout_s=240)
            section, total = [], []
            out = cluster.root / "snap.json"
            for _ in range(runs):
                started = time.perf_counter()
                subprocess.run([str(BIN / "rldoctor"), "collect", "--address", cluster.address,
                                "--output", str(out)], env=cluster.client_env(), check=True,
                               capture_output=True)
                total.append(time.perf_counter() - started)
                doc = json.loads(out.read_text())
                assert doc["autoscaler"]["version"] == "v1", doc["autoscaler"]
                section.append(doc["collectors"]["autoscaler"]["duration_s"])
        finally:
            driver.kill()
    for name, values in (("autoscaler section", section), ("whole collect", total)):
        print(f"{name}: median {statistics.median(values):.3f} s, min {min(values):.3f}, "
              f"max {max(values):.3f} over {len(values)} runs")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
