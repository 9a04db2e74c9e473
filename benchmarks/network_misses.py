"""How often RLD202 and RLD201 miss a slowed node, or name a healthy one (issue 48).

    python benchmarks/network_misses.py [--runs 10] [--case rld202|rld201|both] [--keep DIR]

    python benchmarks/network_misses.py --replay DIR   (judge kept snapshots again, no cluster)

Each run starts a fresh 3-node cluster (tests/localcluster.py, 1 CPU each) and runs one
`rldoctor collect` against it at once, with no collection before it, then judges the
snapshot with `rldoctor check --from` (kept with --keep, so a change to the checks can be
judged on the same snapshots with --replay):
  * rld202: node 1's object chunks are delayed as in tests/test_e2e_network.py
    (CHUNK_PUSH_DELAY, Ray's RAY_testing_asio_delay_us); the first check after `ray start`,
    when every node's workers are still starting. Found: an RLD202 on node 1.
  * rld201: node 2 sits in another zone and every task pushed to it is delayed 25 ms, while
    two busy processes (`yes > /dev/null`, not pinned) load the host from 2 s before the
    collection to its end. Found: an RLD201 (warn or fail) on node 2.
False: an RLD201 or RLD202 on any other node. Prints one line per run and a JSON summary. Run it under `nice -n 19` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
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


def one_run(case: str, keep: Path, index: int) -> dict:
    specs, slow = specs_for(case)
    snap = keep / f"{case}-{index:02d}.snapshot.json"
    busy = []
    try:
        # A loaded 2-core host under `nice -n 19` starts a cluster in minutes, not in 90 s.
        cluster = LocalCluster(specs).start(timeout_s=300)
        try:
            if case == "rld201":
                busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
                        for _ in range(BUSY_PROCESSES)]
                time.sleep(2)
            started = time.monotonic()
            collected = run_rldoctor("collect", "--address", cluster.address, "--output",
                                     str(snap), env=cluster.client_env())
            wall = time.monotonic() - started
            if collected.code != 0:  # could not join a cluster this loaded host starves: no run
                raise RuntimeError(f"collect exited {collected.code}: {collected.stderr.strip()[:200]}")
            (keep / f"{case}-{index:02d}.slow").write_text(cluster.nodes[slow].node_id)
        finally:
            cluster.stop()
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    return {**judge(case, snap), "collect_s": round(wall, 1)}


def judge(case: str, snap: Path) -> dict:
    """`rldoctor check --from` the snapshot: is the slowed node found, is another named?"""
    code = case.upper()
    slow_id = snap.with_name(snap.name.replace(".snapshot.json", ".slow")).read_text()
    result = run_rldoctor("check", "--from", str(snap), "--format", "json")
    doc = result.json()
    mine = [f for f in doc["findings"] if f["code"] == code and f["subject"] == f"node:{slow_id}"]
    false = [f"{f['code']} {f['subject']}" for f in doc["findings"]
             if f["code"] in ("RLD201", "RLD202") and f["subject"] != f"node:{slow_id}"]
    notes = [n for n in doc.get("notes") or [] if n.get("code") == code
             and n.get("subject") == f"node:{slow_id}"]
    return {"case": case, "found": bool(mine), "severity": mine[0]["severity"] if mine else None,
            "false": false,
            "evidence": _numbers((mine or notes or [{}])[0].get("evidence") or {})}


def _numbers(evidence: dict) -> dict:
    keys = ("over_baseline_ms", "bars_ms", "bandwidth_mib_s", "median_mib_s", "bar_fraction")
    out = {k: evidence[k] for k in keys if k in evidence}
    recheck = evidence.get("recheck") or {}
    for k in ("p50_ms", "peer_p50_ms", "best_mib_s", "peer_best_mib_s"):
        if k in recheck:
            out[f"recheck_{k}"] = recheck[k]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--case", choices=("rld202", "rld201", "both"), default="both")
    parser.add_argument("--keep", type=Path, help="keep each run's snapshot in this directory")
    parser.add_argument("--replay", type=Path, help="judge the snapshots kept in this directory "
                        "again with the installed checks (no cluster)")
    args = parser.parse_args()
    if args.replay:
        return replay(args.replay)
    keep = args.keep or Path(tempfile.mkdtemp(prefix="rldoctor-network-misses-"))
    keep.mkdir(parents=True, exist_ok=True)
    cases = ("rld202", "rld201") if args.case == "both" else (args.case,)
    summary = {}
    for case in cases:
        runs = []
        for i in range(args.runs):
            for attempt in range(3):  # a cluster that did not start (a loaded host) is no run
                try:
                    run = one_run(case, keep, i)
                    break
                except RuntimeError as exc:
                    print(f"{case} run {i + 1}: no collection ({exc}); again",
                          flush=True)
            else:
                raise SystemExit(f"{case}: three clusters in a row did not start")
            runs.append(run)
            _say(f"{case} run {i + 1}/{args.runs}", run)
        summary[case] = _count(runs)
    print(json.dumps(summary, indent=2))
    return 0


def replay(keep: Path) -> int:
    summary: dict = {}
    for snap in sorted(keep.glob("*.snapshot.json")):
        case = snap.name.split("-")[0]
        run = judge(case, snap)
        _say(snap.name, run)
        summary.setdefault(case, []).append(run)
    print(json.dumps({case: _count(runs) for case, runs in summary.items()}, indent=2))
    return 0


def _say(what: str, run: dict) -> None:
    word = "found" if run["found"] else "MISSED"
    print(f"{what}: {word}{' (' + run['severity'] + ')' if run['severity'] else ''}; false: "
          f"{run['false'] or 'none'}; {json.dumps(run['evidence'])}", flush=True)


def _count(runs: list[dict]) -> dict:
    return {"runs": len(runs), "found": sum(r["found"] for r in runs),
            "runs_with_false": sum(bool(r["false"]) for r in runs)}


if __name__ == "__main__":
    sys.exit(main())
