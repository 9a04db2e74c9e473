"""`rldoctor check` on a fresh cluster and on the same cluster once it has a history.

    python benchmarks/history_cost.py [--tasks 100000] [--actors 1000] [--jobs 50] [--repeats 3]

Starts the 3-node test cluster (tests/localcluster.py), measures `check` (wall and the
client's peak RSS, alternating nothing: the fresh figure first), then gives the cluster a
history: `--tasks` tiny zero-CPU tasks (in batches), `--actors` zero-CPU actors created and
ended (half ray.kill, half crash with os._exit so they leave dead workers with a bad exit),
`--jobs` short drivers (each its own Ray job), and measures `check` again. Prints the medians,
their spread, the ratios (goal: wall <= 1.2x, peak RSS <= 1.5x of fresh) and which reads the
history snapshot says were cut (`collectors.<section>.truncated`). Each side is measured once
the host has settled (under 25 % of its CPU busy, `host_busy_before`): a cluster just started,
or one whose history just ended, keeps the host busy for a while. Stops the cluster at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from localcluster import BIN, three_nodes  # noqa: E402

HISTORY = """
import os, time
@ray.remote(num_cpus=0)
def tiny(i):
    return i

@ray.remote(num_cpus=0, max_restarts=0)
class Short:
    def ping(self):
        return os.getpid()
    def crash(self):
        os._exit(1)

started = time.time()
done = 0
while done < TASKS:
    batch = min(5000, TASKS - done)
    ray.get([tiny.remote(i) for i in range(batch)])
    done += batch
tasks_s = time.time() - started
started = time.time()
made = 0
while made < ACTORS:
    batch = [Short.remote() for _ in range(min(25, ACTORS - made))]
    ray.get([a.ping.remote() for a in batch])
    for i, a in enumerate(batch):
        if i % 2:
            a.crash.remote()
        else:
            ray.kill(a)
    made += len(batch)
    del batch
print("=>", round(tasks_s, 1), round(time.time() - started, 1))
"""


def check(cluster, env: dict, out: Path | None = None) -> tuple[float, int]:
    """(wall s, peak RSS of the client in KiB) of one `rldoctor check` (or collect to out)."""
    args = (["collect", "--output", str(out)] if out else ["check"])
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
            "w = time.perf_counter() - t\n"
            "print(p.returncode, w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(BIN / "rldoctor"), *args,
                           "--address", cluster.address], env=env, capture_output=True, text=True)
    rc, wall, rss = proc.stdout.split()
    if int(rc) not in (0, 1):
        raise RuntimeError(f"rldoctor {args[0]} exited {rc}: {proc.stderr[-500:]}")
    return float(wall), int(rss)


def busy_fraction(window_s: float = 2.0) -> float:
    """The share of the host's CPU time in use over `window_s` (from /proc/stat)."""
    def sample():
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)
        return sum(values), idle

    total0, idle0 = sample()
    time.sleep(window_s)
    total1, idle1 = sample()
    return 1 - (idle1 - idle0) / max(1, total1 - total0)


def settle(limit_s: float = 120.0, quiet: float = 0.25) -> float:
    """Wait until the host is quiet (a cluster just started, or idle workers just reaped, load
    it for a while), at most `limit_s`; the share of CPU in use at the end."""
    deadline = time.monotonic() + limit_s
    busy = busy_fraction()
    while busy > quiet and time.monotonic() < deadline:
        busy = busy_fraction()
    return round(busy, 3)


def measure(cluster, env: dict, repeats: int) -> dict:
    walls, rsss = [], []
    busy_before = settle()
    for _ in range(repeats):
        wall, rss = check(cluster, env)
        walls.append(wall)
        rsss.append(rss)
    return {"host_busy_before": busy_before,
            "wall_median_s": round(statistics.median(walls), 3),
            "wall_spread_s": [round(min(walls), 3), round(max(walls), 3)],
            "peak_rss_median_mib": round(statistics.median(rsss) / 1024, 1),
            "peak_rss_spread_mib": [round(min(rsss) / 1024, 1), round(max(rsss) / 1024, 1)]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--actors", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with three_nodes() as cluster:
        env = cluster.client_env()
        check(cluster, env)  # warm caches once
        fresh = measure(cluster, env, args.repeats)
        started = time.perf_counter()
        made = cluster.run_driver(f"TASKS = {args.tasks}\nACTORS = {args.actors}\n" + HISTORY,
                                  timeout=3600, expect_lines=1)
        for i in range(args.jobs):
            cluster.run_driver("@ray.remote(num_cpus=0)\ndef one(i):\n    return i\n"
                               f"print('=>', ray.get(one.remote({i})))\n",
                               timeout=300, expect_lines=1)
        history_s = time.perf_counter() - started
        history = measure(cluster, env, args.repeats)
        with tempfile.TemporaryDirectory() as tmp:
            snap = Path(tmp) / "snap.json"
            check(cluster, env, snap)
            doc = json.loads(snap.read_text())
    cut = {section: record["truncated"] for section, record in doc["collectors"].items()
           if record.get("truncated")}
    result = {
        "nodes": 3, "repeats": args.repeats, "load_1m": round(os.getloadavg()[0], 2),
        "history": {"tasks": args.tasks, "actors": args.actors, "jobs": args.jobs,
                    "made_in_s": round(history_s, 1), "driver_tasks_s_actors_s": made},
        "fresh": fresh, "after_history": history,
        "wall_ratio": round(history["wall_median_s"] / fresh["wall_median_s"], 3),
        "peak_rss_ratio": round(history["peak_rss_median_mib"] / fresh["peak_rss_median_mib"], 3),
        "goal": "wall_ratio <= 1.2, peak_rss_ratio <= 1.5",
        "collector_duration_s": {s: r.get("duration_s") for s, r in doc["collectors"].items()},
        "dead_actors_listed": sum(a["state"] == "DEAD" for a in doc["actors"]["items"])
        if doc.get("actors") else None,
        "actors_total": (doc.get("actors") or {}).get("total"),
        "cut_reads": cut,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
