"""The private Ray calls the collectors make, each behind one function.

Ray has no public API for these facts. Each function here is covered by
tests/test_e2e_cluster.py (test_private_ray_calls_still_work_on_this_ray, and
test_cluster_events_never_reach_rldoctors_stdout for the relay switch), which fails if
the pinned Ray stops providing it. Only collectors import this module. Private Ray used
elsewhere, each at its one place: the GCS auth probe's raw gRPC call (collect/auth.py),
Ray's cluster-YAML validator and node providers (lint/cluster_yaml.py, `ray.autoscaler.
_private`), and the local bootstrap address of smoke-train (cluster/smoke.py).
"""

from __future__ import annotations

from typing import Any


def resolve_local_address(address: str | None) -> str:
    """`auto` -> host:port of the cluster started on this machine (ConnectionError if none)."""
    from ray._private.services import canonicalize_bootstrap_address_or_die

    return canonicalize_bootstrap_address_or_die(address or "auto")


def silence_driver_relay() -> bool:
    """Keep Ray from printing the cluster's error events to this driver's stdout.

    Every driver's error listener prints events such as "(raylet) The node with node id
    ... has been marked dead" to sys.stdout, at any moment until the process exits, also
    after the collection (which redirects the file descriptors only while it runs): one
    such line before the report makes `--format json` unparseable. False when this Ray
    has no such switch.
    """
    import ray._private.worker as worker

    if not hasattr(worker, "_worker_logs_enabled"):
        return False
    worker._worker_logs_enabled = False
    return True


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


def grpc_channel(address: str):
    """The channel Ray's own clients use (with its auth interceptor, 2.52+); older releases
    keep the same helper in ray._private.utils, and plain grpc is the last resort."""
    try:
        from ray._private.grpc_utils import init_grpc_channel
    except ImportError:
        try:
            from ray._private.utils import init_grpc_channel
        except ImportError:
            import grpc

            return grpc.insecure_channel(address)
    return init_grpc_channel(address)


def raylet_ping(ip: str, port: int, timeout_s: float) -> str:
    """One cheap RPC to a node's raylet (GetSystemConfig); raises if it does not answer in time.

    With the channel Ray's own clients use (and its auth interceptor). Returns the raylet's
    system config: the JSON of the `_system_config` the cluster was started with.
    """
    from ray.core.generated import node_manager_pb2, node_manager_pb2_grpc

    channel = grpc_channel(f"{ip}:{port}")
    try:
        reply = node_manager_pb2_grpc.NodeManagerServiceStub(channel).GetSystemConfig(
            node_manager_pb2.GetSystemConfigRequest(), timeout=timeout_s)
    finally:
        channel.close()
    return reply.system_config


def raylet_node_stats(ip: str, port: int, timeout_s: float) -> dict[str, Any]:
    """Object store figures and per-worker object counts straight from one node's raylet.

    What `ray memory` reads (ray._private.internal_api.node_stats), with our own
    timeout instead of its fixed 30 s, so a dying node cannot stall the doctor.
    """
    from ray.core.generated import node_manager_pb2, node_manager_pb2_grpc

    channel = grpc_channel(f"{ip}:{port}")
    try:
        stub = node_manager_pb2_grpc.NodeManagerServiceStub(channel)
        reply = stub.GetNodeStats(node_manager_pb2.GetNodeStatsRequest(include_memory_info=False),
                                  timeout=timeout_s)
    finally:
        channel.close()
    s = reply.store_stats
    store = {field: getattr(s, field) for field in (
        "object_store_bytes_used", "object_store_bytes_avail", "object_store_bytes_primary_copy",
        "object_store_bytes_fallback", "num_local_objects", "object_pulls_queued",
        "spilled_bytes_total", "spilled_objects_total", "spill_time_total_s",
        "restored_bytes_total", "restored_objects_total", "restore_time_total_s")}
    owners = [{"pid": w.pid, "worker_id": w.worker_id.hex(), "actor_id": w.actor_id.hex() or None,
               "job_id": w.job_id.hex(), "num_owned_objects": w.num_owned_objects,
               "used_object_store_memory": w.used_object_store_memory,
               "num_in_plasma": w.num_in_plasma}
              for w in reply.core_workers_stats
              if w.num_owned_objects or w.used_object_store_memory or w.num_in_plasma]
    owners.sort(key=lambda o: (-o["used_object_store_memory"], -o["num_owned_objects"]))
    return {"store": store, "top_owners": owners[:5], "num_workers": reply.num_workers}


def http_auth_headers() -> dict[str, str]:
    """Headers that authenticate an HTTP request to the dashboard when token auth is on.

    What Ray's own state API client sends (ray.util.state builds its headers this way);
    empty when the cluster does not use token auth. Follows the mode rldoctor joined in
    (rldoctor.cluster.auth.decide).
    """
    try:
        from ray._private.authentication.http_token_authentication import (
            get_auth_headers_if_auth_enabled,
        )
    except ImportError:  # Ray before 2.52 has no token authentication
        return {}

    return dict(get_auth_headers_if_auth_enabled({}) or {})


def refresh_auth_config() -> None:
    """Make an already imported Ray re-read RAY_AUTH_MODE and its token (it reads them at
    import); what Ray's own CLI does when it switches a process to token mode."""
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:  # Ray before 2.52: no token authentication to refresh
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def auth_mode_in_effect() -> str:
    """'token' or 'disabled': the mode this process's Ray core uses now."""
    try:
        from ray._raylet import AuthenticationMode, get_authentication_mode
    except ImportError:  # Ray before 2.52 has no token authentication
        return "disabled"
    return "token" if get_authentication_mode() == AuthenticationMode.TOKEN else "disabled"


# -- without a driver: what a client Ray refused (a version mismatch) can still read ------

def node_table_without_driver(gcs_address: str) -> tuple[list[dict], dict[str, dict[str, float]]]:
    """(every node as `ray.nodes()` gives it, {node id: resources available now}), read
    straight from the GCS, as `ray memory` does (ray._private.internal_api)."""
    from ray._private.internal_api import get_state_from_address

    state = get_state_from_address(gcs_address)
    try:
        return state.node_table(), state.available_resources_per_node()
    finally:
        state.disconnect()


def gcs_kv_get(gcs_address: str, key: bytes, namespace: bytes, timeout_s: float) -> bytes | None:
    """One value of the GCS's internal KV store, read with a GCS client (no driver)."""
    from ray._raylet import GcsClient

    return GcsClient(address=gcs_address).internal_kv_get(key, namespace, timeout=timeout_s)


def recorded_cluster_versions(gcs_address: str, timeout_s: float) -> dict[str, str]:
    """The Ray and Python versions the head recorded when it started, which Ray compares a
    joining driver's with (ray._private.utils.check_version_info)."""
    import json

    from ray._common.usage.usage_constants import CLUSTER_METADATA_KEY
    from ray._private.ray_constants import KV_NAMESPACE_CLUSTER

    raw = gcs_kv_get(gcs_address, CLUSTER_METADATA_KEY, KV_NAMESPACE_CLUSTER, timeout_s)
    metadata = json.loads(raw) if raw else {}
    return {k: metadata[f"{k}_version"] for k in ("ray", "python") if metadata.get(f"{k}_version")}


def local_raylet_node_ids() -> set[str]:
    """Node ids of the raylets running on this machine, found the way `ray.init` finds the
    node a driver attaches to (services.find_node_ids: the raylets' `--node_id` flags)."""
    try:
        from ray._private.services import find_node_ids

        return set(find_node_ids())
    except (ImportError, AttributeError):
        import os

        found = set()
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            found.update(a.split(b"=", 1)[1].decode() for a in args if a.startswith(b"--node_id="))
        return found


def dashboard_address(gcs_address: str, timeout_s: float) -> str | None:
    """HOST:PORT of the dashboard (and Ray's state API), as the head recorded it in the GCS;
    where Ray's own get_address_for_submission_client looks it up."""
    from ray._private.ray_constants import DASHBOARD_ADDRESS, KV_NAMESPACE_DASHBOARD

    raw = gcs_kv_get(gcs_address, DASHBOARD_ADDRESS.encode(), KV_NAMESPACE_DASHBOARD, timeout_s)
    return raw.decode() if raw else None



# -- the autoscaler's own state (rldoctor.cluster.autoscaler) -------------------------------

# Where Ray keeps it: the v2 flag (namespace __autoscaler), v1's status JSON and its error text,
# and v1's request_resources() bundles (default namespace), as ray/_private/ray_constants.py
# and ray/autoscaler/_private/commands.py name them (2.40 to 2.60).
AUTOSCALER_V2_FLAG = (b"__autoscaler_v2_enabled", b"__autoscaler")
AUTOSCALER_V1_KEYS = {"status": b"__autoscaling_status", "error": b"__autoscaling_error",
                      "request_resources": b"autoscaler_resource_request"}


def autoscaler_state(gcs_address: str, timeout_s: float) -> dict[str, Any]:
    """What the GCS holds about the autoscaler, read with one GCS client and no driver:
    {"v2_flag": b"1"/b"0"/None, "v1": {status, error, request_resources: bytes or None},
    "cluster_status": the raw GetClusterStatusReply as a dict (protobuf field names), or
    "cluster_status_error"}. The reply is parsed here, not through Ray's SDK, which drops the
    infeasible requests (ray/autoscaler/v2/schema.py)."""
    from ray._raylet import GcsClient

    client = GcsClient(address=gcs_address)
    out: dict[str, Any] = {"v2_flag": client.internal_kv_get(
        AUTOSCALER_V2_FLAG[0], AUTOSCALER_V2_FLAG[1], timeout=timeout_s)}
    out["v1"] = {name: client.internal_kv_get(key, None, timeout=timeout_s)
                 for name, key in AUTOSCALER_V1_KEYS.items()}
    try:
        from ray.core.generated.autoscaler_pb2 import GetClusterStatusReply

        reply = GetClusterStatusReply()
        reply.ParseFromString(client.get_cluster_status(timeout_s=max(1, int(timeout_s))))
        out["cluster_status"] = message_dict(reply)
    except Exception as exc:  # an older GCS without the call: v1's JSON still says a lot
        out["cluster_status_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return out


def message_dict(message) -> dict[str, Any]:
    """A protobuf message as a dict of its set fields (field names as in the .proto; bytes as
    hex, enums by name, maps as dicts), with the message's own API only."""
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        out[field.name] = _field_value(field, value)
    return out


def _field_value(field, value):
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value_field = field.message_type.fields_by_name["value"]
        return {k: _scalar(value_field, v) for k, v in value.items()}
    repeated = getattr(field, "is_repeated", None)  # newer protobuf; `label` before
    if repeated is None:
        repeated = field.label == 3  # LABEL_REPEATED
    if repeated:
        return [_scalar(field, v) for v in value]
    return _scalar(field, value)


def _scalar(field, value):
    if field.message_type is not None:
        return message_dict(value)
    if field.enum_type is not None:
        return field.enum_type.values_by_number[value].name if value in field.enum_type.values_by_number else value
    if isinstance(value, bytes):
        return value.hex()
    return value
