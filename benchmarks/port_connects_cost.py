"""What RLD204's port connects add to a healthy `rldoctor check`, and what a closed port costs.

    python benchmarks/port_connects_cost.py [--repeats 7] [--hosts]

Starts the 3-node test cluster (head + 2 workers on loopback addresses; with --hosts, three
hosts made of network namespaces, as root) and times, alternating, `rldoctor check` with
the connects and without them (the same CLI with the reach collector switched off inside
its own process, which is how the check ran before RLD204). Prints the medians, their
difference, the collector's own duration from `rldoctor collect`, and every sample. With
--hosts it then drops new connections to worker 2's object-manager port from every host and
times the check again (RLD204 says the check stays within 2x the healthy wall + 5 s).
Stops the cluster (and removes the namespaces) at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from localcluster import BIN, LocalCluster, NodeSpec  # noqa: E402

WITHOUT_CONNECTS = (
    "import sys\n"
    "from rldoctor.cluster import reach\nfrom rldoctor.cluster.sections import Unavailable\n"
    "def off(*args, **kwargs):\n"
    "    raise Unavailable('switched off for the benchmark')\n"
    "reach.collect = off\n"
    "from rldoctor.cli import main\n"
    "sys.argv = ['rldoctor'] + sys.argv[1:]\n"
    "sys.exit(main())\n"
)


def timed(cmd: list[str], env: dict) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-500:]}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--hosts", action="store_true", help="one network namespace per node")
    args = parser.parse_args()
    with ExitStack() as stack:
        hosts = None
        if args.hosts:
            from netns import Hosts

            hosts = stack.enter_context(Hosts(3))
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"},
                          ip=hosts.ip(i) if hosts else None,
                          command_prefix=hosts.prefix(i) if hosts else []) for i in range(3)]
        cluster = stack.enter_context(LocalCluster(specs))
        env, prefix = cluster.client_env(), cluster.client_prefix
        check = ["check", "--address", cluster.address, "--format", "json"]
        with_cmd = [*prefix, str(BIN / "rldoctor"), *check]
        without_cmd = [*prefix, sys.executable, "-c", WITHOUT_CONNECTS, *check]
        timed(with_cmd, env)
        timed(without_cmd, env)
        on, off, collector = [], [], []
        for _ in range(args.repeats):
            on.append(timed(with_cmd, env))
            off.append(timed(without_cmd, env))
        for _ in range(3):
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                subprocess.run([*prefix, str(BIN / "rldoctor"), "collect", "--address",
                                cluster.address, "--output", out.name], env=env, check=True,
                               capture_output=True)
                doc = json.loads(Path(out.name).read_text())
                collector.append(doc["collectors"]["reach"]["duration_s"])
        result = {
            "nodes": 3, "hosts": "network namespaces" if hosts else "loopback addresses",
            "repeats": args.repeats, "connects_per_check": doc["reach"]["connects"],
            "check_median_s_with_connects": round(statistics.median(on), 3),
            "check_median_s_without_connects": round(statistics.median(off), 3),
            "added_median_s": round(statistics.median(on) - statistics.median(off), 3),
            "reach_collector_s": collector,
            "with_samples_s": [round(x, 3) for x in on],
            "without_samples_s": [round(x, 3) for x in off],
        }
        if hosts:
            [node] = [n for n in doc["nodes"] if n["node_id"] == cluster.nodes[2].node_id]
            hosts.block(2, node["ports"]["object_manager"])
            blocked = [timed(with_cmd, env) for _ in range(3)]
            hosts.unblock_all()
            result["object_manager_port_dropped_s"] = [round(x, 3) for x in blocked]
            result["bound_s"] = round(2 * statistics.median(on) + 5, 3)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
