"""Every private Ray call rldoctor makes, each behind one function.

Ray has no public API for these facts. Each function here is covered by a test
(tests/test_private_ray_api.py) that fails if the pinned Ray stops providing it.
Only collectors import this module.
"""

from __future__ import annotations

from typing import Any


def resolve_local_address(address: str | None) -> str:
    """`auto` -> host:port of the cluster started on this machine (ConnectionError if none)."""
    from ray._private.services import canonicalize_bootstrap_address_or_die

    return canonicalize_bootstrap_address_or_die(address or "auto")


def available_resources_per_node() -> dict[str, dict[str, float]]:
    """{node id hex: {resource: amount available now}} from the GCS (needs a connected driver)."""
    from ray._private.state import available_resources_per_node as per_node

    return per_node()


def resource_demands(gcs_address: str, timeout_s: float) -> dict[str, Any]:
    """Pending task/actor shapes and pending placement groups, as `ray status` shows them.

    Read from the GCS through the autoscaler v2 SDK, which works whether or not an
    autoscaler runs.
    """
    from ray.autoscaler.v2.sdk import get_cluster_status

    status = get_cluster_status(gcs_address, timeout=max(1, int(timeout_s)))
    demands = status.resource_demands
    task_actor = []
    for demand in demands.ray_task_actor_demand:
        for by_count in demand.bundles_by_count:
            task_actor.append({"shape": dict(by_count.bundle), "count": int(by_count.count)})
    groups = []
    for pg in demands.placement_group_demand:
        bundles = []
        for by_count in pg.bundles_by_count:
            bundles += [dict(by_count.bundle)] * int(by_count.count)
        groups.append({"pg_id": pg.pg_id, "strategy": pg.strategy, "state": pg.state,
                       "bundles": bundles})
    constraints = []
    for demand in demands.cluster_constraint_demand:
        for by_count in demand.bundles_by_count:
            constraints.append({"shape": dict(by_count.bundle), "count": int(by_count.count)})
    return {"task_actor": task_actor, "placement_groups": groups,
            "cluster_constraints": constraints}
