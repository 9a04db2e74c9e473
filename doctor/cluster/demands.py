"""Resource demands that wait: from the GCS, attributed to actors by the state API."""

from __future__ import annotations

from rldoctor.cluster import bounded
from rldoctor.cluster.cluster_facts import state_api_address
from rldoctor.cluster.private import resource_demands
from rldoctor.cluster.sections import section

MAX_PENDING_ACTORS = 1000


def v1_request_resources_demand(gcs_address: str, timeout_s: float) -> list[dict]:
    """request_resources() under autoscaler v1: a KV key, not the GCS constraint v2 reads."""
    from rldoctor.cluster.autoscaler import v1_request_resources
    from rldoctor.cluster.private import AUTOSCALER_V1_KEYS, gcs_kv_get

    raw = gcs_kv_get(gcs_address, AUTOSCALER_V1_KEYS["request_resources"], None, timeout_s)
    return [{**entry, "source": "request_resources (autoscaler v1: KV autoscaler_resource_request)"}
            for entry in v1_request_resources(raw)]


def collect(conn, budget, cluster: dict | None = None) -> dict:
    demands = resource_demands(conn.gcs_address, budget.left(5))
    for entry in demands["cluster_constraints"]:
        entry.setdefault("source", "request_resources (autoscaler v2: a GCS cluster constraint)")
    demands["cluster_constraints"] += v1_request_resources_demand(conn.gcs_address, budget.left(2))
    demands["pending_actors"] = []
    address = state_api_address(cluster)
    if demands["task_actor"] and address:
        from ray.util.state import list_actors

        actors = bounded.listed("demands", list_actors, address=address,
                                filters=[("state", "=", "PENDING_CREATION")], detail=True,
                                limit=MAX_PENDING_ACTORS, timeout=int(budget.left(5)),
                                raise_on_missing_output=False)
        demands["pending_actors"] = [
            {"actor_id": a.actor_id, "class_name": a.class_name, "name": a.name or "",
             "job_id": a.job_id, "required_resources": dict(a.required_resources or {}),
             "is_detached": a.is_detached, "ray_namespace": a.ray_namespace}
            for a in actors
        ]
    if demands["placement_groups"] and address:
        from ray.util.state import list_placement_groups

        groups = bounded.listed("demands", list_placement_groups, address=address,
                                filters=[("state", "=", "PENDING")], limit=MAX_PENDING_ACTORS,
                                timeout=int(budget.left(5)), raise_on_missing_output=False)
        names = {g.placement_group_id: (g.name or "", g.creator_job_id) for g in groups}
        for pg in demands["placement_groups"]:
            pg["name"], pg["creator_job_id"] = names.get(pg["pg_id"], ("", None))
    return demands


@section("demands", needs=("cluster",))
def demands_section(ctx) -> dict:
    return collect(ctx.conn, ctx.budget, ctx.doc.get("cluster"))
