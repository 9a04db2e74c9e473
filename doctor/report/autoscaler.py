"""The autoscaler in the report: one line under the cluster headline, and the JSON `autoscaler`
section (which one runs, its node types with min / max / current, pending and failed launches,
idle nodes and for how long). Read from the snapshot's `autoscaler` section."""

from __future__ import annotations


def summarize(snap) -> dict | None:
    """The report's `autoscaler` section, or None when the snapshot has none (an older one)."""
    if not snap.has("autoscaler"):
        record = snap.collector("autoscaler")
        if record.get("status") in ("error", "unavailable"):
            return {"version": None, "read": False,
                    "error": record.get("error") or record.get("reason")}
        return None
    a = snap["autoscaler"]
    return {
        "version": a.get("version"), "read": True, "running": a.get("running"),
        "decided_from": a.get("decided_from"),
        "config_source": (a.get("config") or {}).get("source"),
        "config_error": a.get("config_error"),
        "max_workers": (a.get("config") or {}).get("max_workers"),
        "idle_timeout_minutes": (a.get("config") or {}).get("idle_timeout_minutes"),
        "node_types": [{k: t.get(k) for k in ("name", "resources", "min_workers", "max_workers",
                                               "current", "head")}
                       for t in a.get("node_types") or []],
        "pending_launches": a.get("pending_launches") or [],
        "pending_nodes": a.get("pending_nodes") or [],
        "failed_launches": a.get("failed_launches") or [],
        "idle_nodes": [{k: s.get(k) for k in ("node_id", "ip", "node_type", "idle_s")}
                       for s in a.get("idle_nodes") or []],
        "removed": ((a.get("events") or {}).get("removed") or [])[-10:],
        "terminated_nodes": (a.get("terminated_nodes") or [])[-10:],
        "error": a.get("error"),
    }


def line(summary: dict | None) -> str | None:
    """'Autoscaler: v1; node types cpu_worker 2 (0-2), ...; 1 pending launch; ...'"""
    if summary is None:
        return None
    if not summary.get("read"):
        return f"Autoscaler: not read ({summary.get('error')})"
    if not summary.get("version"):
        return "Autoscaler: none runs on this cluster (nothing adds or removes nodes)"
    parts = [summary["version"]]
    types = [t for t in summary["node_types"] if not t.get("head")]
    if types:
        parts.append("node types " + ", ".join(
            f"{t['name']} {t.get('current') or 0} ({t.get('min_workers') if t.get('min_workers') is not None else '?'}"
            f"-{t.get('max_workers') if t.get('max_workers') is not None else '?'})" for t in types))
    elif summary.get("config_error"):
        parts.append(f"node types not read: {summary['config_error']}")
    if summary.get("max_workers") is not None:
        parts.append(f"max_workers {summary['max_workers']}")
    pending = sum(p.get("count") or 0 for p in summary["pending_launches"]) + len(summary["pending_nodes"])
    if pending:
        parts.append(f"{pending} node(s) pending")
    if summary["failed_launches"]:
        parts.append("launches failing: " + ", ".join(
            f"{f.get('node_type')}" + (f" ({f['reason'][:80]})" if f.get("reason") else "")
            for f in summary["failed_launches"]))
    if summary["idle_nodes"]:
        parts.append(f"{len(summary['idle_nodes'])} idle node(s), longest "
                     f"{max(s.get('idle_s') or 0 for s in summary['idle_nodes']):.0f} s")
    if summary.get("idle_timeout_minutes") is not None:
        parts.append(f"idle timeout {float(summary['idle_timeout_minutes']) * 60:g} s")
    if summary.get("error"):
        parts.append("autoscaler error: " + summary["error"].splitlines()[0][:120])
    return "Autoscaler: " + "; ".join(parts)
