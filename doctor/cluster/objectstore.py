"""Per-node object store use and spilling, read from every alive raylet in parallel."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from rldoctor.cluster.session import error_line
from rldoctor.cluster.private import raylet_node_stats

PER_NODE_TIMEOUT_S = 5.0
MAX_PARALLEL = 16


def collect(conn, budget, nodes: list[dict] | None, silent: dict[str, str] | None = None) -> dict:
    """{node_id: {store: {...}, top_owners: [...]}} plus per-node errors.

    Nodes in `silent` (their raylet did not answer a ping) are not asked again.
    """
    import ray

    ports = {n["NodeID"]: (n["NodeManagerAddress"], n["NodeManagerPort"])
             for n in ray.nodes() if n.get("Alive")}
    alive = [n["node_id"] for n in nodes if n.get("alive")] if nodes is not None else list(ports)
    timeout = budget.left(PER_NODE_TIMEOUT_S)
    out: dict = {"nodes": {}, "failed": dict(silent or {})}
    alive = [node_id for node_id in alive if node_id not in out["failed"]]

    def one(node_id):
        ip, port = ports[node_id]
        return node_id, raylet_node_stats(ip, port, timeout)

    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, max(1, len(alive)))) as pool:
        futures = [pool.submit(one, node_id) for node_id in alive if node_id in ports]
        for future, node_id in zip(futures, [n for n in alive if n in ports]):
            try:
                _, stats = future.result(timeout=timeout + 1)
                out["nodes"][node_id] = stats
            except Exception as exc:  # one silent raylet costs its own figures only
                out["failed"][node_id] = error_line(exc, 200)
    return out
