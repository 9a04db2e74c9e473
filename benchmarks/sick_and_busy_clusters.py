"""What `rldoctor check` costs on a healthy, a sick and a busy 3-node cluster.

    python benchmarks/sick_and_busy_clusters.py [--repeats 5]

One local 3-node cluster (head + 2 workers, 1 CPU each, started with `ray start`):
  1. healthy: `rldoctor check` against the Ray trio an on-call engineer would run instead
     (`ray status`; `ray list actors --detail`; `ray memory --stats-only`), alternating,
     medians and the ratio; the network second look's extra time (recheck_s);
  2. one worker raylet frozen with SIGSTOP (resumed after): the check's wall time and
     its ratio to the healthy check's;
  3. a PPO job (tests/ppo_job.py, 3 env runners on the 3 CPUs, the learner in its
     driver) keeping every CPU busy: the check's wall, what finding the trainings costs
     (the serial assembly, and the state-API and metrics reads that run beside the rest
     of the collection), and RLD201/RLD202 findings (there should be none).
Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from localcluster import BIN, three_nodes  # noqa: E402


def run(cmd: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-800:]}")
    return time.perf_counter() - started, proc


def snapshot(cluster, env) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "snap.json"
        run([str(BIN / "rldoctor"), "collect", "--address", cluster.address, "--output", str(out)], env)
        return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    result: dict = {"nodes": 3, "repeats": args.repeats}
    with three_nodes() as cluster:
        env = cluster.client_env()
        ray = str(BIN / "ray")
        check = [str(BIN / "rldoctor"), "check", "--address", cluster.address, "--format", "json"]
        trio = [[ray, "status", "--address", cluster.address],
                [ray, "list", "actors", "--detail", "--address", cluster.dashboard_url],
                [ray, "memory", "--stats-only", "--address", cluster.address]]
        run(check, env)
        for cmd in trio:
            run(cmd, env)
        ours, theirs = [], []
        for _ in range(args.repeats):
            ours.append(run(check, env)[0])
            theirs.append(sum(run(cmd, env)[0] for cmd in trio))
        healthy = statistics.median(ours)
        doc = snapshot(cluster, env)
        result["healthy"] = {
            "check_median_s": round(healthy, 3),
            "ray_trio_median_s": round(statistics.median(theirs), 3),
            "ratio_check_over_trio": round(healthy / statistics.median(theirs), 3),
            "check_samples_s": [round(x, 3) for x in ours],
            "trio_samples_s": [round(x, 3) for x in theirs],
            "network_recheck_s": doc["network"].get("recheck_s"),
            "timing": doc.get("timing"),
        }

        raylet = cluster.pids(2, "raylet")
        frozen = []
        for pid in raylet:
            os.kill(pid, signal.SIGSTOP)
        try:
            for _ in range(max(1, args.repeats // 2)):
                seconds, proc = run(check, env)
                frozen.append(seconds)
            found = [f["code"] for f in json.loads(proc.stdout)["findings"]]
        finally:
            for pid in raylet:
                os.kill(pid, signal.SIGCONT)
        result["frozen_raylet"] = {"check_median_s": round(statistics.median(frozen), 3),
                                   "ratio_to_healthy": round(statistics.median(frozen) / healthy, 3),
                                   "samples_s": [round(x, 3) for x in frozen], "findings": found}
        time.sleep(3)

        job = subprocess.Popen([sys.executable, str(ROOT / "tests" / "ppo_job.py"), "--address",
                                cluster.address, "--runners", "3"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               start_new_session=True)
        try:
            for line in job.stdout:  # wait for two iterations
                if line.startswith("=> iteration 2"):
                    break
            busy, network_findings = [], []
            for _ in range(args.repeats):
                seconds, proc = run(check, env)
                busy.append(seconds)
                network_findings += [f["code"] for f in json.loads(proc.stdout)["findings"]
                                     if f["code"] in ("RLD201", "RLD202")]
            doc = snapshot(cluster, env)
            training = doc.get("training") or {}
            result["ppo_job_running"] = {
                "check_median_s": round(statistics.median(busy), 3),
                "ratio_to_healthy": round(statistics.median(busy) / healthy, 3),
                "samples_s": [round(x, 3) for x in busy],
                "network_findings": network_findings,
                "trainings_found": len(training.get("trainings") or []),
                "training_assembly_s": doc["collectors"].get("training", {}).get("duration_s"),
                "training_reads_beside_the_rest_s": training.get("sources_fetch_s"),
                "metrics_scrape_s": (training.get("metrics") or {}).get("duration_s"),
                "timing": doc.get("timing"),
            }
        finally:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
