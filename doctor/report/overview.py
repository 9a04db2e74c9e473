"""The cluster overview: one row per node with the figures an on-call reads first.

Built from the snapshot alone (nodes, object_store, hosts, network, versions), so it is
the same live, from a file and from a bundle. A figure whose section was not collected
is None (shown as "-"), and `not_collected` says why. The JSON report carries the whole
overview as its top-level `cluster` section, every node included; the table and Markdown
reports show the worst rows of a large cluster and say how many were folded
(rldoctor.report.render.overview).

Host memory is judged against the limit that applies: `hosts[node].memory_limit`
({"bytes", "used_bytes", "source"}, e.g. the raylet's cgroup) when the probe found one,
else the host's MemTotal; each row says which (`memory_source`).
"""

from __future__ import annotations

from rldoctor import node_state
from rldoctor.words import ZONE_LABEL

SHOWN_ROWS = 20  # table and Markdown: the worst rows of a cluster larger than this
_VERSION_KEYS = ("ray", "python", "rllib", "torch", "gymnasium")
_SECTIONS = ("nodes", "object_store", "hosts", "network", "versions")


def _fraction(used, total):
    return round(used / total, 4) if used is not None and total else None


def _cpus(node: dict) -> tuple[float | None, float | None]:
    total = (node.get("resources_total") or {}).get("CPU")
    if total is None:
        return None, None
    if not node.get("alive"):
        return None, total
    available = node.get("resources_available") or {}
    if not available:  # not read for this node
        return None, total
    return round(total - available.get("CPU", 0.0), 4), total  # Ray leaves out what is all used


def _memory(host: dict | None) -> dict:
    """Used fraction of the memory limit that applies on the node, and which limit it is."""
    if not host:
        return {"memory_used_fraction": None, "memory_limit_bytes": None, "memory_source": None}
    limit = host.get("memory_limit") or {}
    if limit.get("bytes") and limit.get("used_bytes") is not None:
        return {"memory_used_fraction": _fraction(limit["used_bytes"], limit["bytes"]),
                "memory_limit_bytes": limit["bytes"],
                "memory_source": str(limit.get("source") or "memory limit")}
    total, available = host.get("mem_total_bytes"), host.get("mem_available_bytes")
    used = total - available if total and available is not None else None
    return {"memory_used_fraction": _fraction(used, total), "memory_limit_bytes": total,
            "memory_source": "MemTotal" if total else None}


def _differing_versions(versions: dict | None) -> list[str]:
    """Components whose version is not the same on every node that reported one."""
    nodes = (versions or {}).get("nodes") or {}
    return [key for key in _VERSION_KEYS
            if len({str(v.get(key)) for v in nodes.values()}) > 1]


def _row(node: dict, snap, zone_label: str, differing: list[str]) -> dict:
    node_id = node.get("node_id") or ""
    decided = node_state.of(snap, node)
    state, why = decided.state, decided.why
    used_cpu, total_cpu = _cpus(node)
    store = (((snap.get("object_store") or {}).get("nodes") or {}).get(node_id) or {}).get("store")
    store_used = store.get("object_store_bytes_used") if store else None
    store_total = store.get("object_store_bytes_avail") if store else None
    net = ((snap.get("network") or {}).get("nodes") or {}).get(node_id) or {}
    row = {
        "node_id": node_id, "short_id": node_id[:12], "ip": node.get("ip"),
        "is_head": bool(node.get("is_head")),
        "zone": (node.get("labels") or {}).get(zone_label),
        "state": state, "state_reason": why,
        "cpus_used": used_cpu, "cpus_total": total_cpu,
        "store_used_bytes": store_used, "store_total_bytes": store_total,
        "store_used_fraction": _fraction(store_used, store_total),
        "spilled_bytes": store.get("spilled_bytes_total") if store else None,
        **_memory((snap.get("hosts") or {}).get(node_id)),
        "rtt_p50_ms": net.get("p50_ms"), "bandwidth_mib_s": net.get("bandwidth_mib_s"),
        "findings": [],
    }
    if differing:
        mine = ((snap.get("versions") or {}).get("nodes") or {}).get(node_id) or {}
        row["versions"] = {key: mine.get(key) for key in differing}
    return row


def _ip_key(ip: str | None) -> tuple:
    """127.0.0.9 before 127.0.0.10; names after addresses."""
    parts = (ip or "").split(".")
    return (0, *map(int, parts)) if len(parts) == 4 and all(p.isdigit() for p in parts) \
        else (1, ip or "")


def _badness(row: dict) -> tuple:
    """Sort key, worst first: state, then findings, then the fullest store or memory, then latency."""
    fullest = max(row["store_used_fraction"] or 0, row["memory_used_fraction"] or 0)
    # how wrong a node's state is, worst first (rldoctor.node_state); figures break ties
    return (-node_state.RANK.get(row["state"], 1), -len(row["findings"]), -fullest,
            -(row["rtt_p50_ms"] or 0))


def _not_collected(snap) -> dict[str, str]:
    out = {}
    for section in _SECTIONS:
        if snap.has(section):
            continue
        record = snap.collector(section)
        out[section] = (record.get("error") or record.get("reason") or record.get("status")
                        or "not in the snapshot")
    return out


def _sum(rows: list[dict], key: str):
    values = [r[key] for r in rows if r[key] is not None]
    return round(sum(values), 4) if values else None


def autoscaler_summary(snap):
    from rldoctor.report.autoscaler import summarize

    return summarize(snap)


def build(snap, findings=(), zone_label: str | None = None) -> dict:
    """The overview of the cluster in `snap`; `findings` name the nodes they are about."""
    label = zone_label or ZONE_LABEL
    differing = _differing_versions(snap.get("versions"))
    rows = sorted((_row(n, snap, label, differing) for n in snap.nodes),
                  key=lambda r: (not r["is_head"], _ip_key(r["ip"]), r["node_id"]))
    mark_findings(rows, findings)
    alive = [r for r in rows if r["state"] != "DEAD"]
    zones: dict[str, int] = {}
    for r in alive:
        zones[r["zone"] or "-"] = zones.get(r["zone"] or "-", 0) + 1
    states: dict[str, int] = {}
    for r in rows:
        states[r["state"]] = states.get(r["state"], 0) + 1
    store_used, store_total = _sum(alive, "store_used_bytes"), _sum(alive, "store_total_bytes")
    node_versions = list(((snap.get("versions") or {}).get("nodes") or {}).values())
    return {
        "nodes": len(rows), "states": states, "zone_label": label, "zones": zones,
        "cpus_used": _sum(alive, "cpus_used"), "cpus_total": _sum(alive, "cpus_total"),
        "store_used_bytes": store_used, "store_total_bytes": store_total,
        "store_used_fraction": _fraction(store_used, store_total),
        "spilled_bytes": _sum(alive, "spilled_bytes"),
        "memory_sources": sorted({r["memory_source"] for r in alive if r["memory_source"]}),
        "ray_version": (node_versions[0].get("ray") if node_versions and "ray" not in differing
                        else (snap.get("cluster") or {}).get("ray_version")),
        "versions_differ": differing,
        "not_collected": _not_collected(snap),
        "autoscaler": autoscaler_summary(snap),
        "rows": rows,
    }


def mark_findings(rows: list[dict], findings) -> None:
    """Each row's `findings`: the codes of the findings about that node that count
    (muted ones are left out: muting calls this again once it has marked them)."""
    codes: dict[str, set] = {}
    for f in findings:
        if not f.muted:
            codes.setdefault(f.subject, set()).add(f.code)
    for row in rows:
        row["findings"] = sorted(codes.get(f"node:{row['node_id']}", ()))


def shown_rows(overview: dict, limit: int = SHOWN_ROWS) -> tuple[list[dict], int]:
    """(rows to show, how many were folded): all of a small cluster in its own order;
    of a large one the head and the worst others, worst first."""
    rows = overview.get("rows") or []
    if len(rows) <= limit:
        return rows, 0
    head = [r for r in rows if r["is_head"]][:1]
    rest = sorted((r for r in rows if not r["is_head"]), key=_badness)
    return head + rest[:limit - len(head)], len(rows) - limit


def folded_summary(overview: dict, limit: int = SHOWN_ROWS) -> str:
    """One line about the rows `shown_rows` leaves out: their states and their worst figures."""
    shown, folded = shown_rows(overview, limit)
    if not folded:
        return ""
    ids = {r["node_id"] for r in shown}
    rest = [r for r in overview["rows"] if r["node_id"] not in ids]
    states = {}
    for r in rest:
        states[r["state"]] = states.get(r["state"], 0) + 1
    parts = [", ".join(f"{n} {s}" for s, n in sorted(states.items()))]
    for key, what in (("store_used_fraction", "store"), ("memory_used_fraction", "memory")):
        values = [r[key] for r in rest if r[key] is not None]
        if values:
            parts.append(f"{what} at most {max(values):.0%}")
    rtts = [r["rtt_p50_ms"] for r in rest if r["rtt_p50_ms"] is not None]
    if rtts:
        parts.append(f"round trip p50 at most {max(rtts):.1f} ms")
    return f"{folded} more node(s) folded (the least wrong): " + "; ".join(parts)
