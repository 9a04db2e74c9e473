"""Wall time of `rldoctor check` against the Ray CLI an on-call engineer would run instead.

    python benchmarks/check_vs_ray_cli.py [--repeats 5]

Starts a local 3-node cluster (head + 2 workers), then times, alternating, each
round of:
  * rldoctor check --address ADDR
  * ray status --address ADDR; ray list actors --detail; ray memory --stats-only
    (one after another, as a person would)
and prints medians, the ratio, and every sample; then where check's time goes, per phase
(`phases`): the interpreter and rldoctor's imports (`rldoctor --version`), joining the
cluster, the probes' start, each collector (from the snapshot's `timing` and
`collectors.<section>.duration_s`; collectors run side by side, so they overlap), and the
checks with rendering (`check --from` the snapshot, less the interpreter); and the floor
under the probes: a driver of its own starts one bare zero-CPU actor pinned to each node
(a class with one method, nothing of rldoctor) and times Ray's start of those workers
(`bare_actor_per_node_s`: submit to every actor answering; `bare_worker_cpu_s`: each
worker's own CPU by then), and again on every node but the driver's own; the floor's share of
the trio with and without a probe on the driver's node. Stops the cluster.
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


BARE_ACTORS = r"""
import json, logging, resource, sys, time
import ray
ray.init(address=sys.argv[1], log_to_driver=False, logging_level=logging.ERROR)
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

class Bare:
    def cpu(self):
        used = resource.getrusage(resource.RUSAGE_SELF)
        return used.ru_utime + used.ru_stime

own = ray.get_runtime_context().get_node_id()
ids = [n["NodeID"] for n in ray.nodes() if n["Alive"] and (sys.argv[2] == "all" or n["NodeID"] != own)]
cls = ray.remote(num_cpus=0)(Bare)
started = time.perf_counter()
actors = [cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(i, soft=False)).remote()
          for i in ids]
cpu = ray.get([a.cpu.remote() for a in actors])
print(json.dumps({"ready_s": time.perf_counter() - started, "cpu_s": cpu}))
"""


def bare_actors(cluster, env: dict, which: str) -> dict:
    proc = subprocess.run([str(BIN / "python"), "-c", BARE_ACTORS, cluster.address, which],
                          env=env, capture_output=True, text=True, timeout=120)
    if proc.returncode:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1:] or ["exit %d" % proc.returncode])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bare_actor_floor(cluster, env: dict, repeats: int = 3) -> dict:
    """Ray's own start of one bare zero-CPU actor per node: the floor under the probes; and
    the same on every node but the driver's own (what a probe-less read of the driver's node
    would leave), medians of `repeats`, alternating."""
    every, others, cpu = [], [], []
    for _ in range(repeats):
        found = bare_actors(cluster, env, "all")
        every.append(found["ready_s"])
        cpu = found["cpu_s"]
        others.append(bare_actors(cluster, env, "others")["ready_s"])
    return {"bare_actor_per_node_s": round(statistics.median(every), 3),
            "bare_actor_per_node_samples_s": [round(x, 3) for x in every],
            "bare_worker_cpu_s": [round(c, 3) for c in cpu],
            "bare_actor_other_nodes_s": round(statistics.median(others), 3),
            "bare_actor_other_nodes_samples_s": [round(x, 3) for x in others]}


def where_time_goes(cluster, env: dict, repeats: int = 3) -> dict:
    import tempfile

    rldoctor = str(BIN / "rldoctor")
    interpreter = statistics.median(timed([[rldoctor, "--version"]], env) for _ in range(repeats))
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "snap.json"
        collect_s = timed([[rldoctor, "collect", "--address", cluster.address,
                            "--output", str(snap)]], env)
        doc = json.loads(snap.read_text())
        report_s = statistics.median(timed([[rldoctor, "check", "--from", str(snap)]], env)
                                     for _ in range(repeats))
    timing = doc.get("timing") or {}
    return {
        "interpreter_and_imports_s": round(interpreter, 3),
        "collect_wall_s": round(collect_s, 3),
        "joined_s": timing.get("joined_s"),
        "probes_started_s": timing.get("probes_started_s"),
        "raylets_pinged_s": timing.get("raylets_pinged_s"),
        "probed_s": timing.get("probed_s"),
        "collected_s": timing.get("collected_s"),
        "collectors_s": {section: record.get("duration_s")
                         for section, record in (doc.get("collectors") or {}).items()},
        "checks_and_rendering_s": round(max(report_s - interpreter, 0.0), 3),
        **bare_actor_floor(cluster, env),
    }


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
        phases = where_time_goes(cluster, env)
    trio = statistics.median(theirs)
    floor = phases["interpreter_and_imports_s"] + (phases["joined_s"] or 0)
    result = {
        "nodes": 3,
        "repeats": args.repeats,
        "rldoctor_check_median_s": round(statistics.median(ours), 3),
        "ray_cli_three_commands_median_s": round(statistics.median(theirs), 3),
        "ratio_rldoctor_over_ray_cli": round(statistics.median(ours) / statistics.median(theirs), 3),
        "rldoctor_samples_s": [round(x, 3) for x in ours],
        "ray_cli_samples_s": [round(x, 3) for x in theirs],
        "phases": phases,
        # What no check with a probe on every node can go under: the interpreter, joining and
        # Ray's start of one bare worker per node (nothing submitted, measured, checked or shown)
        "floor_over_ray_cli": round((floor + phases["bare_actor_per_node_s"]) / trio, 3),
        # the same with the driver's own node read without a probe (the other nodes' only)
        "floor_without_own_node_probe_over_ray_cli":
            round((floor + phases["bare_actor_other_nodes_s"]) / trio, 3),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
