"""Wall time of `rldoctor check` against the Ray CLI an on-call engineer would run instead.

    python benchmarks/check_vs_ray_cli.py [--repeats 5]

Starts a local 3-node cluster (head + 2 workers), then times, alternating, each
round of:
  * rldoctor check --address ADDR
  * ray status --address ADDR; ray list actors --detail; ray memory --stats-only
    (one after another, as a person would)
and prints medians, the ratio, and every sample. Stops the cluster at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from localcluster import BIN, three_nodes  # noqa: E402


def timed(commands: list[list[str]], env: dict) -> float:
    started = time.perf_counter()
    for cmd in commands:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-500:]}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with three_nodes() as cluster:
        env = cluster.client_env()
        ray = str(BIN / "ray")
        rldoctor = [[str(BIN / "rldoctor"), "check", "--address", cluster.address]]
        ray_cli = [[ray, "status", "--address", cluster.address],
                   [ray, "list", "actors", "--detail", "--address", cluster.dashboard_url],
                   [ray, "memory", "--stats-only", "--address", cluster.address]]
        timed(rldoctor, env)  # warm caches once for both sides
        timed(ray_cli, env)
        ours, theirs = [], []
        for _ in range(args.repeats):
            ours.append(timed(rldoctor, env))
            theirs.append(timed(ray_cli, env))
    result = {
        "nodes": 3,
        "repeats": args.repeats,
        "rldoctor_check_median_s": round(statistics.median(ours), 3),
        "ray_cli_three_commands_median_s": round(statistics.median(theirs), 3),
        "ratio_rldoctor_over_ray_cli": round(statistics.median(ours) / statistics.median(theirs), 3),
        "rldoctor_samples_s": [round(x, 3) for x in ours],
        "ray_cli_samples_s": [round(x, 3) for x in theirs],
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
