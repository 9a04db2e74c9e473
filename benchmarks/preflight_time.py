"""How long `rldoctor preflight` of a healthy CartPole config takes on a 3-node cluster (issue 50:
under 5 s).

    python benchmarks/preflight_time.py [--runs 10] [--settle 45]

Starts a 3-node cluster on this machine (tests/localcluster.py, 2 CPUs each, the env package
of tests/targets/preflight on every node's PYTHONPATH), waits for its nodes to settle, runs one
preflight that starts the
nodes' workers, then times `--runs` more, one after the other, as a user runs them: the
whole command, from its start to its exit. Prints one line per run (seconds, the host's load
average) and a JSON summary (median, max, runs under 5 s). The nodes share this machine's
cores with rldoctor: run it on a quiet host.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import run_rldoctor  # noqa: E402
from localcluster import LocalCluster, NodeSpec  # noqa: E402

ENVPATH = ROOT / "tests" / "targets" / "preflight" / "envpath"
TARGET = "tests.targets.preflight.configs:healthy"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--settle", type=float, default=45.0,
                        help="seconds to wait after the start (a new node's agents start for a while)")
    args = parser.parse_args()
    cluster = LocalCluster([NodeSpec(num_cpus=2, env={"PYTHONPATH": str(ENVPATH)})
                            for _ in range(3)]).start()
    try:
        env = cluster.client_env(PYTHONPATH=f"{ROOT}:{ENVPATH}")

        def preflight():
            result = run_rldoctor("preflight", TARGET, "--address", cluster.address,
                                  "--format", "json", env=env, timeout=120)
            status = json.loads(result.stdout)["summary"]["status"] if result.stdout else None
            return result, status

        time.sleep(args.settle)
        preflight()  # the nodes' workers start once
        seconds = []
        for i in range(args.runs):
            result, status = preflight()
            seconds.append(result.seconds)
            print(f"run {i + 1}: {result.seconds:.2f} s, exit {result.code}, {status}, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        print(json.dumps({"runs": len(seconds), "median_s": round(statistics.median(seconds), 2),
                          "max_s": round(max(seconds), 2),
                          "under_5_s": sum(s < 5.0 for s in seconds)}))
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
