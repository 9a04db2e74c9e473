"""What the autoscaler will do for a waiting demand: the one judgement RLD103 and RLD108 share.

Pure functions of the snapshot's `autoscaler`, `nodes` and `demands` sections.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rldoctor.checks._resources import add, fits, missing, show
from rldoctor.checks._rllib import rllib_role
from rldoctor.snapshot import dig

# Causes, in the order they are decided for one demand.
NO_AUTOSCALER = "no-autoscaler"
NO_TYPE_FITS = "no-type-fits"
LAUNCH_FAILS = "launch-fails"
NEVER_JOINS = "never-joins"
AT_MAX = "at-max-workers"
WILL_SCALE = "will-scale"  # the autoscaler is expected to add a node
UNKNOWN = "unknown"  # an autoscaler runs but its node types could not be read

# Pending nodes of v1 that never reached the GCS for this long are "never joined".
NEVER_JOINED_S = 60.0


@dataclass
class Verdict:
    cause: str
    node_types: list[str] = field(default_factory=list)
    detail: str = ""
    evidence: dict = field(default_factory=dict)


def section(snap) -> dict | None:
    """The autoscaler section, or None when it was not collected (an older snapshot)."""
    return snap.get("autoscaler") if snap.has("autoscaler") else None


def worker_types(scaler: dict) -> list[dict]:
    return [t for t in scaler.get("node_types") or []
            if not t.get("head") and t.get("resources") is not None]


def _alive_of_type(snap, scaler: dict) -> dict[str, int]:
    """Nodes of each type the GCS has alive (what joined, as opposed to what was launched)."""
    alive = {n["node_id"] for n in snap.alive_nodes}
    counts: dict[str, int] = {}
    for state in scaler.get("node_states") or []:
        if state.get("node_id") in alive and state.get("status") != "DEAD" and state.get("node_type"):
            counts[state["node_type"]] = counts.get(state["node_type"], 0) + 1
    return counts


def snapshot_time(snap) -> float:
    """When the snapshot was taken (a recorded one is judged at its own time, not today's)."""
    import datetime

    raw = snap.get("created_at")
    try:
        return datetime.datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time()


def never_joined(snap, scaler: dict, now: float | None = None) -> dict[str, dict]:
    """{node type: {count, since, how}} of nodes the provider launched that are not in the GCS."""
    now = snapshot_time(snap) if now is None else now
    out: dict[str, dict] = {}
    joined = _alive_of_type(snap, scaler)
    added = {e["node_type"]: e for e in dig(scaler, "events", "added", default=[])}
    lost = {}
    for e in dig(scaler, "events", "removed", default=[]):
        if e.get("cause") in ("lost contact with raylet", "launch failed"):
            entry = lost.setdefault(e["node_type"], {"times": 0, "first": e.get("ts")})
            entry["times"] += 1
    if scaler.get("version") == "v1":
        for name, launched in (scaler.get("v1_active") or {}).items():
            missing_nodes = launched - joined.get(name, 0)
            if missing_nodes > 0 or name in lost:
                since = dig(added, name, "last")
                out[name] = {"count": max(missing_nodes, 0), "since": since,
                             "waited_s": round(now - float(since), 1) if since else None,
                             "removed_for_no_contact": dig(lost, name, "times", default=0)}
    for pending in scaler.get("pending_nodes") or []:
        name = pending.get("node_type")
        if not name or scaler.get("version") == "v1":
            continue
        entry = out.setdefault(name, {"count": 0, "since": None, "waited_s": None,
                                      "removed_for_no_contact": 0})
        entry["count"] += 1
        entry["details"] = pending.get("details")
    for name, entry in lost.items():
        out.setdefault(name, {"count": 0, "since": entry["first"], "waited_s": None,
                              "removed_for_no_contact": entry["times"]})
    return out


def _failed(scaler: dict) -> dict[str, dict]:
    return {f["node_type"]: f for f in scaler.get("failed_launches") or [] if f.get("node_type")}


def launched(scaler: dict, node_type: dict) -> int:
    """Nodes of a type the autoscaler counts against its max: joined, or launched (v1)."""
    return max(node_type.get("current") or 0, dig(scaler, "v1_active", node_type["name"], default=0))


def _workers_total(scaler: dict) -> int:
    return sum(launched(scaler, t) for t in worker_types(scaler))


def _declared(shape: dict, node_type: dict) -> dict:
    """`shape` without memory figures the type does not declare (Ray fills those in at launch)."""
    return {k: v for k, v in shape.items()
            if k not in ("memory", "object_store_memory") or k in node_type["resources"]}


def judge(snap, shapes: list[dict], strategy: str | None = None) -> Verdict:
    """What the autoscaler does for a demand of `shapes` (one shape, or a group's bundles)."""
    scaler = section(snap)
    if scaler is None:
        return Verdict(UNKNOWN, detail="the autoscaler was not read")
    if not scaler.get("running"):
        return Verdict(NO_AUTOSCALER, detail="no autoscaler runs on this cluster")
    types = worker_types(scaler)
    if not types:
        return Verdict(UNKNOWN, detail=scaler.get("config_error") or "node types unknown")
    needed = [add(shapes)] if strategy == "STRICT_PACK" else shapes
    fitting = [t for t in types if all(fits(_declared(s, t), t["resources"]) for s in needed)
               and (t.get("max_workers") is None or t["max_workers"] > 0)]
    if not fitting:
        best = max(types, key=lambda t: sum(1 for s in needed for k in s if k in t["resources"]))
        short = {}
        for s in needed:
            short.update(missing(s, best["resources"]))
        return Verdict(NO_TYPE_FITS, [t["name"] for t in types],
                       f"no node type offers {{{show(short)}}} (closest: {best['name']} with "
                       f"{{{show(best['resources'])}}})",
                       {"short": short, "closest_type": best["name"]})
    global_max = dig(scaler, "config", "max_workers")
    cluster_full = global_max is not None and _workers_total(scaler) >= global_max

    def has_room(t):
        return not cluster_full and (t.get("max_workers") is None or launched(scaler, t) < t["max_workers"])

    names = [t["name"] for t in fitting]
    failed = _failed(scaler)
    ghosts = never_joined(snap, scaler)
    usable = [t["name"] for t in fitting if has_room(t) and t["name"] not in failed
              and t["name"] not in ghosts]
    if usable:
        return Verdict(WILL_SCALE, usable, f"the autoscaler can add a {usable[0]} node")
    failing = [t["name"] for t in fitting if has_room(t) and t["name"] in failed]
    if failing:
        f = failed[failing[0]]
        return Verdict(LAUNCH_FAILS, failing,
                       f"launches of {failing[0]} fail: {f.get('reason') or 'no reason given'}",
                       {"failures": [failed[name] for name in failing]})
    joining = [name for name in names if name in ghosts]
    if joining:
        return Verdict(NEVER_JOINS, joining,
                       f"{joining[0]} nodes were launched but never joined the cluster",
                       {"never_joined": {name: ghosts[name] for name in joining}})
    at = [f"{t['name']} {launched(scaler, t)}/{t['max_workers']}" for t in fitting
          if t.get("max_workers") is not None]
    limit = (f"the cluster is at max_workers {global_max} ({_workers_total(scaler)} worker(s))"
             if cluster_full else
             "every node type that fits is at its max_workers")
    return Verdict(AT_MAX, names, f"{limit}: {', '.join(at)}",
                   {"global_max_workers": global_max, "types_at_max": at})


def whose(actors: list[dict]) -> str:
    """'a training's learners (2: Learner)' or 'actor QuotaActor' from pending actors."""
    if not actors:
        return ""
    roles: dict[str, list[str]] = {}
    for a in actors:
        role = rllib_role(a.get("class_name")) or "actor"
        roles.setdefault(role, []).append(a.get("class_name") or "?")
    parts = []
    for role, names in sorted(roles.items()):
        label = {"env runner": "a training's env runners", "learner": "a training's learners",
                 "algorithm": "a training's algorithm"}.get(role, "actors")
        parts.append(f"{label} ({len(names)}: {', '.join(sorted(set(names)))})")
    return "; ".join(parts)
