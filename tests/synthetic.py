"""A big cluster on paper: a snapshot of N nodes and M actors grown from recorded fixtures.

Real records are copied and renumbered, so every field has the shape Ray gave it;
a few nodes and actors are made sick so every check has work to do.

    python tests/synthetic.py OUT.json [NODES] [ACTORS]
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _hex(i: int, width: int) -> str:
    return f"{i:0{width}x}"


def big_snapshot(nodes: int = 1000, actors: int = 20000) -> dict:
    healthy = json.loads((FIXTURES / "healthy-3node.json").read_text())
    faults = json.loads((FIXTURES / "worker-faults.json").read_text())
    doc = copy.deepcopy(healthy)
    node_t = healthy["nodes"][1]
    old = node_t["node_id"]
    ids = [_hex(i, 56) for i in range(nodes)]
    doc["nodes"], doc["versions"]["nodes"], doc["hosts"] = [], {}, {}
    doc["object_store"]["nodes"], doc["network"]["nodes"] = {}, {}
    for i, node_id in enumerate(ids):
        node = copy.deepcopy(node_t)
        node.update(node_id=node_id, ip=f"10.{i // 65536}.{i // 256 % 256}.{i % 256}",
                    is_head=(i == 0))
        node["labels"] = {"ray.io/availability-zone": f"zone-{'ab'[i % 2]}", "ray.io/node-id": node_id}
        if i % 250 == 7:
            node.update(alive=False, state="DEAD", death_reason="UNEXPECTED_TERMINATION",
                        death_message="health check failed due to missing too many heartbeats")
        doc["nodes"].append(node)
        doc["versions"]["nodes"][node_id] = copy.deepcopy(healthy["versions"]["nodes"][old])
        doc["hosts"][node_id] = copy.deepcopy(healthy["hosts"][old])
        doc["object_store"]["nodes"][node_id] = copy.deepcopy(healthy["object_store"]["nodes"][old])
        entry = copy.deepcopy(healthy["network"]["nodes"][old])
        entry["p50_ms"] = 1.0 + (30.0 if i % 100 == 3 else 0.0)
        entry["bandwidth_mib_s"] = 300.0 if i % 100 != 5 else 20.0
        doc["network"]["nodes"][node_id] = entry
    doc["network"]["baseline_node_id"] = ids[0]
    doc["versions"]["nodes"][ids[11]]["gymnasium"] = "1.0.0"
    actor_t = next(a for a in faults["actors"]["items"] if a["class_name"] == "EnvSimulator")
    doc["actors"] = {"items": [], "listed": actors, "total": actors, "truncated": False}
    for i in range(actors):
        actor = copy.deepcopy(actor_t)
        actor.update(actor_id=_hex(i, 32), class_name="SingleAgentEnvRunner" if i % 2 else "PPOTorchLearner",
                     name="", node_id=ids[i % nodes], pid=10000 + i,
                     num_restarts=3 if i % 997 == 0 else 0, state="ALIVE")
        actor["pids"] = [[ids[i % nodes], 10000 + i]]
        doc["actors"]["items"].append(actor)
    dead_t = faults["workers"]["dead"]
    doc["workers"] = {"dead": [], "truncated": False, "oom_tasks": []}
    for i in range(5000):
        worker = copy.deepcopy(dead_t[i % len(dead_t)])
        worker.update(worker_id=_hex(i, 56), node_id=ids[(i * 7) % nodes], pid=50000 + i)
        doc["workers"]["dead"].append(worker)
    doc["demands"] = copy.deepcopy(json.loads((FIXTURES / "infeasible-demands.json").read_text())["demands"])
    doc["source"] = {"kind": "synthetic", "address": f"{nodes} nodes, {actors} actors"}
    return doc


if __name__ == "__main__":
    out = Path(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    m = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    out.write_text(json.dumps(big_snapshot(n, m)))
    print(f"wrote {out}: {n} nodes, {m} actors")
