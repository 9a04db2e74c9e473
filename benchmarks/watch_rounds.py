"""What `rldoctor watch` costs: a round against a cold `check`, memory over rounds, training.

    python benchmarks/watch_rounds.py [--checks 3] [--rounds 100] [--ppo-window 120] [--ppo-pairs 2]

On a 3-node cluster (a head plus two workers started with `ray start`, 1 CPU each):
  * wall of a cold `rldoctor check` (median of --checks), against the wall of a watch
    round (rldoctor_run_duration_seconds scraped after each round, median of rounds
    2..--rounds; round 1 joins the cluster and starts the probes);
  * RSS of the watch process and of its collector child after 5, 20, 50, 100, 150, 200
    rounds (those up to --rounds) and after --rounds rounds, at --interval 1
    (`--checks 0 --rounds 200 --ppo-window 0`: memory over 200 rounds alone, about 8 min);
  * with --ppo-window > 0: a PPO job (tests/ppo_job.py, 2 env runners, 400 env steps an
    iteration) runs throughout, and its env steps/s are measured over alternating windows
    without and with `rldoctor watch --interval 60` (off, on, ... --ppo-pairs times); the
    noise is the spread of the windows without watch. The watch starts 5 s
    before its window, so a window holds its steady rounds, not its start.
Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from localcluster import BIN, LocalCluster, NodeSpec, free_ports  # noqa: E402

# Rounds after which the RSS of the watch and of its collector child is read (and after the last).
RSS_MARKS = (5, 20, 50, 100, 150, 200)
STEPS_PER_ITERATION = 400  # tests/ppo_job.py: train_batch_size_per_learner = 200 x 2 runners


def cold_check(cluster: LocalCluster) -> float:
    started = time.perf_counter()
    proc = subprocess.run([str(BIN / "rldoctor"), "check", "--address", cluster.address],
                          env=cluster.client_env(), capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(proc.stderr[-1000:])
    return time.perf_counter() - started


class Watch:
    def __init__(self, cluster: LocalCluster, interval: float):
        self.port = free_ports(1)[0]
        self.proc = subprocess.Popen(
            [str(BIN / "rldoctor"), "watch", "--address", cluster.address, "--interval",
             str(interval), "--metrics-port", str(self.port), "--log", "/dev/null"],
            env=cluster.client_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def metrics(self) -> dict[str, float]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return {}
        out = {}
        for line in text.splitlines():
            m = re.match(r"^(rldoctor_[a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
            if m:
                out[m.group(1)] = float(m.group(2))
        return out

    def rounds(self) -> int:
        return int(self.metrics().get('rldoctor_rounds_total{result="ok"}', 0))

    def rss_mib(self) -> dict[str, float]:
        me = psutil.Process(self.proc.pid)
        children = me.children(recursive=True)
        return {"watch": round(me.memory_info().rss / 2**20, 1),
                "collector": round(sum(c.memory_info().rss for c in children) / 2**20, 1)}

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def own_cpu_seconds(watch: "Watch") -> float:
    total = 0.0
    for proc in [psutil.Process(watch.proc.pid)] + psutil.Process(watch.proc.pid).children(recursive=True):
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


def round_walls(cluster: LocalCluster, rounds: int) -> dict:
    """Median round wall, RSS after 5 and after `rounds` rounds, and the CPU seconds a round
    costs the watch's processes and the cluster (over the idle cluster's own use), at
    --interval 1."""
    idle_cpu = cluster.cpu_seconds()
    time.sleep(10)
    idle_rate = (cluster.cpu_seconds() - idle_cpu) / 10
    watch = Watch(cluster, interval=1)
    walls, rss, seen, cpu = [], {}, 0, {}
    try:
        deadline = time.monotonic() + 30 + rounds * 5
        while seen < rounds and time.monotonic() < deadline:
            time.sleep(0.2)
            m = watch.metrics()
            now = int(m.get('rldoctor_rounds_total{result="ok"}', 0))
            if now > seen:
                seen = now
                if seen >= 2:
                    walls.append(m["rldoctor_run_duration_seconds"])
                if seen in RSS_MARKS or seen == rounds:
                    rss[seen] = watch.rss_mib()
                    cpu[seen] = (time.monotonic(), own_cpu_seconds(watch), cluster.cpu_seconds())
        failed = int(watch.metrics().get('rldoctor_rounds_total{result="failed"}', 0))
    finally:
        watch.stop()
    per_round = {}
    if 5 in cpu and rounds in cpu and rounds > 5:
        (t5, own5, cl5), (tn, ownn, cln) = cpu[5], cpu[rounds]
        n = rounds - 5
        per_round = {"watch_cpu_s_per_round": round((ownn - own5) / n, 3),
                     "cluster_cpu_s_per_round": round(((cln - cl5) - idle_rate * (tn - t5)) / n, 3)}
    return {"rounds": seen, "failed_rounds": failed, **per_round,
            "round_wall_s_median": round(statistics.median(walls), 3) if walls else None,
            "round_wall_s_max": round(max(walls), 3) if walls else None,
            "rss_mib_after_5": rss.get(5), f"rss_mib_after_{rounds}": rss.get(rounds),
            "rss_mib_by_round": rss}


class PPO:
    """tests/ppo_job.py with the time of each iteration line."""

    def __init__(self, cluster: LocalCluster):
        self.times: list[float] = []
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "ppo_job.py"), "--address", cluster.address,
             "--runners", "2"], env=cluster.client_env(), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("=> iteration"):
                self.times.append(time.monotonic())

    def steps_per_s(self, start: float, end: float) -> float:
        n = sum(1 for t in self.times if start <= t < end)
        return n * STEPS_PER_ITERATION / (end - start)

    def stop(self) -> None:
        import os

        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def training_cost(cluster: LocalCluster, window_s: float, pairs: int = 2) -> dict:
    job = PPO(cluster)
    windows = []
    try:
        deadline = time.monotonic() + 180
        while len(job.times) < 5:  # warm up: the first iterations build the runners
            if job.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the PPO job did not start")
            time.sleep(0.5)
        for with_watch in (False, True) * pairs:
            watch = Watch(cluster, interval=60) if with_watch else None
            if watch:
                time.sleep(5)
            start = time.monotonic()
            time.sleep(window_s)
            end = time.monotonic()
            rounds = watch.rounds() if watch else 0
            if watch:
                watch.stop()
            windows.append({"watch": with_watch, "steps_per_s": round(job.steps_per_s(start, end), 1),
                            "watch_rounds": rounds})
    finally:
        job.stop()
    off = [w["steps_per_s"] for w in windows if not w["watch"]]
    on = [w["steps_per_s"] for w in windows if w["watch"]]
    mean_off, mean_on = statistics.mean(off), statistics.mean(on)
    return {"window_s": window_s, "windows": windows,
            "steps_per_s_without": round(mean_off, 1), "steps_per_s_with": round(mean_on, 1),
            "cost_percent": round(100 * (mean_off - mean_on) / mean_off, 2),
            "noise_percent": round(100 * (max(off) - min(off)) / mean_off, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--ppo-window", type=float, default=120.0)
    parser.add_argument("--ppo-pairs", type=int, default=2, help="windows without and with watch")
    args = parser.parse_args()
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    out: dict = {"nodes": 3}
    with LocalCluster(specs) as cluster:
        if args.checks > 0:
            cold_check(cluster)  # the first check pays for caches (imports, pyc) the others reuse
            checks = [cold_check(cluster) for _ in range(args.checks)]
            out["cold_check_wall_s_median"] = round(statistics.median(checks), 3)
        if args.rounds > 0:
            out["watch"] = round_walls(cluster, args.rounds)
            wall = out["watch"]["round_wall_s_median"]
            if wall and "cold_check_wall_s_median" in out:
                out["round_over_cold_check"] = round(wall / out["cold_check_wall_s_median"], 3)
        if args.ppo_window > 0:
            out["training"] = training_cost(cluster, args.ppo_window, args.ppo_pairs)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
