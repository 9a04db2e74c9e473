"""What `check` still reads when Ray refuses rldoctor as a driver (a version mismatch).

`ray.init` compares the joining driver's Ray and Python versions with the ones the head
recorded in the GCS when it started (`ray._private.utils.check_version_info`, the
`CLUSTER_METADATA` key of the GCS's KV store) and refuses the driver when they differ.
Every node of a running cluster passed the same comparison when its `ray start` joined,
so what differs is the machine rldoctor runs on. Without a driver there are no probe
actors, hence none of what they measure; the rest needs no driver and compares no
versions, and is read the way Ray's own CLI reads it:

- the GCS, with a GCS client: the node table (death reasons, resources free now), the
  pending demands (the autoscaler SDK, as `ray status`), the versions the head recorded,
  and the dashboard's address (its KV key, where Ray's job and state clients find it);
- Ray's state API at that address, over HTTP: actors, dead workers, tasks killed for
  memory, the RLlib trainings and their calls in flight;
- every raylet, over gRPC: object store use and spilling (`GetNodeStats`, as `ray memory`).

What could not run is in `collectors` with the reason: `probes` and the sections that come
from them (`hosts`: memory, kernel OOM counters, /dev/shm; `network`: round trips and
object transfer bandwidth; each node's own package versions), and the trainings' stacks.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

from rldoctor.collect import (NOT_FROM_A_LIVE_CLUSTER, Unavailable, _control_plane, _run_section,
                              _trainings, error_line, submit_state_api_sections)

GCS_TIMEOUT_S = 5.0
RAYLET_TIMEOUT_S = 5.0
MAX_PARALLEL = 16

# Sections that come from the probe actors, and what they would have held.
NEED_A_DRIVER = {
    "probes": "each node's own versions, host facts and round trips come from one probe actor "
              "per node, which needs rldoctor to join as a driver,",
    "hosts": "host memory, kernel OOM kills, memory-monitor settings and /dev/shm come from the "
             "probes, which need rldoctor to join as a driver,",
    "network": "round trips and object transfer bandwidth are measured by the probes, which "
               "need rldoctor to join as a driver,",
    "reach": "which Ray ports of each node the other nodes can connect to is tried from the "
             "probes, which need rldoctor to join as a driver,",
}
REFUSED = ("and Ray refused the driver: its Ray or Python version differs from the "
           "cluster's (RLD102)")


def collect(doc: dict, address: str, budget, mismatch) -> None:
    """Fill `doc` with every section that needs no driver; `mismatch` is the
    connect.VersionMismatch that ray.init raised (its message and the auth mode chosen)."""
    from rldoctor.collect import connect, versions
    from rldoctor.collect.auth import AuthDecision

    message = " ".join(str(mismatch).split())
    auth = getattr(mismatch, "auth", None) or AuthDecision(
        os.environ.get("RAY_AUTH_MODE", "disabled"), "unknown", why="not learned")
    doc.setdefault("notes", []).extend(auth.notes)
    doc["versions"] = versions.driver_only(str(mismatch))
    doc["collectors"]["versions"] = {"status": "ok"}
    recorded = _recorded_versions(address, budget)
    if recorded:
        doc["versions"]["cluster"] = recorded
        doc["versions"]["cluster_source"] = "recorded by the head in the GCS when it started"
    try:
        from rldoctor.collect.private import dashboard_address

        dashboard = dashboard_address(address, budget.left(GCS_TIMEOUT_S))
    except Exception:  # no dashboard key: the state API is off, `cluster` says so
        dashboard = None
    conn = connect.Connection(address=address, gcs_address=address, dashboard_url=dashboard,
                              namespace="", auth=auth)
    _run_section(doc, "cluster", lambda: _cluster_facts(conn, budget, recorded, message))
    raylets: dict[str, tuple[str, int]] = {}
    _run_section(doc, "nodes", lambda: _nodes(address, raylets))
    timings: dict[str, dict] = {}
    with ThreadPoolExecutor(max_workers=5) as pool:
        side, sources = submit_state_api_sections(pool, doc, conn, budget)
        _run_section(doc, "object_store", lambda: _object_store(raylets, budget, timings))
        for future in side:
            future.result()
        no_probes = NoProbes(raylets)
        _run_section(doc, "training", lambda: _trainings(doc, sources, no_probes, budget))
    doc["control_plane"] = _control_plane(doc, _Timings(timings))
    doc["collectors"]["control_plane"] = {"status": "ok"}
    for section, what in NEED_A_DRIVER.items():
        doc["collectors"][section] = {"status": "unavailable", "reason": f"{what} {REFUSED}"}
    read = [s for s in ("cluster", "nodes", "demands", "actors", "workers", "object_store",
                        "training", "control_plane")
            if (doc["collectors"].get(s) or {}).get("status") == "ok"]
    doc["notes"].append(
        f"Ray refused rldoctor as a driver ({_versions_line(doc['versions'])}), so the check ran "
        f"without joining: read from the GCS, the state API and the raylets: {', '.join(read)}; "
        f"not collected: {', '.join(NEED_A_DRIVER)} (they need a driver to start one probe "
        "actor per node)")
    for section, reason in NOT_FROM_A_LIVE_CLUSTER.items():
        doc["collectors"].setdefault(section, {"status": "unavailable", "reason": reason})


def _versions_line(section: dict) -> str:
    here, there = section.get("driver") or {}, section.get("cluster") or {}
    return (f"this machine runs Ray {here.get('ray')} with Python {here.get('python')}, the "
            f"cluster was started with Ray {there.get('ray', '?')} and Python "
            f"{there.get('python', '?')}")


def _recorded_versions(address: str, budget) -> dict:
    from rldoctor.collect.private import recorded_cluster_versions

    try:
        return recorded_cluster_versions(address, budget.left(GCS_TIMEOUT_S))
    except Exception:  # Ray's own message, parsed by driver_only, still names them
        return {}


def _cluster_facts(conn, budget, recorded: dict, message: str) -> dict:
    from rldoctor.collect import cluster as cluster_facts

    facts = cluster_facts.collect(conn, budget)
    facts["ray_version"] = recorded.get("ray")  # the cluster's, not this machine's
    facts["namespace_used_by_rldoctor"] = None
    facts["driver"] = {"joined": False, "why": message[:400]}
    return facts


def _nodes(address: str, raylets: dict) -> list[dict]:
    from rldoctor.collect import nodes
    from rldoctor.collect.private import node_table_without_driver

    table, available = node_table_without_driver(address)
    raylets.update({n["NodeID"]: (n["NodeManagerAddress"], n["NodeManagerPort"])
                    for n in table if n.get("Alive")})
    return nodes.rows(table, available)


def _object_store(raylets: dict, budget, timings: dict) -> dict:
    """Every alive raylet's store figures, in parallel; how long each took goes to `timings`."""
    from rldoctor.collect.private import raylet_node_stats

    if not raylets:
        raise Unavailable("no alive node in the GCS's node table")
    timeout = budget.left(RAYLET_TIMEOUT_S)
    out: dict = {"nodes": {}, "failed": {}}

    def one(node_id):
        started = time.perf_counter()
        try:
            stats = raylet_node_stats(*raylets[node_id], timeout)
        except Exception as exc:
            timings[node_id] = {"error": error_line(exc, 200), "rpc": "GetNodeStats",
                                "waited_s": round(time.perf_counter() - started, 2)}
            raise
        timings[node_id] = {"ms": round((time.perf_counter() - started) * 1000, 2),
                            "rpc": "GetNodeStats"}
        return stats

    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(raylets))) as pool:
        futures = {node_id: pool.submit(one, node_id) for node_id in raylets}
        for node_id, future in futures.items():
            try:
                out["nodes"][node_id] = future.result(timeout=timeout + 1)
            except Exception as exc:  # one silent raylet costs its own figures only
                out["failed"][node_id] = error_line(exc, 200)
    return out


class _Timings:
    """The raylets' answer times, in the form the control-plane section takes them."""

    def __init__(self, timings: dict):
        self.timings = timings

    def section(self) -> dict:
        return dict(self.timings)


class NoProbes:
    """Stands in for the probe fleet: no node has a probe, and each says why."""

    def __init__(self, raylets: dict):
        self.actors: dict = {}
        self.failed = {node_id: {"kind": "unavailable", "error": "Ray refused rldoctor as a "
                                 "driver (version mismatch, RLD102), so no probe was started"}
                       for node_id in raylets}
