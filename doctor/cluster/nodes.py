"""Every node the GCS knows, alive or dead, with Ray's death reason: the nodes section.

The one reader of Ray's node table (`ray.nodes()`): every other part of rldoctor takes a
node's address, ports, labels and resources from this section's rows (`read()` for a caller
that has no snapshot, smoke-train's driver; tests/test_one_reader.py keeps it so).
"""

from __future__ import annotations

from rldoctor.cluster.private import available_resources_per_node
from rldoctor.cluster.sections import section

# NodeDeathInfo.Reason in Ray's gcs.proto
DEATH_REASONS = {
    0: "UNSPECIFIED",
    1: "EXPECTED_TERMINATION",
    2: "UNEXPECTED_TERMINATION",
    3: "AUTOSCALER_DRAIN_PREEMPTED",
    4: "AUTOSCALER_DRAIN_IDLE",
}
HEAD_RESOURCE = "node:__internal_head__"
# The ports each node's record in ray.nodes() names, under rldoctor's names for them.
NODE_PORTS = {"node_manager": "NodeManagerPort", "object_manager": "ObjectManagerPort",
              "metrics_export": "MetricsExportPort", "metrics_agent": "MetricsAgentPort",
              "dashboard_agent_http": "DashboardAgentListenPort",
              "runtime_env_agent": "RuntimeEnvAgentPort"}


def collect(conn, budget) -> list[dict]:
    return read()


def read(free_required: bool = True) -> list[dict]:
    """The nodes section, read now from the GCS of the cluster this driver joined. With
    `free_required=False`, resources free now that cannot be read are left empty."""
    import ray

    try:
        free = available_resources_per_node()
    except Exception:
        if free_required:
            raise
        free = {}
    return rows(ray.nodes(), free)


def read_without_driver(gcs_address: str) -> list[dict]:
    """The nodes section read straight from the GCS, before (or instead of) joining."""
    from rldoctor.cluster.private import node_table_without_driver

    return rows(*node_table_without_driver(gcs_address))


def times(budget, address: str) -> dict[str, tuple]:
    """{node id: (start, end) in epoch ms} from the state API's node list (the jobs section
    dates each dead node's end with it)."""
    from ray.util.state import list_nodes

    from rldoctor.cluster import bounded

    return {n.node_id: (getattr(n, "start_time_ms", None), getattr(n, "end_time_ms", None))
            for n in bounded.listed("jobs", list_nodes, address=address, detail=True, limit=10_000,
                                    timeout=int(budget.left(5)), raise_on_missing_output=False)}


def alive_ids(nodes: list[dict] | None) -> list[str]:
    """The alive nodes of a nodes section; read now when the section is missing."""
    return [n["node_id"] for n in (read() if nodes is None else nodes) if n.get("alive")]


def rows(table: list[dict], available: dict[str, dict]) -> list[dict]:
    """The section from Ray's node table (`ray.nodes()` dicts) and the resources free now."""
    out = []
    for n in table:
        node_id = n["NodeID"]
        resources = dict(n.get("Resources") or {})
        alive = bool(n.get("Alive"))
        out.append({
            "node_id": node_id,
            "ip": n.get("NodeManagerAddress"),
            "node_name": n.get("NodeName"),
            "is_head": HEAD_RESOURCE in resources,
            "alive": alive,
            "state": "ALIVE" if alive else "DEAD",
            "death_reason": None if alive else DEATH_REASONS.get(n.get("DeathReason"), "UNSPECIFIED"),
            "death_message": None if alive else (n.get("DeathReasonMessage") or ""),
            "labels": dict(n.get("Labels") or {}),
            "resources_total": resources,
            "resources_available": dict(available.get(node_id, {})) if alive else {},
            "metrics_export_port": n.get("MetricsExportPort"),
            "ports": {name: n.get(key) for name, key in NODE_PORTS.items()},
            # raylet, raylet.1, ...: nodes sharing one log folder write raylet.1.out, ... alike
            "raylet_socket": (n.get("RayletSocketName") or "").rsplit("/", 1)[-1] or None,
        })
    out.sort(key=lambda node: (not node["is_head"], not node["alive"], node["node_id"]))
    return out


@section("nodes")
def nodes_section(ctx) -> list[dict]:
    """Every node Ray knows, alive and dead, with its resources and ports."""
    return collect(ctx.conn, ctx.budget)
