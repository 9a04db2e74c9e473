"""Per-node facts from one zero-CPU probe per alive node: versions and host memory.

Fills two snapshot sections: `versions` (Ray, Python, RLlib, torch, gymnasium on
the driver and every node) and `hosts` (memory, kernel OOM kills, Ray's memory
monitor settings, /dev/shm).
"""

from __future__ import annotations

import re

from rldoctor.collect import probes

PROBE_TIMEOUT_S = 8.0


def driver_only(mismatch_message: str) -> dict:
    """What can be said when Ray refused the driver for a version mismatch."""
    cluster = {}
    for key, pattern in (("ray", r"Ray:\s*([^\s]+)"), ("python", r"Python:\s*([^\s]+)")):
        match = re.search(pattern, mismatch_message)
        if match:
            cluster[key] = match.group(1)
    return {"driver": probes.versions_here(), "nodes": {}, "failed": {},
            "connect_error": " ".join(mismatch_message.split())[:400], "cluster": cluster}


def probe_nodes(conn, budget, nodes: list[dict] | None) -> dict:
    """Run `node_facts` pinned to every alive node; a node that does not answer is noted."""
    import ray

    probes.register()
    probe = ray.remote(num_cpus=0, max_retries=0)(probes.node_facts)
    if nodes is None:
        alive = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
    else:
        alive = [n["node_id"] for n in nodes if n.get("alive")]
    refs = {probe.options(label_selector={"ray.io/node-id": node_id},
                          name="rldoctor.node_facts").remote(): node_id
            for node_id in alive}
    wait_s = budget.left(PROBE_TIMEOUT_S)
    ready, not_ready = (ray.wait(list(refs), num_returns=len(refs), timeout=wait_s)
                        if refs else ([], []))
    facts, failed = {}, {}
    for ref in ready:
        node_id = refs[ref]
        try:
            facts[node_id] = ray.get(ref, timeout=1)
        except Exception as exc:  # the node died under the probe, or killed it for memory
            failed[node_id] = {"kind": "error",
                               "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
    for ref in not_ready:
        failed[refs[ref]] = {"kind": "timeout", "error": f"no answer within {wait_s:.0f}s"}
        try:
            ray.cancel(ref, force=True)
        except Exception:
            pass
    return {"facts": facts, "failed": failed}


def versions_section(probed: dict) -> dict:
    return {"driver": probes.versions_here(),
            "nodes": {nid: f["versions"] for nid, f in probed["facts"].items()},
            "failed": dict(probed["failed"])}


def hosts_section(probed: dict) -> dict:
    return {nid: f["host"] for nid, f in probed["facts"].items()}
