"""Per-node object store use and spilling, read from every alive raylet in parallel."""

from __future__ import annotations

from rldoctor.cluster.private import raylet_node_stats
from rldoctor.cluster.raylets import addresses, fan_out
from rldoctor.errors import first_line
from rldoctor.cluster.sections import section

PER_NODE_TIMEOUT_S = 5.0


def collect(conn, budget, nodes: list[dict] | None, silent: dict[str, str] | None = None) -> dict:
    """{node_id: {store: {...}, top_owners: [...]}} plus per-node errors.

    Nodes in `silent` (their raylet did not answer a ping) are not asked again.
    """
    timeout = budget.left(PER_NODE_TIMEOUT_S)
    out: dict = {"nodes": {}, "failed": dict(silent or {})}
    targets = {node_id: where for node_id, where in addresses(nodes).items()
               if node_id not in out["failed"]}
    pool, futures = fan_out(targets, lambda ip, port: raylet_node_stats(ip, port, timeout),
                            name="rldoctor-store")
    with pool:
        for node_id, future in futures.items():
            try:
                out["nodes"][node_id] = future.result(timeout=timeout + 1)
            except Exception as exc:  # one silent raylet costs its own figures only
                out["failed"][node_id] = first_line(exc, 200)
    return out


@section("object_store", needs=("nodes", "silent_raylets"))
def object_store_section(ctx) -> dict:
    return collect(ctx.conn, ctx.budget, ctx.doc.get("nodes"), ctx.value("silent_raylets"))
