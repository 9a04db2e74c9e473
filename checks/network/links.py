"""Latency, object transfer, availability-zone spread and closed ports: RLD201-RLD204.

A common troubleshooting row ("high network latency: nodes spread over availability
zones: move nodes into one zone"), measured per node and per zone.
"""

from __future__ import annotations

import statistics

from rldoctor.checks._reach import (
    COMPONENTS,
    CORE,
    failures_by_target,
    reach_state,
    own_addresses,
    status_words,
)
from rldoctor.checks._rllib import rllib_role
from rldoctor.registry import check, fail, finding, info, note, warn
from rldoctor.snapshot import dig
from rldoctor.words import ZONE_LABEL, node_of, percentile

LATENCY_DEFAULTS = {"warn_ms": 5.0, "fail_ms": 20.0, "noise_factor": 2.0, "zone_label": ZONE_LABEL}
_RANK = {None: 0, "warn": 1, "fail": 2}


def zone_of(node: dict, label: str) -> str | None:
    return dig(node, "labels", label) or None


def _baseline(network: dict) -> tuple[str | None, float | None]:
    base_id = network.get("baseline_node_id")
    base = dig(network, "nodes", base_id or "", default={})
    return base_id, base.get("p50_ms")


def _spread(values: list[float]) -> float:
    """p90 - p10 of the samples: how much one measurement of a node wanders."""
    if len(values) < 5:
        return 0.0
    return percentile(values, 90) - percentile(values, 10)


def latency_noise_ms(network: dict) -> float:
    """The typical spread of one node's round trips in this snapshot (median over nodes).

    On a quiet cluster it is a fraction of a millisecond; while trainings keep the CPUs
    busy it grows to several. Snapshots without raw samples have no noise figure (0).
    """
    spreads = [_spread(e["samples_ms"]) for e in (network.get("nodes") or {}).values()
               if len(e.get("samples_ms") or []) >= 5]
    return statistics.median(spreads) if spreads else 0.0


def latency_bars(network: dict, params: dict) -> dict:
    """The warn and fail bars in ms over the baseline: the settings plus the noise allowance."""
    noise = latency_noise_ms(network)
    allowance = params["noise_factor"] * noise
    return {"warn_ms": round(params["warn_ms"] + allowance, 3),
            "fail_ms": round(params["fail_ms"] + allowance, 3), "noise_ms": round(noise, 3)}


def _level(over: float, bars: dict) -> str | None:
    if over > bars["fail_ms"]:
        return "fail"
    if over > bars["warn_ms"]:
        return "warn"
    return None


# The standard error of a median is about 1.2533 sigma / sqrt(n), and sigma about IQR / 1.349.
_MEDIAN_SE_PER_IQR = 1.2533 / 1.349
MIN_PAIRS = 8


def paired_over_ms(recheck: dict) -> dict | None:
    """What the second look's interleaved pairs (node, peer, node, peer, ...) say of the node's
    own delay: each pair saw the same moment of the host's load, so their differences cancel
    the load that both calls met, which the survey's noise allowance has to cover instead.
    `low_ms` is the median difference less two standard errors of that median (from the
    differences' own spread and count): a bound that a healthy node beside its peer (median
    difference about 0) stays under however busy the host, and a node with a delay of its own
    clears once there are enough pairs. None without MIN_PAIRS pairs."""
    mine, peer = recheck.get("samples_ms") or [], recheck.get("peer_samples_ms") or []
    diffs = [a - b for a, b in zip(mine, peer)]
    if recheck.get("status") != "ok" or len(diffs) < MIN_PAIRS:
        return None
    middle = statistics.median(diffs)
    spread = percentile(diffs, 75) - percentile(diffs, 25)
    error = _MEDIAN_SE_PER_IQR * spread / len(diffs) ** 0.5
    return {"pairs": len(diffs), "median_ms": round(middle, 3), "se_ms": round(error, 3),
            "low_ms": round(middle - 2 * error, 3)}


def latency_verdicts(snap, params: dict) -> dict[str, dict]:
    """Every node the survey put above the warn bar, with what the second look found.

    `level` is the severity the node keeps: the lower of the survey's and the second
    look's (a node must stay slow to be reported), None when it recovered; a node that
    could not be measured again keeps the survey's level and says why. The second look's
    pairs can also report a node on their own, against the settings' bars without the
    noise allowance (paired_over_ms): on a busy host the survey's allowance can grow past a
    node's own delay, which its paired differences still show.
    """
    network = snap.get("network") or {}
    base_id, base_ms = _baseline(network)
    if base_ms is None:
        return {}
    bars = latency_bars(network, params)
    verdicts = {}
    for node_id, entry in (network.get("nodes") or {}).items():
        if node_id == base_id or entry.get("p50_ms") is None:
            continue
        over = entry["p50_ms"] - base_ms
        first = _level(over, bars)
        recheck = entry.get("recheck") or {}
        paired = paired_over_ms(recheck)
        by_pairs = _level(paired["low_ms"], params) if paired else None
        if first is None and by_pairs is None:
            continue
        verdict = {"over_ms": round(over, 3), "survey_level": first, "level": first,
                   "bars": bars, "remeasured": False}
        if recheck.get("status") == "ok":
            again = recheck["p50_ms"] - recheck["peer_p50_ms"]
            second = _level(again, bars)
            both = min(first, second, key=lambda lv: _RANK[lv])
            verdict.update(remeasured=True, recheck_over_ms=round(again, 3),
                           level=max(both, by_pairs, key=lambda lv: _RANK[lv]))
            if paired:
                verdict.update(paired=paired, paired_level=by_pairs)
        elif recheck:
            verdict["recheck_problem"] = recheck.get("error") or recheck.get("reason")
        verdicts[node_id] = verdict
    return verdicts


def _paired_words(verdict: dict) -> str:
    paired = verdict.get("paired")
    if not (paired and verdict.get("paired_level")):
        return ""
    return (f" (slower than the baseline by {paired['median_ms']:.1f} ms "
            f"+/- {paired['se_ms']:.1f} over {paired['pairs']} interleaved pairs)")


def slow_nodes(snap, params: dict) -> dict[str, tuple[float, str]]:
    """{node id: (ms over the baseline, 'warn'|'fail')} for nodes that stay above the bars."""
    return {node_id: (v["over_ms"], v["level"])
            for node_id, v in latency_verdicts(snap, params).items() if v["level"]}


LATENCY_FIXES = {"a node's round trip is far above the baseline": (
    "Every call to an actor on this node (env runner sample() requests, weight syncs) pays "
    "this round trip. Find where it comes from: another zone or region (see RLD203; keep the "
    "learner and its env runners in one zone), a saturated or throttled link (`ping` and "
    "`iperf3` between the hosts, cloud network metrics), or an overloaded host (load, CPU "
    "steal, a raylet starved of CPU). If the node cannot be fixed, drain it (`ray drain-node`) "
    "or keep RLlib actors off it with a label selector."
)}


def _describe(node_id: str, node: dict, label: str) -> str:
    return node_of(node, node_id, f"zone {zone_of(node, label) or 'unlabelled'}")


@check("RLD201", "high-network-latency", area="network", requires=("network", "nodes"),
       params=dict(LATENCY_DEFAULTS), fixes=LATENCY_FIXES)
def high_network_latency(snap, params):
    """A node whose round trip from the driver is far above the local baseline.

    Symptom:
        Iterations slow down though CPUs are idle; `sample()` and weight-sync timers in
        RLlib's results grow; calls to actors on some nodes take tens of milliseconds.

    Cause:
        The path to the node is long or congested (another availability zone or region,
        a saturated NIC, a throttled VM), or the node is too overloaded to answer fast.
        The baseline is a probe on the driver's own node, where no network is crossed.
        Thresholds: warn at 5 ms, fail at 20 ms over the baseline (settable), each raised
        by twice the spread of the round trips (p90 - p10, median over the nodes), so a
        busy cluster's jitter is not taken for a slow link. A node is reported only when
        a second measurement, interleaved with the baseline's, finds it slow again; a node
        that recovers is named in the check's notes with both measurements. The second
        measurement's pairs also report a node on their own when their median difference,
        less two standard errors, is over the plain 5/20 ms: each pair met the same load,
        so a busy host's jitter cancels there and a node's own delay does not.

    Advice:
        A common troubleshooting table says "high network latency: nodes spread over
        availability zones: move nodes into one zone". That is right when the slow nodes
        are the ones in other zones; RLD203 says whether they are.
    """
    network = snap["network"]
    base_id, base_ms = _baseline(network)
    if base_ms is None:
        return
    label = params["zone_label"]
    for node_id, verdict in sorted(latency_verdicts(snap, params).items()):
        entry = network["nodes"][node_id]
        node = snap.node(node_id) or {}
        recheck = entry.get("recheck") or {}
        evidence = {"node_id": node_id, "ip": node.get("ip"), "zone": zone_of(node, label),
                    "p50_ms": entry["p50_ms"], "p95_ms": entry.get("p95_ms"),
                    "samples": entry.get("samples"), "samples_ms": entry.get("samples_ms"),
                    "baseline_node_id": base_id, "baseline_p50_ms": base_ms,
                    "baseline_samples_ms": network["nodes"][base_id].get("samples_ms"),
                    "over_baseline_ms": verdict["over_ms"],
                    "thresholds_ms": {"warn": params["warn_ms"], "fail": params["fail_ms"]},
                    "bars_ms": verdict["bars"], "remeasured": verdict["remeasured"]}
        if recheck:
            evidence["recheck"] = recheck
        if verdict.get("paired"):
            evidence["paired"] = verdict["paired"]
        if verdict.get("recheck_problem"):
            evidence["recheck_problem"] = verdict["recheck_problem"]
        if verdict["level"] is None:
            yield note(f"node:{node_id}",
                       f"{_describe(node_id, node, label)} answered {verdict['over_ms']:.1f} ms over "
                       f"the baseline once, then {verdict['recheck_over_ms']:.1f} ms over it when "
                       f"measured again beside the baseline (bar {verdict['bars']['warn_ms']:.1f} "
                       f"ms): not reported", evidence)
            continue
        again = (f"; measured again beside the baseline: {verdict['recheck_over_ms']:.1f} ms over"
                 if verdict["remeasured"] else "")
        again += _paired_words(verdict)
        yield finding(
            verdict["level"], f"node:{node_id}",
            f"round trip to {_describe(node_id, node, label)} is {entry['p50_ms']:.1f} ms (p95 "
            f"{entry.get('p95_ms') or 0:.1f} ms), {verdict['over_ms']:.1f} ms above the "
            f"{base_ms:.1f} ms baseline on the driver's node{again}", evidence,
            LATENCY_FIXES["a node's round trip is far above the baseline"].format())


TRANSFER_FIXES = {"objects reach a node far slower than the others": (
    "Objects (sample batches, weights) reach this node far slower than the others. Check the "
    "host's link (`iperf3` to the head, NIC speed, cloud instance network tier), whether it is "
    "in another zone (RLD203), and whether its object store spills (RLD302) or lives on disk "
    "(RLD304). Larger batches per request (`rollout_fragment_length`) amortise slow links; a "
    "node that cannot keep up is better drained."
)}


def bandwidth_noise(network: dict) -> float:
    """The typical relative spread between one node's pulls ((max - min) / max, median over nodes)."""
    spreads = []
    for entry in (network.get("nodes") or {}).values():
        values = [v for v in entry.get("transfer_samples_mib_s") or [] if v]
        if len(values) >= 2:
            spreads.append((max(values) - min(values)) / max(values))
    return statistics.median(spreads) if spreads else 0.0


@check("RLD202", "slow-object-transfer", area="network", requires=("network", "nodes"),
       params={"fraction_of_median": 0.25, "noise_factor": 1.0, "zone_label": ZONE_LABEL},
       fixes=TRANSFER_FIXES)
def slow_object_transfer(snap, params):
    """Object transfer bandwidth to a node far below the others.

    Symptom:
        `ray.get` of sample batches or weight broadcasts is slow on some nodes; env
        runners there lag; RLlib's `synch_weights` timer grows.

    Cause:
        A slow or congested link to that node, a node in another zone, or an object
        store that is slow to write (on disk, spilling).
        A node under a quarter of the other nodes' median bandwidth is flagged
        (settable); the bar is lowered when one node's pulls already differ among
        themselves (fraction / (1 + relative spread)), and a node is reported only
        when pulls taken again, interleaved with a healthy peer's, stay under it (such a
        re-measurement under the bar reports the node even when its first pulls did not).
    """
    network = snap["network"]
    measured = {nid: e["bandwidth_mib_s"] for nid, e in (network.get("nodes") or {}).items()
                if e.get("bandwidth_mib_s")}
    sampling = network.get("transfer_sampling")
    if sampling:
        yield note("snapshot.network", _TRANSFER_SAMPLED.format(**sampling), sampling)
    if len(measured) < 2:
        return  # nothing to compare with
    noise = bandwidth_noise(network)
    bar = params["fraction_of_median"] / (1 + params["noise_factor"] * noise)
    overall = statistics.median(measured.values())
    for node_id, bandwidth in sorted(measured.items()):
        # The rest of the cluster is the yardstick: with few nodes, a median that
        # includes the slow node itself would hide it; with many it makes no odds.
        median = (statistics.median(v for n, v in measured.items() if n != node_id)
                  if len(measured) <= 64 else overall)
        yield from _judge_transfer(snap, node_id, bandwidth, median, bar, noise, measured,
                                   params["zone_label"])


# RLD202's texts, as data.
_TRANSFER_SAMPLED = ("object transfer measured on {pulled} of {of} nodes, a random sample each "
                     "check (at most {limit} nodes pull objects per check); a slow node outside it "
                     "is found by a later check")
_TRANSFER_CLEARED = ("{node} pulled objects at {bandwidth:.0f} MiB/s once ({share:.0%} of the "
                     "median), then at {best:.0f} MiB/s beside a peer at {peer:.0f} MiB/s when "
                     "measured again: not reported")
_TRANSFER_AGAIN = "; measured again beside a peer: {best:.0f} vs {peer:.0f} MiB/s"
_TRANSFER_SLOW = ("objects reach {node} at {bandwidth:.0f} MiB/s, {share:.0%} of the other nodes' "
                  "median {median:.0f} MiB/s{again}")


def _judge_transfer(snap, node_id, bandwidth, median, bar, noise, measured, label):
    """RLD202 on one node: a warn when it is under the bar (and a re-measurement, if any, agrees),
    a note when only its first pulls were slow."""
    network = snap["network"]
    entry = network["nodes"][node_id]
    recheck = entry.get("transfer_recheck") or {}
    remeasured = recheck.get("status") == "ok"
    # Pulls taken again, interleaved with a healthy peer's, cancel what the machine's own
    # noise did to the first pass: under the bar there, the node is slow even when its
    # first pulls (two, on a busy host) wandered enough to clear the lowered bar.
    confirmed = remeasured and recheck["best_mib_s"] < bar * max(recheck["peer_best_mib_s"], 1e-9)
    if bandwidth >= bar * median and not confirmed:
        return
    evidence = {"node_id": node_id, "bandwidth_mib_s": bandwidth, "median_mib_s": median,
                "samples_mib_s": entry.get("transfer_samples_mib_s"),
                "object_bytes": network.get("object_bytes"),
                "transfer_s": entry.get("transfer_s"), "all_nodes_mib_s": measured,
                "bar_fraction": round(bar, 3), "noise": round(noise, 3), "remeasured": remeasured}
    if recheck:
        evidence["recheck"] = recheck
    said = {"node": _describe(node_id, snap.node(node_id) or {}, label), "bandwidth": bandwidth,
            "share": bandwidth / median, "median": median, "again": ""}
    if remeasured:
        ratio = recheck["best_mib_s"] / max(recheck["peer_best_mib_s"], 1e-9)
        evidence["recheck_fraction"] = round(ratio, 3)
        again = {"best": recheck["best_mib_s"], "peer": recheck["peer_best_mib_s"]}
        if ratio >= bar:
            yield note(f"node:{node_id}", _TRANSFER_CLEARED.format(**said, **again), evidence)
            return
        said["again"] = _TRANSFER_AGAIN.format(**again)
    yield warn(f"node:{node_id}", _TRANSFER_SLOW.format(**said), evidence,
               TRANSFER_FIXES["objects reach a node far slower than the others"].format())


ZONE_FIXES = {"the cluster spans zones, or cannot be told to": (
    "Keep a training in one zone: cross-zone round trips add milliseconds to every env-runner "
    "call and weight sync, and cross-zone traffic is billed. On Ray's cluster launcher, pin "
    "each node type to one zone (`provider.availability_zone` or the subnet in node_config; "
    "Ray's AWS launcher no longer spreads nodes over zones by default). On KubeRay, give the "
    "worker groups a nodeSelector or affinity on `topology.kubernetes.io/zone`. By hand, start "
    "nodes only in the head's zone. Ray labels a node `ray.io/availability-zone` from "
    "RAY_NODE_ZONE in the environment of its `ray start` (or `--labels "
    "ray.io/availability-zone=<zone>`); label every node so rldoctor can see the spread. If the "
    "cluster must span zones, keep the learner and its env runners together with a label "
    "selector on `ray.io/availability-zone` (or PACK/STRICT_PACK placement). The common "
    "advice \"move nodes into one zone\" is right exactly when the slow nodes are the ones "
    "outside the head's zone."
)}


def _zone_fix() -> str:
    return ZONE_FIXES["the cluster spans zones, or cannot be told to"].format()


@check("RLD203", "cross-zone-spread", area="network", requires=("nodes",),
       params=dict(LATENCY_DEFAULTS), fixes=ZONE_FIXES)
def cross_zone_spread(snap, params):
    """The cluster (or the training's actors) spans availability zones.

    Symptom:
        Distributed training is slower than expected or slower than on fewer nodes;
        some nodes answer in milliseconds, others in tens of milliseconds; a cloud bill
        with cross-zone data transfer.

    Cause:
        Nodes in different availability zones: every call between them crosses zones.
        Zones come from the node label `ray.io/availability-zone` (set by KubeRay or
        RAY_NODE_ZONE) or a label named with --zone-label; nodes without it are listed
        as unlabelled, never guessed. It is a fail when the slow nodes (RLD201) are exactly
        the nodes outside the head's zone.

    Advice:
        A common troubleshooting table says "high network latency: nodes across
        availability zones: move nodes into one zone"; that advice is right when this
        check fails.
    """
    label = params["zone_label"]
    alive = snap.alive_nodes
    zones, unlabelled = _zones(alive, label)
    if not zones:
        return
    if unlabelled and len(zones) == 1:
        yield info("cluster", _ZONE_UNLABELLED.format(n=len(unlabelled), label=label),
                   {"unlabelled_nodes": unlabelled, "zones": zones}, _zone_fix())
    if len(zones) < 2:
        return
    zone_latency = _zone_latency(snap, zones)
    head = next((n for n in alive if n.get("is_head")), None)
    head_zone = zone_of(head, label) if head else None
    outside = {n["node_id"] for n in alive if head_zone and zone_of(n, label) != head_zone}
    slow = set(slow_nodes(snap, params))
    training = _training_zones(snap, label)
    evidence = {"zone_label": label, "zones": zones, "unlabelled_nodes": unlabelled,
                "zone_median_p50_ms": zone_latency, "head_zone": head_zone,
                "slow_nodes": sorted(slow), "training_actor_zones": training}
    said = {"n": len(zones), "head_zone": head_zone, "shown": "; ".join(
        f"{zone}: {len(ids)} node(s)" + (f", median {zone_latency[zone]:.1f} ms"
                                         if zone_latency[zone] is not None else "")
        for zone, ids in sorted(zones.items()))
        + (f"; unlabelled: {len(unlabelled)} node(s)" if unlabelled else ""),
        "where": _ZONE_TRAINING.format(n=len(training), zones=", ".join(sorted(training)))
        if len(training) > 1 else ""}
    if slow and outside and slow == outside:
        yield fail("cluster", _ZONE_SLOW_OUTSIDE.format(**said), evidence, _zone_fix())
    else:
        yield warn("cluster", _ZONE_SPANS.format(**said), evidence, _zone_fix())


# RLD203's messages, as data.
_ZONE_UNLABELLED = "{n} node(s) have no '{label}' label; zone spread cannot be judged for them"
_ZONE_SPANS = "the cluster spans {n} zones ({shown}){where}"
_ZONE_SLOW_OUTSIDE = ("the cluster spans {n} zones ({shown}) and the slow nodes are exactly those "
                      "outside the head's zone {head_zone}{where}")
_ZONE_TRAINING = "; RLlib actors run in {n} zones ({zones})"


def _zones(alive: list[dict], label: str) -> tuple[dict[str, list[str]], list[str]]:
    """({zone: [node id]}, [node ids without the label]) of the alive nodes."""
    zones: dict[str, list[str]] = {}
    unlabelled = []
    for node in alive:
        zone = zone_of(node, label)
        if zone:
            zones.setdefault(zone, []).append(node["node_id"])
        else:
            unlabelled.append(node["node_id"])
    return zones, unlabelled


def _zone_latency(snap, zones: dict[str, list[str]]) -> dict[str, float | None]:
    """{zone: the median p50 round trip of its nodes}, None where none was measured."""
    out = {}
    for zone, ids in zones.items():
        values = [p50 for p50 in (snap.network(n).get("p50_ms") for n in ids) if p50 is not None]
        out[zone] = round(statistics.median(values), 3) if values else None
    return out


def _training_zones(snap, label: str) -> dict[str, int]:
    """Zones that host live RLlib actors (env runners, learners), with their counts."""
    counts: dict[str, int] = {}
    for actor in snap.field("actors", "items") or []:
        if actor.get("state") != "ALIVE" or not rllib_role(actor.get("class_name")):
            continue
        node = snap.node(actor.get("node_id") or "")
        zone = zone_of(node, label) if node else None
        counts[zone or "unlabelled"] = counts.get(zone or "unlabelled", 0) + 1
    return counts


MAX_NODES_LISTED = 8


def _node_label(snap, node_id: str) -> str:
    return snap.label(node_id, head=True)


def _ports_needed(snap, reach: dict) -> list[str]:
    """One line per node: every Ray port of it that the other nodes must reach, with its flag."""
    lines = []
    endpoints = reach.get("endpoints") or {}
    ranges = reach.get("worker_port_ranges") or {}
    ordered = sorted(endpoints, key=lambda n: (not dig(snap.node(n), "is_head"), n))
    for node_id in ordered[:MAX_NODES_LISTED]:
        parts = []
        for name, (owner, _, flag) in COMPONENTS.items():
            if name == "worker":
                low_high = ranges.get(node_id)
                if low_high:
                    parts.append(f"worker ports {low_high[0]}-{low_high[1]} ({flag})")
                continue
            where = endpoints[node_id].get(name)
            if where:
                parts.append(f"{owner.removeprefix('the ')} {where[1]} ({flag})")
        lines.append(f"{_node_label(snap, node_id)}: " + ", ".join(parts))
    if len(ordered) > MAX_NODES_LISTED:
        lines.append(f"... and {len(ordered) - MAX_NODES_LISTED} more node(s) (the evidence lists "
                     "every node's ports)")
    return lines


def _closed_lines(snap, per_port: dict) -> list[str]:
    out = []
    for (name, port), fails in sorted(per_port.items()):
        sources = ", ".join(sorted({dig(snap.node(f["source"]), "ip", default="?") for f in fails}))
        statuses = sorted({f["status"] for f in fails})
        out.append(f"{COMPONENTS.get(name, (name,))[0].removeprefix('the ')} port {port} on "
                   f"{fails[0]['host']} from {sources} ({', '.join(statuses)})")
    return out


_BAD_ADDRESS_CASE = "the node registered with an address the others cannot reach (the text below follows)"
PORT_FIXES = {_BAD_ADDRESS_CASE: (
    "The node registered with {ip}, and no other node could open any of its ports there. Restart "
    "it with `ray start --node-ip-address <an address the other nodes reach>` (on a host with "
    "several interfaces, the one on the cluster's network; `ip -br addr` lists them); check that "
    "the nodes route to that network."
), "ports of a node are closed to other nodes": (
    "Closed now: {closed}. Ray needs these TCP ports open between every pair of nodes of this "
    "cluster, both ways (opening only 6379 and 8265 lets the cluster form while objects never "
    "arrive and tasks hang): {needed}. Every port but the GCS's is picked at random when "
    "`ray start` is not given it: pin them with the flags above, the same on every node, and "
    "open them (on a cloud, a security-group rule that allows all TCP between the cluster's own "
    "instances; on premises, the host firewall: `iptables -S`, `nft list ruleset`, "
    "`firewall-cmd --list-all` on the node that does not answer). 'timed out' means a rule drops "
    "the packets; 'refused' means nothing listens there or a rule rejects them. Then run "
    "`rldoctor check` again."
)}


@check("RLD204", "port-unreachable", area="network", requires=("reach", "nodes"), fixes=PORT_FIXES)
def port_unreachable(snap, params):
    """A Ray port of one node that another node (or the head) cannot connect to, per pair and port.

    Symptom:
        The cluster forms and `ray status` looks fine, then objects never arrive, tasks and
        actor calls hang, `ray.get` times out, or a node is declared dead although it runs;
        often after a firewall or cloud security group was set up that opens only 6379 and
        8265.

    Cause:
        Ray needs many ports open between every pair of nodes: the GCS, each raylet's node
        manager and object manager, the dashboard and runtime-env agents, the metrics port and
        the worker port range. A firewall rule that drops (connect timed out) or rejects
        (refused) some of them, between some nodes or all, breaks the paths that use them. A
        node registered with an address the others cannot reach (a wrong `--node-ip-address`,
        the wrong interface of a host with several) has every port closed the same way.
        Measured from each node's probe: a TCP connect with a 1.5 s deadline to every Ray port
        of the other nodes, as Ray reports them, and to a port of each node's worker range that
        its probe (or, when its probe never started, a task a peer places there) listens on
        for a moment; on more than 32 nodes each node is tried from the head and from 8 peers.
        A closed port of the GCS, node manager, object manager or worker
        range from the head or from every node is a fail, from some peers only a warn; other
        ports are a warn.
    """
    reach = snap["reach"]
    needed = "; ".join(_ports_needed(snap, reach))
    sampled = {"nodes": dig(reach, "sampling", "nodes"),
               "peers_per_node": dig(reach, "sampling", "peers_per_node")}
    if sampled["peers_per_node"]:  # said whether or not a port is found closed
        yield note("snapshot.reach", _PORTS_SAMPLED.format(**sampled), reach.get("sampling"))
    for target, fails in sorted(failures_by_target(reach).items()):
        state = reach_state(snap, target)
        if state not in ("closed", "address"):
            continue  # nothing got through and its probe is silent: a dead host (RLD101)
        node = snap.node(target) or {}
        per_port: dict = {}
        for failure in fails:
            per_port.setdefault((failure["component"], failure["port"]), []).append(failure)
        tried = dig(reach, "tried", target, default={})
        failed = dig(reach, "failed", target, default={})
        fix = PORT_FIXES["ports of a node are closed to other nodes"].format(
            needed=needed, closed="; ".join(_closed_lines(snap, per_port)))
        if state == "address":
            severity, message = fail, _address_message(snap, target, node, fails, tried)
            fix = PORT_FIXES[_BAD_ADDRESS_CASE].format(ip=node.get("ip")) + " " + fix
        else:
            severity, parts = _closed_ports(snap, reach, per_port, tried, failed)
            message = f"{_node_label(snap, target)}: " + "; ".join(parts) + (
                _PORTS_SAMPLED_SHORT.format(**sampled) if sampled["peers_per_node"] else "")
        yield severity(f"node:{target}", message,
                       _unreachable_evidence(snap, reach, target, node, state, fails, tried, failed), fix)


# RLD204's messages, as data.
_PORTS_SAMPLED = ("ports tried on {nodes} nodes from the head and {peers_per_node} peers each, not "
                  "from every node (every pair up to 32 nodes): a port closed between two other "
                  "nodes only may not be seen")
_PORTS_SAMPLED_SHORT = " (on {nodes} nodes each node is tried from the head and {peers_per_node} peers)"
_PORT_CLOSED = "port {port} of {owner} ({needs}) cannot be reached {who}: {statuses}{others}"
_PORT_OTHERS = "; {n} other node(s) reach it"
_BAD_ADDRESS = ("{node} registered with an address the other nodes cannot reach: none of its "
                "{ports} Ray ports answered a connect from any of the {sources} node(s) that tried "
                "({statuses}){not_own}")
_NOT_OWN = "; {ip} is not an address of any of its interfaces ({own})"


def _closed_ports(snap, reach: dict, per_port: dict, tried: dict, failed: dict):
    """(fail or warn, one phrase per closed port): a core port closed from the head or from
    every node that tried is a fail."""
    severity, parts = warn, []
    for (name, port), port_fails in sorted(per_port.items(), key=lambda i: (i[0][0] not in CORE, i[0])):
        owner, needs, _ = COMPONENTS.get(name, (name, "", ""))
        sources = sorted({f["source"] for f in port_fails})
        everyone = failed.get(name, 0) >= tried.get(name, 0)
        if name in CORE and (everyone or reach.get("head_node_id") in sources):
            severity = fail
        who = (f"from every node that tried ({len(sources)})" if everyone and len(sources) > 1
               else "from " + ", ".join(_node_label(snap, s) for s in sources[:4])
               + (f" and {len(sources) - 4} more" if len(sources) > 4 else ""))
        reached = tried.get(name, 0) - failed.get(name, 0)
        parts.append(_PORT_CLOSED.format(
            port=port, owner=owner, needs=needs, who=who,
            statuses=" / ".join(status_words(s) for s in sorted({f["status"] for f in port_fails})),
            others=_PORT_OTHERS.format(n=reached) if reached > 0 else ""))
    return severity, parts


def _address_message(snap, target: str, node: dict, fails: list[dict], tried: dict) -> str:
    own = own_addresses(snap, target)
    return _BAD_ADDRESS.format(
        node=_node_label(snap, target), ports=len(tried), sources=len({f["source"] for f in fails}),
        statuses=" / ".join(status_words(s) for s in sorted({f["status"] for f in fails})),
        not_own=_NOT_OWN.format(ip=node.get("ip"), own=", ".join(own[:6]))
        if own and node.get("ip") not in own else "")


def _unreachable_evidence(snap, reach, target, node, state, fails, tried, failed) -> dict:
    return {
        "node_id": target, "ip": node.get("ip"), "state": state,
        "failures": [{**f, "source_ip": dig(snap.node(f["source"]), "ip"),
                      "owner": COMPONENTS.get(f["component"], (f["component"],))[0]}
                     for f in fails],
        "failures_left_out": reach.get("failures_left_out") or 0,
        # a node whose probe never answered: the peer whose task listened on its worker range
        "worker_port_placed_by": dig(reach, "worker_port_placed_by", target),
        "tried": tried, "failed": failed, "deadline_s": reach.get("deadline_s"),
        "sampling": reach.get("sampling"), "ports": reach.get("endpoints"),
        "worker_port_ranges": reach.get("worker_port_ranges")}
