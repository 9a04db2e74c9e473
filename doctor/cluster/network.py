"""Round trips and object transfers from the driver to every node's probe.

O(nodes) from the driver, in two passes:

1. A survey: a fixed number of ping rounds (fewer per node on large clusters), each
   round pinging every node at once so that the samples of one round saw the same
   moment of load; then each node pulls a fresh object twice (best of the two).
   The baseline is the probe on the driver's own node, where no network is crossed.
2. A second look, only for the nodes the survey found slow: the suspect and a healthy
   peer are measured again, interleaved (suspect, peer, suspect, peer, ...), so a burst
   of load that slowed one sample of the survey slows the peer just as much the second
   time. Bounded in time; every sample goes into the snapshot.

The checks (RLD201, RLD202) report a node only when both passes find it slow.
"""

from __future__ import annotations

import statistics
import time

from rldoctor.errors import first_line
from rldoctor.cluster.fleet import ask
from rldoctor.words import percentile
from rldoctor.cluster.sections import section

DEFAULT_ROUNDS = 20
MAX_PINGS_TOTAL = 2000  # pings per collection; rounds shrink as nodes grow
DEFAULT_OBJECT_BYTES = 8 * 2**20
CALL_TIMEOUT_S = 2.0
# A node is measured again when the survey puts it this far from the others; looser than
# the checks' defaults (5 ms over the baseline, a quarter of the median bandwidth), so a
# node near a threshold always has its second look.
LATENCY_SUSPECT_MS = 2.0
BANDWIDTH_SUSPECT_FRACTION = 0.5
# Pairs per node, interleaved with the peer's: RLD201 bounds the median of the paired
# differences by its standard error, which shrinks with the square root of the pairs; past
# the second look's time budget a node stops at RECHECK_MIN_PINGS pairs.
RECHECK_PINGS = 16
RECHECK_MIN_PINGS = 8
RECHECK_PULLS = 2
MAX_RECHECKED_NODES = 8
RECHECK_BUDGET_S = 4.0  # extra wall time the second look may take in all
# Object pulls per collection (two of DEFAULT_OBJECT_BYTES each, one node at a time): past it a
# random sample of nodes, another each collection, said in `transfer_sampling`. Round trips
# stay on every node (MAX_PINGS_TOTAL shrinks their rounds instead).
MAX_PULLED_NODES = 64


def pulled_nodes(nodes: list, limit: int = MAX_PULLED_NODES, rng=None) -> list:
    """The nodes whose object transfer is measured: all of them up to `limit`, else a sample."""
    if len(nodes) <= limit:
        return list(nodes)
    import random

    return sorted((rng or random.Random()).sample(list(nodes), limit))


def _store_has_room(object_store: dict | None, node_id: str, object_bytes: int) -> bool:
    """Never push a node's object store toward spilling just to measure it."""
    store = ((object_store or {}).get("nodes") or {}).get(node_id, {}).get("store")
    if not store:
        return object_store is None  # no figures at all: the probe object is small
    capacity = store.get("object_store_bytes_avail") or 0
    used = store.get("object_store_bytes_used") or 0
    return capacity > 0 and used + 2 * object_bytes <= 0.7 * capacity


def _ping_rounds(fleet, nodes: list[str], rounds: int, budget) -> tuple[dict, dict]:
    """`rounds` rounds that each ping every node at once (one fan-out, `fleet.ask`):
    ({node: [ms, ...]}, {node: error}). A node that fails a round is not pinged again."""
    samples: dict[str, list[float]] = {node_id: [] for node_id in nodes}
    errors: dict[str, str] = {}
    live = list(nodes)
    for warm in (True,) + (False,) * rounds:  # the first round only warms the paths
        if not live:
            break
        answers = ask(fleet, {n: (n, "ping") for n in live}, budget.left(CALL_TIMEOUT_S))
        for node_id, answer in answers.items():
            if answer.ok:
                if not warm:
                    samples[node_id].append(answer.took_s * 1000)
                continue
            # a node that stops answering keeps what it gave
            errors[node_id] = (f"no answer to a ping within {CALL_TIMEOUT_S:g}s"
                               if answer.kind == "timeout" else answer.error[:200])
            live.remove(node_id)
    return samples, errors


def _interleaved_pings(suspect, peer, count: int, budget,
                       time_left=lambda: True) -> tuple[list[float], list[float]]:
    """Ping suspect, then peer, alternately; both see the same moments of load. Past
    RECHECK_MIN_PINGS pairs, only while `time_left()`."""
    import ray

    mine, theirs = [], []
    for actor in (suspect, peer):  # warm both paths
        ray.get(actor.ping.remote(), timeout=budget.left(CALL_TIMEOUT_S))
    for i in range(count):
        if i >= RECHECK_MIN_PINGS and not time_left():
            break
        for actor, out in ((suspect, mine), (peer, theirs)):
            started = time.perf_counter()
            ray.get(actor.ping.remote(), timeout=budget.left(CALL_TIMEOUT_S))
            out.append((time.perf_counter() - started) * 1000)
    return mine, theirs


def _pull_seconds(fleet, node_id: str, source: str | None, object_bytes: int, budget) -> float:
    """Seconds for `node_id` to fetch a fresh object put by the driver, or made on `source`."""
    import ray

    if source is None:
        try:  # numpy travels zero-copy; a cluster without it (stdlib + ray) sends bytes
            import numpy as np

            payload = np.ones(object_bytes, dtype=np.uint8)
        except ImportError:
            payload = b"\x01" * object_bytes
        ref = ray.put(payload)
    else:
        ref = fleet.actors[source].make.remote(object_bytes)
        ray.wait([ref], timeout=budget.left(10), fetch_local=False)
    try:
        return ray.get(fleet.actors[node_id].pull.remote([ref]), timeout=budget.left(10))
    finally:
        del ref


def _mib_s(object_bytes: int, seconds: float) -> float:
    return round(object_bytes / 2**20 / seconds, 1) if seconds > 0 else 0.0


def _source_for(node_id: str, baseline: str | None, candidates: list[str]) -> str | None:
    """Objects come from the driver; the driver's own node fetches one made elsewhere."""
    if node_id != baseline:
        return None
    return next((n for n in candidates if n != node_id), None)


def _latency_suspects(result: dict, baseline: str | None) -> list[str]:
    nodes = result["nodes"]
    base = (nodes.get(baseline or "") or {}).get("p50_ms")
    if base is None:
        return []
    over = {n: e["p50_ms"] - base for n, e in nodes.items()
            if n != baseline and e.get("p50_ms") is not None and "error" not in e}
    return sorted((n for n, v in over.items() if v > LATENCY_SUSPECT_MS), key=lambda n: -over[n])


def _bandwidth_suspects(result: dict) -> list[str]:
    measured = {n: e["bandwidth_mib_s"] for n, e in result["nodes"].items()
                if e.get("bandwidth_mib_s")}
    if len(measured) < 2:
        return []
    suspects = []
    for node_id, value in measured.items():
        others = statistics.median(v for n, v in measured.items() if n != node_id)
        if value < BANDWIDTH_SUSPECT_FRACTION * others:
            suspects.append(node_id)
    return sorted(suspects, key=lambda n: measured[n])


def _recheck(fleet, result: dict, baseline: str | None, object_bytes: int, budget) -> None:
    """The second look at the nodes the survey found slow, within RECHECK_BUDGET_S."""
    started = time.monotonic()

    def time_left() -> bool:
        return time.monotonic() - started < RECHECK_BUDGET_S

    nodes = result["nodes"]
    for node_id in _latency_suspects(result, baseline)[:MAX_RECHECKED_NODES]:
        entry = nodes[node_id]
        if not time_left():
            entry["recheck"] = {"status": "skipped", "reason": "second-look time budget spent"}
            continue
        try:
            mine, base = _interleaved_pings(fleet.actors[node_id], fleet.actors[baseline],
                                            RECHECK_PINGS, budget, time_left)
        except Exception as exc:
            entry["recheck"] = {"status": "error", "error": first_line(exc, 200)}
            continue
        entry["recheck"] = {
            "status": "ok", "peer_node_id": baseline,
            "p50_ms": round(statistics.median(mine), 3),
            "peer_p50_ms": round(statistics.median(base), 3),
            "samples_ms": [round(v, 3) for v in mine],
            "peer_samples_ms": [round(v, 3) for v in base]}
    suspects = _bandwidth_suspects(result)
    measured = [n for n, e in nodes.items() if e.get("bandwidth_mib_s") and n not in suspects]
    for node_id in suspects[:MAX_RECHECKED_NODES]:
        entry = nodes[node_id]
        if not measured:
            break
        # The peer: the healthy node whose survey bandwidth is the median of the healthy ones.
        ranked = sorted(measured, key=lambda n: nodes[n]["bandwidth_mib_s"])
        peer = ranked[len(ranked) // 2]
        if not time_left():
            entry["transfer_recheck"] = {"status": "skipped",
                                         "reason": "second-look time budget spent"}
            continue
        mine, theirs = [], []
        try:
            for _ in range(RECHECK_PULLS):
                for who, out in ((node_id, mine), (peer, theirs)):
                    source = _source_for(who, baseline, [n for n in nodes if "error" not in nodes[n]])
                    out.append(_mib_s(object_bytes, _pull_seconds(fleet, who, source,
                                                                  object_bytes, budget)))
                if not time_left():
                    break
        except Exception as exc:
            entry["transfer_recheck"] = {"status": "error", "error": first_line(exc, 200),
                                         "mib_s": mine, "peer_mib_s": theirs}
            continue
        entry["transfer_recheck"] = {"status": "ok", "peer_node_id": peer,
                                     "best_mib_s": max(mine), "peer_best_mib_s": max(theirs),
                                     "mib_s": mine, "peer_mib_s": theirs}
    result["recheck_s"] = round(time.monotonic() - started, 3)


def collect(conn, budget, fleet, object_store: dict | None = None,
            object_bytes: int = DEFAULT_OBJECT_BYTES, blocked_pairs: set | None = None) -> dict:
    """`blocked_pairs`: pairs of node ids whose object managers cannot connect (RLD204);
    no object is pulled across them (it would only wait for its timeout)."""
    import ray

    baseline = ray.get_runtime_context().get_node_id()
    nodes = sorted(fleet.actors)
    rounds = max(3, min(DEFAULT_ROUNDS, MAX_PINGS_TOTAL // max(1, len(nodes))))
    result = {"baseline_node_id": baseline if baseline in fleet.actors else None,
              "rounds": rounds, "object_bytes": object_bytes, "nodes": {}, "skipped_transfer": {},
              "suspect_criteria": {"latency_over_baseline_ms": LATENCY_SUSPECT_MS,
                                   "bandwidth_fraction_of_median": BANDWIDTH_SUSPECT_FRACTION}}
    samples, errors = _ping_rounds(fleet, nodes, rounds, budget)
    pulls: dict[str, list[float]] = {}
    answering = [n for n in nodes if n not in errors]
    measured = set(pulled_nodes(answering))
    if len(measured) < len(answering):
        result["transfer_sampling"] = {"pulled": len(measured), "of": len(answering),
                                       "limit": MAX_PULLED_NODES}
    if object_bytes > 0:
        for node_id in nodes:
            if node_id in errors or node_id not in measured:
                continue
            if not _store_has_room(object_store, node_id, object_bytes):
                result["skipped_transfer"][node_id] = "object store too full to take the probe object"
                continue
            blocked = blocked_pairs or set()
            source = _source_for(node_id, baseline, [
                n for n in nodes if n not in errors and frozenset((n, baseline)) not in blocked])
            if node_id == baseline and source is None:
                continue
            if frozenset((node_id, source or baseline)) in blocked:
                result["skipped_transfer"][node_id] = (
                    "its object manager and the source's cannot connect (RLD204)")
                continue
            try:
                # Best of two: one slow pull on a busy host is not a slow link.
                pulls[node_id] = [_pull_seconds(fleet, node_id, source, object_bytes, budget)
                                  for _ in range(2)]
            except Exception as exc:
                errors[node_id] = first_line(exc, 200)
    for node_id in nodes:
        values = samples[node_id]
        entry: dict = {"samples": len(values)}
        if values:
            entry.update(p50_ms=round(statistics.median(values), 3),
                         p95_ms=round(percentile(values, 95), 3),
                         min_ms=round(min(values), 3),
                         samples_ms=[round(v, 3) for v in values])
        best = min(pulls.get(node_id) or [0])
        if best > 0:
            entry["transfer_s"] = round(best, 5)
            entry["bandwidth_mib_s"] = _mib_s(object_bytes, best)
            entry["transfer_samples_mib_s"] = [_mib_s(object_bytes, s) for s in pulls[node_id]]
        if node_id in errors:
            entry["error"] = errors[node_id]
        result["nodes"][node_id] = entry
    _recheck(fleet, result, result["baseline_node_id"], object_bytes, budget)
    return result


@section("network", needs=("reach", "object_store"), requires=("probes",))
def network_section(ctx) -> dict:
    """Round trips and object pulls, never across a pair whose object managers cannot connect."""
    from rldoctor.cluster.reach import blocked_object_pairs

    return collect(ctx.conn, ctx.budget, ctx.fleet, ctx.doc.get("object_store"),
                   blocked_pairs=blocked_object_pairs(ctx.doc.get("reach")))
