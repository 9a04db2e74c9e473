"""Every node the GCS knows, alive or dead, with Ray's death reason."""

from __future__ import annotations

from rldoctor.cluster.private import available_resources_per_node

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
    import ray

    return rows(ray.nodes(), available_resources_per_node())


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
        })
    out.sort(key=lambda node: (not node["is_head"], not node["alive"], node["node_id"]))
    return out
