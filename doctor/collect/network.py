"""Round trips and object transfers from the driver to every node's probe.

O(nodes) from the driver: a fixed number of sequential pings per node (fewer per
node on large clusters) and one bounded object pulled by each node in turn. The
baseline is the probe on the driver's own node, where no network is crossed.
"""

from __future__ import annotations

import statistics
import time

from rldoctor.collect import error_line

DEFAULT_ROUNDS = 20
MAX_PINGS_TOTAL = 2000  # pings per collection; rounds shrink as nodes grow
DEFAULT_OBJECT_BYTES = 8 * 2**20
CALL_TIMEOUT_S = 2.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _store_has_room(object_store: dict | None, node_id: str, object_bytes: int) -> bool:
    """Never push a node's object store toward spilling just to measure it."""
    store = ((object_store or {}).get("nodes") or {}).get(node_id, {}).get("store")
    if not store:
        return object_store is None  # no figures at all: the probe object is small
    capacity = store.get("object_store_bytes_avail") or 0
    used = store.get("object_store_bytes_used") or 0
    return capacity > 0 and used + 2 * object_bytes <= 0.7 * capacity


def _ping_rounds(node_id: str, actor, rounds: int, budget) -> tuple[list[float], str | None]:
    import ray

    values = []
    try:
        ray.get(actor.ping.remote(), timeout=budget.left(CALL_TIMEOUT_S))  # warm the path
        for _ in range(rounds):
            started = time.perf_counter()
            ray.get(actor.ping.remote(), timeout=budget.left(CALL_TIMEOUT_S))
            values.append((time.perf_counter() - started) * 1000)
    except Exception as exc:  # a node that stops answering keeps what it gave
        return values, error_line(exc, 200)
    return values, None


def _best_pull(fleet, node_id: str, source: str | None, object_bytes: int, budget) -> float:
    """Seconds for `node_id` to fetch a fresh object, best of two (one slow pull on a busy
    host is not a slow link). The object is put by the driver, or made on `source`."""
    import numpy as np
    import ray

    times = []
    for _ in range(2):
        if source is None:
            ref = ray.put(np.ones(object_bytes, dtype=np.uint8))
        else:
            ref = fleet.actors[source].make.remote(object_bytes)
            ray.wait([ref], timeout=budget.left(10), fetch_local=False)
        times.append(ray.get(fleet.actors[node_id].pull.remote([ref]), timeout=budget.left(10)))
        del ref
    return min(times)


def collect(conn, budget, fleet, object_store: dict | None = None,
            object_bytes: int = DEFAULT_OBJECT_BYTES) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    import ray

    baseline = ray.get_runtime_context().get_node_id()
    nodes = sorted(fleet.actors)
    rounds = max(3, min(DEFAULT_ROUNDS, MAX_PINGS_TOTAL // max(1, len(nodes))))
    result = {"baseline_node_id": baseline if baseline in fleet.actors else None,
              "rounds": rounds, "object_bytes": object_bytes, "nodes": {}, "skipped_transfer": {}}
    samples: dict[str, list[float]] = {}
    errors: dict[str, str] = {}
    # Each node's round trips are sequential; nodes are measured side by side.
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(nodes)))) as pool:
        futures = {node_id: pool.submit(_ping_rounds, node_id, fleet.actors[node_id], rounds, budget)
                   for node_id in nodes}
        for node_id, future in futures.items():
            samples[node_id], error = future.result()
            if error:
                errors[node_id] = error
    transfer: dict[str, float] = {}
    if object_bytes > 0:
        for node_id in nodes:
            if node_id in errors:
                continue
            if not _store_has_room(object_store, node_id, object_bytes):
                result["skipped_transfer"][node_id] = "object store too full to take the probe object"
                continue
            # The object comes from the driver; the driver's own node fetches one made elsewhere.
            source = None
            if node_id == baseline:
                source = next((n for n in nodes if n != node_id and n not in errors), None)
                if source is None:
                    continue
            try:
                transfer[node_id] = _best_pull(fleet, node_id, source, object_bytes, budget)
            except Exception as exc:
                errors[node_id] = error_line(exc, 200)
    for node_id in nodes:
        values = samples[node_id]
        entry: dict = {"samples": len(values)}
        if values:
            entry.update(p50_ms=round(statistics.median(values), 3),
                         p95_ms=round(_percentile(values, 0.95), 3),
                         min_ms=round(min(values), 3))
        if node_id in transfer and transfer[node_id] > 0:
            entry["transfer_s"] = round(transfer[node_id], 5)
            entry["bandwidth_mib_s"] = round(object_bytes / 2**20 / transfer[node_id], 1)
        if node_id in errors:
            entry["error"] = errors[node_id]
        result["nodes"][node_id] = entry
    return result
