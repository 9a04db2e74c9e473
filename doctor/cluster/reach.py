"""Which Ray ports of every node the other nodes can open a TCP connection to (RLD204).

Ray needs many ports open between every pair of nodes, and a firewall that opens only some
of them lets the cluster form while objects never arrive or tasks hang. From each node's
probe, a TCP connect with a short deadline to the Ray ports of the other nodes, as Ray
reports them (`ray.nodes()`: node manager, object manager, runtime-env agent, metrics
export, dashboard agent HTTP and gRPC), to the GCS, and to one port of each node's worker
port range, which that node's probe listens on for a few seconds.

All the connects of one collection run at once, each with CONNECT_DEADLINE_S. On up to
ALL_PAIRS_UP_TO nodes every node tries every other; beyond, each node is tried from the head
and from PEERS_PER_NODE peers (the next nodes in node-id order), so the work grows with the
number of nodes, not with its square.
"""

from __future__ import annotations

import bisect
import time

from rldoctor.node import portprobe
from rldoctor.cluster.fleet import ask
from rldoctor.cluster.sections import section

CONNECT_DEADLINE_S = 1.5  # Linux resends a lost SYN after 1 s: one lost packet is not a closed port
ALL_PAIRS_UP_TO = 32
PEERS_PER_NODE = 8
LISTEN_EXTRA_S = 3.0  # a worker-port listener outlives the connect deadline by this much
LISTEN_WAIT_S = 2.0
ROUND_SLACK_S = 2.0
RELAY_WAIT_S = 3.0  # a task on a node whose probe never answered: its listener's answer
MAX_RELAYED = 16
MAX_FAILURES_KEPT = 500  # the counts stay complete; the list of failing pairs is bounded


def plan(node_ids: list[str], sources: list[str], head: str | None) -> dict[str, list[str]]:
    """{source: [targets]}: every pair on a small cluster; the head and a fixed number of
    peers per target beyond ALL_PAIRS_UP_TO nodes."""
    if len(node_ids) <= ALL_PAIRS_UP_TO:
        return {s: [t for t in node_ids if t != s] for s in sources}
    out: dict[str, list[str]] = {s: [] for s in sources}
    ring = sorted(s for s in sources if s != head)
    for target in node_ids:
        if head in out and head != target:
            out[head].append(target)
        if not ring:
            continue
        start = bisect.bisect_right(ring, target)
        chosen = 0
        for step in range(len(ring)):
            peer = ring[(start + step) % len(ring)]
            if peer == target:
                continue
            out[peer].append(target)
            chosen += 1
            if chosen == PEERS_PER_NODE:
                break
    return out


def _endpoints(nodes: list[dict], gcs_address: str | None) -> tuple[dict, str | None]:
    """({node id: {component: [host, port]}}, head node id) of the alive nodes of the nodes
    section."""
    endpoints, head = {}, None
    for n in nodes:
        if not n.get("alive"):
            continue
        node_id, ip = n["node_id"], n.get("ip")
        endpoints[node_id] = {name: [ip, int(port)] for name, port in (n.get("ports") or {}).items()
                              if port}
        if n.get("is_head"):
            head = node_id
    if head and gcs_address and ":" in gcs_address:
        host, _, port = gcs_address.rpartition(":")
        if port.isdigit():
            endpoints[head] = {"gcs": [host, int(port)], **endpoints[head]}
    return endpoints, head


def _listen_on_worker_ports(fleet, endpoints: dict, budget) -> tuple[dict, dict]:
    """Each probe listens on a port of its node's worker range: ({node: [low, high]}, {node: why
    not}); the ports go into `endpoints` as component "worker"."""
    calls, ranges, missing = {}, {}, {}
    for node_id in fleet.actors:
        listening = ((fleet.facts.get(node_id) or {}).get("host") or {}).get("listening") or {}
        low, high = (listening.get("worker_ports") or [None, None])[:2]
        ranges[node_id] = [low, high] if low and high else None
        # Up until the connects are done, a wait for the relayed listeners included.
        calls[node_id] = (node_id, "call_here", portprobe.listen_briefly, low, high,
                          RELAY_WAIT_S + CONNECT_DEADLINE_S + LISTEN_EXTRA_S)
    for node_id, answer in ask(fleet, calls, budget.left(LISTEN_WAIT_S)).items():
        if answer.kind == "timeout":
            missing[node_id] = f"its probe did not listen within {LISTEN_WAIT_S:g}s"
        elif not answer.ok:
            missing[node_id] = answer.error[:160]
        elif answer.value.get("port") and node_id in endpoints:
            ip = (endpoints[node_id].get("node_manager") or [None])[0]
            if answer.value.get("in_range") or not ranges.get(node_id):
                endpoints[node_id]["worker"] = [ip, int(answer.value["port"])]
            else:
                missing[node_id] = "no free port in the node's worker port range"
        else:
            missing[node_id] = answer.value.get("error") or "no port"
    return ranges, missing


def _listen_through_a_peer(fleet, endpoints: dict, ranges: dict, missing: dict, head,
                           budget) -> dict:
    """For each node whose probe never answered (not one whose raylet is silent: its node
    manager is tried anyway), a healthy peer's probe starts a task there that listens on a
    worker port: {node: the peer that placed it}."""
    waiting = [n for n, failure in fleet.failed.items()
               if failure.get("kind") == "timeout" and n in endpoints
               and "worker" not in endpoints[n]]
    peers = [n for n in sorted(fleet.actors) if n != head] or sorted(fleet.actors)
    calls = {}
    for node_id in waiting[:MAX_RELAYED]:
        peer = next((p for p in peers if p != node_id), None)
        if peer is None:
            break
        calls[node_id] = (peer, "call_here", portprobe.listen_on, node_id,
                          CONNECT_DEADLINE_S + LISTEN_EXTRA_S, RELAY_WAIT_S)
    via = {}
    for node_id, answer in ask(fleet, calls, budget.left(RELAY_WAIT_S + 1)).items():
        if answer.kind == "timeout":
            missing[node_id] = f"no task placed there listened within {RELAY_WAIT_S:g}s"
            continue
        value = answer.value if answer.ok else {"error": answer.error[:160]}
        if value.get("port") and value.get("in_range"):
            ip = (endpoints[node_id].get("node_manager") or [None])[0]
            endpoints[node_id]["worker"] = [ip, int(value["port"])]
            ranges[node_id] = value.get("range")
            via[node_id] = answer.node_id
            missing.pop(node_id, None)
        else:
            missing[node_id] = value.get("error") or "no free port in its worker port range"
    return via


def collect(conn, budget, fleet, nodes: list[dict] | None, gcs_address: str | None = None) -> dict:
    import ray

    from rldoctor.cluster import nodes as node_section

    started = time.monotonic()
    portprobe.register()
    endpoints, head = _endpoints(node_section.read() if nodes is None else nodes, gcs_address)
    ranges, no_worker_port = _listen_on_worker_ports(fleet, endpoints, budget)
    relayed = _listen_through_a_peer(fleet, endpoints, ranges, no_worker_port, head, budget)
    node_ids = sorted(endpoints)
    sources = sorted(n for n in fleet.actors if n in endpoints)
    pairs_of, calls = {}, {}
    for source, targets in plan(node_ids, sources, head).items():
        pairs = [(t, c) for t in targets for c in endpoints[t]]
        if pairs:
            pairs_of[source] = pairs
            calls[source] = (source, "call_here", portprobe.connect_all,
                             [endpoints[t][c] for t, c in pairs], CONNECT_DEADLINE_S)
    rounds = 1 + max(map(len, pairs_of.values()), default=0) // portprobe.MAX_OPEN_SOCKETS
    wait_s = budget.left(CONNECT_DEADLINE_S * rounds + ROUND_SLACK_S)
    tried: dict = {t: {} for t in node_ids}
    failed: dict = {t: {} for t in node_ids}
    opened: dict = {t: 0 for t in node_ids}
    failures, not_tried, connects = [], {}, 0
    for source, answer in ask(fleet, calls, wait_s).items():
        if answer.kind == "timeout":
            not_tried[source] = f"its probe did not answer within {wait_s:.1f}s"
            continue
        if not answer.ok:
            not_tried[source] = answer.error[:160]
            continue
        for (target, component), (status, ms) in zip(pairs_of[source], answer.value):
            connects += 1
            tried[target][component] = tried[target].get(component, 0) + 1
            if status == "open":
                opened[target] += 1
                continue
            failed[target][component] = failed[target].get(component, 0) + 1
            if len(failures) < MAX_FAILURES_KEPT:
                host, port = endpoints[target][component]
                failures.append({"source": source, "target": target, "component": component,
                                 "host": host, "port": port, "status": status, "ms": ms})
    every_pair = len(node_ids) <= ALL_PAIRS_UP_TO
    return {
        "deadline_s": CONNECT_DEADLINE_S,
        "sampling": {"mode": "all pairs" if every_pair else "head and peers",
                     "nodes": len(node_ids), "all_pairs_up_to": ALL_PAIRS_UP_TO,
                     "peers_per_node": None if every_pair else PEERS_PER_NODE},
        "head_node_id": head,
        "driver_node_id": ray.get_runtime_context().get_node_id(),
        "sources": sources,
        "endpoints": endpoints,
        "worker_port_ranges": ranges,
        "worker_port_placed_by": relayed,
        "no_worker_port": no_worker_port,
        "tried": tried, "failed": {t: c for t, c in failed.items() if c}, "open": opened,
        "failures": failures, "failures_left_out": max(0, sum(
            n for c in failed.values() for n in c.values()) - len(failures)),
        "not_tried": not_tried, "connects": connects,
        "duration_s": round(time.monotonic() - started, 3),
    }


def blocked_object_pairs(section: dict | None) -> set[frozenset]:
    """Pairs of nodes between which an object-manager connect failed (either way): an object
    pulled across such a pair would wait until its timeout, so it is not measured."""
    return {frozenset((f["source"], f["target"])) for f in (section or {}).get("failures") or []
            if f["component"] == "object_manager"}


@section("reach", needs=("nodes", "cluster"), requires=("probes",))
def reach_section(ctx) -> dict:
    return collect(ctx.conn, ctx.budget, ctx.fleet, ctx.doc.get("nodes"),
                   (ctx.doc.get("cluster") or {}).get("gcs_address"))
