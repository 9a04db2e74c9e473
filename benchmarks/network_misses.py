"""How often RLD202 and RLD201 miss a slowed node, or name a healthy one (issue 48).

    python benchmarks/network_misses.py [--runs 10] [--case rld202|rld201|both] [--keep DIR]

Each run starts a fresh 3-node cluster (tests/localcluster.py, 1 CPU each) and runs one
`rldoctor check --format json` against it at once, with no collection before it:
  * rld202: node 1's object chunks are delayed as in tests/test_e2e_network.py
    (CHUNK_PUSH_DELAY, Ray's RAY_testing_asio_delay_us); the first check after `ray start`,
    when every node's workers are still starting. Found: an RLD202 on node 1.
  * rld201: node 2 sits in another zone and every task pushed to it is delayed 25 ms, while
    two busy processes (`yes > /dev/null`, not pinned) load the host from the cluster's start
    to the check's end. Found: an RLD201 (warn or fail) on node 2.
False: an RLD201 or RLD202 on any other node. Prints one line per run and a JSON summary;
--keep writes each run's report to DIR. Run it under `nice -n 19` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import run_rldoctor  # noqa: E402
from localcluster import LocalCluster, NodeSpec  # noqa: E402
from test_e2e_network import CHUNK_PUSH_DELAY  # noqa: E402

DELAY_201_S = 0.025
PUSH_TASK_25MS = (f"CoreWorkerService.grpc_server.PushTask={DELAY_201_S * 1e6:.0f}:"
                  f"{DELAY_201_S * 1e6:.0f}")
BUSY_PROCESSES = 2


def specs_for(case: str) -> tuple[list[NodeSpec], int]:
    """The cluster of a case and the index of its slowed node."""
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    if case == "rld202":
        specs[1].env["RAY_testing_asio_delay_us"] = CHUNK_PUSH_DELAY
        return specs, 1
    specs[2].labels = {"ray.io/availability-zone": "zone-b"}
    specs[2].env["RAY_testing_asio_delay_us"] = PUSH_TASK_25MS
    return specs, 2


def one_run(case: str, keep: Path | None, index: int) -> dict:
    specs, slow = specs_for(case)
    code = case.upper()
    busy = []
    try:
        if case == "rld201":
            busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
                    for _ in range(BUSY_PROCESSES)]
        with LocalCluster(specs) as cluster:
            started = time.monotonic()
            result = run_rldoctor("check", "--address", cluster.address, "--format", "json",
                                  env=cluster.client_env())
            wall = time.monotonic() - started
            slow_id = cluster.nodes[slow].node_id
            doc = result.json()
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    if keep:
        (keep / f"{case}-{index:02d}.json").write_text(json.dumps(doc, indent=1))
    mine = [f for f in doc["findings"] if f["code"] == code and f["subject"] == f"node:{slow_id}"]
    false = [f"{f['code']} {f['subject']}" for f in doc["findings"]
             if f["code"] in ("RLD201", "RLD202") and f["subject"] != f"node:{slow_id}"]
    network = (doc.get("snapshot") or {}).get("network") or {}
    return {"case": case, "found": bool(mine), "severity": mine[0]["severity"] if mine else None,
            "false": false, "check_s": round(wall, 1), "exit": result.code,
            "evidence": _numbers(mine[0]["evidence"]) if mine else _survey(network, slow_id)}


def _numbers(evidence: dict) -> dict:
    keys = ("over_baseline_ms", "bars_ms", "bandwidth_mib_s", "median_mib_s", "bar_fraction")
    out = {k: evidence[k] for k in keys if k in evidence}
    recheck = evidence.get("recheck") or {}
    for k in ("p50_ms", "peer_p50_ms", "best_mib_s", "peer_best_mib_s"):
        if k in recheck:
            out[f"recheck_{k}"] = recheck[k]
    return out


def _survey(network: dict, slow_id: str) -> dict:
    """What the snapshot says of the slowed node when nothing was reported."""
    entry = (network.get("nodes") or {}).get(slow_id) or {}
    return {k: entry.get(k) for k in ("p50_ms", "bandwidth_mib_s", "transfer_samples_mib_s",
                                      "recheck", "transfer_recheck") if k in entry}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--case", choices=("rld202", "rld201", "both"), default="both")
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    cases = ("rld202", "rld201") if args.case == "both" else (args.case,)
    summary = {}
    for case in cases:
        runs = []
        for i in range(args.runs):
            run = one_run(case, args.keep, i)
            runs.append(run)
            word = "found" if run["found"] else "MISSED"
            print(f"{case} run {i + 1}/{args.runs}: {word}"
                  f"{' (' + run['severity'] + ')' if run['severity'] else ''}; false: "
                  f"{run['false'] or 'none'}; check {run['check_s']} s; {json.dumps(run['evidence'])}",
                  flush=True)
        summary[case] = {"runs": len(runs), "found": sum(r["found"] for r in runs),
                         "runs_with_false": sum(bool(r["false"]) for r in runs)}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
