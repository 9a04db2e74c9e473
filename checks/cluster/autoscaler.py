"""Clusters that grow and shrink, the autoscaler: RLD108, RLD109.

Area `cluster`. Both read the `autoscaler` section (rldoctor.cluster.autoscaler): which
autoscaler runs, its node types with min/max/current, its launches and failures, idle nodes.
"""

from __future__ import annotations

import time
from typing import Iterator

from rldoctor.checks import _autoscaling as scaling
from rldoctor.checks._resources import show
from rldoctor.checks._rllib import rllib_role
from rldoctor.registry import check, fail, info, warn
from rldoctor.snapshot import dig

# RLD108's fixes, by why the demand waits (_CASE: the autoscaler's verdict's case)
_REQUEST_CASE = "a request_resources() call is still in force"
_CASE = {scaling.NO_TYPE_FITS: "no node type of the autoscaler can fit the demand",
         scaling.AT_MAX: "the node type or the cluster is at its max_workers",
         scaling.LAUNCH_FAILS: "the cloud refuses the autoscaler's launches",
         scaling.NEVER_JOINS: "nodes were launched but their Ray never joined the head",
         scaling.NO_AUTOSCALER: "no autoscaler runs on the cluster"}
SCALE_UP_FIXES = {
    _CASE[scaling.NO_TYPE_FITS]: (
        "Add a node type that offers the resource (`available_node_types` in the cluster YAML; a "
        "worker group in the RayCluster CR with `rayStartParams` num-gpus or resources), or ask "
        "for less: `num_gpus_per_learner`, `num_cpus_per_env_runner`, custom resource names "
        "(a typo is a resource no node will ever have)."),
    _CASE[scaling.AT_MAX]: (
        "Raise `max_workers` of the node type (KubeRay: `maxReplicas` of the worker group) or the "
        "cluster's `max_workers`, or ask for less (`num_env_runners`, `num_learners`). Until "
        "then the demand starts only when running work ends: Ray does not queue it anywhere "
        "the autoscaler would act on."),
    _CASE[scaling.LAUNCH_FAILS]: (
        "The cloud refuses the node: read the provider's reason above (a quota: request more "
        "or use another region / instance type; capacity: add another node type or zone "
        "the autoscaler can fall back to). `ray status -v` on the head shows the same reason "
        "under Recent failures."),
    _CASE[scaling.NEVER_JOINS]: (
        "The machine came up but its Ray never registered with the head: read the node's "
        "startup output (KubeRay: `kubectl logs <pod>`; `ray up`: the autoscaler's monitor.log "
        "on the head) for 'Version mismatch' (the image runs another Ray or Python than the "
        "head), a GCS address it cannot reach (firewall, security group, the head's port), or "
        "`ray start` failing."),
    _CASE[scaling.NO_AUTOSCALER]: (
        "Nothing adds nodes to this cluster: start nodes by hand (`ray start --address HEAD`), "
        "start the head with an autoscaling config (`ray up`, KubeRay `enableInTreeAutoscaling: "
        "true`), or ask for what the cluster has."),
    _REQUEST_CASE: (
    "request_resources() stays in force until it is called again: call "
    "`ray.autoscaler.sdk.request_resources()` with no arguments (or num_cpus=0) to clear it. "
    "While it is in force the autoscaler keeps the nodes it needs up, even idle."),
}
_SEVERITY = {scaling.NO_TYPE_FITS: fail, scaling.LAUNCH_FAILS: fail, scaling.NEVER_JOINS: fail,
             scaling.AT_MAX: warn, scaling.NO_AUTOSCALER: info}
_WHAT = {scaling.NO_TYPE_FITS: "no node type can fit it",
         scaling.AT_MAX: "the autoscaler will not add nodes",
         scaling.LAUNCH_FAILS: "the autoscaler's launches fail",
         scaling.NEVER_JOINS: "nodes were launched but never joined",
         scaling.NO_AUTOSCALER: "no autoscaler runs on this cluster"}


def _when(ts, now: float) -> str:
    try:
        ago = max(0.0, now - float(ts))
    except (TypeError, ValueError):
        return ""
    stamp = time.strftime("%H:%M:%S UTC", time.gmtime(float(ts)))
    return f"since {stamp} ({ago:.0f} s ago)"


def waiting_demands(snap) -> list[dict]:
    """Every demand that waits: {kind, label, shapes, strategy, count, whose, subject, evidence}."""
    demands = snap["demands"]
    pending = demands.get("pending_actors") or []
    out = []
    for demand in demands.get("task_actor") or []:
        shape = {k: float(v) for k, v in (demand.get("shape") or {}).items()}
        actors = [a for a in pending if (a.get("required_resources") or {}) == shape]
        who = scaling.whose(actors) or "tasks/actors"
        out.append({"kind": "task_actor", "shapes": [shape], "strategy": None,
                    "count": demand.get("count", 1), "whose": who,
                    "label": f"{demand.get('count', 1)} x {{{show(shape)}}} ({who})",
                    "actors": [{k: a.get(k) for k in ("actor_id", "class_name", "name", "job_id")}
                               for a in actors[:10]]})
    for pg in demands.get("placement_groups") or []:
        bundles = [{k: float(v) for k, v in b.items()} for b in pg.get("bundles") or []]
        name = pg.get("name") or (pg.get("pg_id") or "")[:12]
        shown = ", ".join("{" + show(b) + "}" for b in bundles)
        out.append({"kind": "placement_group", "shapes": bundles, "strategy": pg.get("strategy"),
                    "count": 1, "whose": f"placement group {name}",
                    "label": f"placement group {name} ({pg.get('strategy')}: [{shown}])",
                    "pg_id": pg.get("pg_id")})
    for constraint in demands.get("cluster_constraints") or []:
        shape = {k: float(v) for k, v in (constraint.get("shape") or {}).items()}
        out.append({"kind": "request_resources", "shapes": [shape], "strategy": None,
                    "count": constraint.get("count", 1), "whose": "a request_resources() constraint",
                    "label": f"request_resources() {constraint.get('count', 1)} x {{{show(shape)}}}",
                    "source": constraint.get("source")})
    return out


@check("RLD108", "scale-up-blocked", area="cluster", requires=("autoscaler", "demands", "nodes"),
       fixes=SCALE_UP_FIXES)
def scale_up_blocked(snap, params):
    """Demand that waits while the autoscaler will not or cannot meet it, one finding per cause.

    Symptom:
        A training waits ("Waiting for resources", Tune's trial PENDING, env runners or
        learners PENDING_CREATION) and no node comes; `ray status` shows the demand under
        Pending Demands, maybe "Failed to launch N node(s) of type T" or nothing at all.

    Cause:
        The autoscaler cannot or will not add the node the demand needs: no node type offers
        the shape (which resource is short is named), the node type or the cluster is at
        `max_workers`, the cloud refuses the launches (a quota, no capacity: the provider's own
        reason, how often, since when), nodes were launched but their Ray never joined the
        head (another Ray version, a GCS they cannot reach), no autoscaler runs at all, or a
        `request_resources()` left behind asks for nodes that never come or keeps nodes up.
        Each finding names the demand (its shape and count, and whose it is) and the node
        types.
    """
    scaler = snap["autoscaler"]
    now = scaling.snapshot_time(snap)
    for (cause, _types), group in sorted(_blocked_groups(snap).items()):
        verdict = group["verdict"]
        labels = "; ".join(d["label"] + (f": {detail}" if cause == scaling.NO_TYPE_FITS else "")
                           for d, detail in zip(group["demands"], group["details"]))
        evidence = {"cause": cause, "node_types": list(verdict.node_types),
                    "demands": [{k: v for k, v in d.items() if k != "label"} for d in group["demands"]],
                    **verdict.evidence, "autoscaler": scaler.get("version")}
        subject, message = _BLOCKED_SAYS.get(cause, _blocked_otherwise)(labels, cause, verdict, now)
        yield _SEVERITY[cause](subject, message, evidence, SCALE_UP_FIXES[_CASE[cause]].format())
    for demand in waiting_demands(snap):
        if demand["kind"] == "request_resources":
            found = _request_in_force(snap, demand)
            if found:
                yield found


def _blocked_groups(snap) -> dict[tuple, dict]:
    """The waiting demands (request_resources() aside) by cause and node types."""
    groups: dict[tuple, dict] = {}
    for demand in waiting_demands(snap):
        verdict = scaling.judge(snap, demand["shapes"], demand["strategy"])
        if demand["kind"] == "request_resources" or verdict.cause not in _SEVERITY:
            continue  # request_resources() is judged with what it keeps up
        key = (verdict.cause, tuple(verdict.node_types) if verdict.cause != scaling.NO_TYPE_FITS else ())
        group = groups.setdefault(key, {"verdict": verdict, "demands": [], "details": []})
        group["demands"].append(demand)
        group["details"].append(verdict.detail)
    return groups


def _no_type_fits(labels, cause, verdict, now):
    return "autoscaler", (f"{labels}; node types: {', '.join(verdict.node_types)}: {_WHAT[cause]}, "
                          "it waits forever")


def _launch_fails(labels, cause, verdict, now):
    parts = [f"{f['node_type']}: \"{f.get('reason') or 'no reason recorded'}\""
             + (f", {f['count']} time(s)" if f.get("count") else "")
             + (f" {_when(f.get('since'), now)}" if f.get("since") else "")
             for f in verdict.evidence.get("failures") or []]
    return f"node_type:{verdict.node_types[0]}", f"{labels} wait(s): {_WHAT[cause]}: {'; '.join(parts)}"


def _never_joins(labels, cause, verdict, now):
    parts = []
    for name, ghost in (verdict.evidence.get("never_joined") or {}).items():
        bits = [f"{ghost.get('count')} launched, not in the cluster"] if ghost.get("count") else []
        if ghost.get("waited_s") is not None:
            bits.append(f"for {ghost['waited_s']:.0f} s")
        if ghost.get("removed_for_no_contact"):
            bits.append(f"{ghost['removed_for_no_contact']} removed by the autoscaler "
                        "for \"lost contact with raylet\" (and launched again)")
        if ghost.get("details"):
            bits.append(f"the autoscaler says: {ghost['details']}")
        parts.append(f"{name}: {', '.join(bits)}")
    return f"node_type:{verdict.node_types[0]}", f"{labels} wait(s): {_WHAT[cause]}: {'; '.join(parts)}"


def _at_max(labels, cause, verdict, now):
    return (f"node_type:{verdict.node_types[0]}" if len(verdict.node_types) == 1 else "autoscaler",
            f"{labels} wait(s) and {_WHAT[cause]}: {verdict.detail}")


def _blocked_otherwise(labels, cause, verdict, now):
    return "autoscaler", f"{labels} wait(s) and {_WHAT[cause]}: nothing will add a node for it"


_BLOCKED_SAYS = {scaling.NO_TYPE_FITS: _no_type_fits, scaling.LAUNCH_FAILS: _launch_fails,
                 scaling.NEVER_JOINS: _never_joins, scaling.AT_MAX: _at_max}


def _request_in_force(snap, demand):
    """A request_resources() in force: nodes that never come (warn), or nodes kept up (info)."""
    verdict = scaling.judge(snap, demand["shapes"])
    evidence = {"cause": "request-resources", "constraint": demand, "verdict": verdict.cause,
                "node_types": verdict.node_types, "source": demand.get("source")}
    source = demand.get("source") or "request_resources"
    if verdict.cause in (scaling.NO_TYPE_FITS, scaling.LAUNCH_FAILS, scaling.NEVER_JOINS,
                         scaling.AT_MAX):
        return warn("request_resources", f"{demand['label']} is in force and asks for nodes that "
                    f"never come: {verdict.detail} ({source})", evidence,
                    SCALE_UP_FIXES[_REQUEST_CASE].format())
    if verdict.cause != scaling.NO_AUTOSCALER:
        return info("request_resources", f"{demand['label']} is in force: the autoscaler keeps "
                    f"nodes up for it even when they are idle, until it is cleared ({source})",
                    evidence, SCALE_UP_FIXES[_REQUEST_CASE].format())
    return None


# RLD109's fixes: a node removed (or counted idle) under a training, and a node autoscaler v1
# counts idle by its resources (that fix and the first, joined)
_REMOVED_CASE = "a node a training runs on was removed (idle or preempted), or is counted idle"
_NO_RESOURCE_CASE = ("a training's actors hold no resource on their node, which autoscaler v1 "
                     "of Ray 2.40 and older counts idle")
REMOVED_FIXES = {
    _REMOVED_CASE: (
    "Keep the nodes a training runs on out of idle scale-down: raise `idle_timeout_minutes` "
    "(KubeRay `idleTimeoutSeconds`) above the training's longest pause (evaluation, "
    "checkpointing, a learner update), give the env runners a CPU (`num_cpus_per_env_runner`, "
    "so their nodes count as busy), or keep `min_workers` nodes of the type; for preemptible "
    "nodes keep `restart_failed_env_runners=True` and checkpoint often. Ray's own record: "
    "`ray list nodes --detail` (death reason), the autoscaler's 'Removing N nodes of type T "
    "(idle)' events."),
    _NO_RESOURCE_CASE: (
    "Give the env runners a resource so that their node counts as used: "
    "`num_cpus_per_env_runner` above 0 (or a custom resource of the node type), or keep "
    "`min_workers` nodes of the type; Ray 2.41 and later (and autoscaler v2) count a node "
    "busy while an actor lives there."),
}
_REMOVAL_REASONS = {"AUTOSCALER_DRAIN_IDLE": "terminated by the autoscaler as idle",
                    "AUTOSCALER_DRAIN_PREEMPTED": "preempted (drained by the provider)"}


def _training_actors(snap) -> list[tuple[dict, dict]]:
    """(training, member) for every env runner, learner and algorithm actor of a training."""
    out = []
    for training in (snap.field("training", "trainings") or []):
        members = (training.get("runners") or []) + (training.get("learners") or [])
        if training.get("algorithm_actor"):
            members.append(training["algorithm_actor"])
        out += [(training, member) for member in members]
    return out


def _how_taken(training: dict, lost: list[dict]) -> str:
    alive = training.get("runners_alive", 0)
    configured = training.get("runners_configured") or 0
    job = dig(training, "job", "status")
    if job in ("FAILED", "STOPPED"):
        return f"the training's job is {job}"
    restarted = [m for m in lost if m.get("state") in ("ALIVE", "RESTARTING") and m.get("num_restarts")]
    if restarted:
        return f"{len(restarted)} restarted elsewhere; {alive}/{configured} env runner(s) alive"
    if alive < configured:
        return f"it runs with fewer env runners: {alive}/{configured} alive"
    return f"{alive}/{configured} env runner(s) alive now"


@check("RLD109", "nodes-removed-under-training", area="cluster", requires=("autoscaler", "nodes"),
       fixes=REMOVED_FIXES)
def nodes_removed_under_training(snap, params):
    """Nodes the autoscaler removed as idle (or that were preempted) while a training ran there.

    Symptom:
        Env runners die with `ActorDiedError` "The actor died because its node has died ...
        Termination of node that's idle for N seconds", although nothing crashed; the
        training restarts runners, runs with fewer, or fails; nodes come and go.

    Cause:
        The autoscaler counts a node idle when nothing is leased on it (v1 of Ray 2.40 and
        older: when none of its resources is in use, object store included, so a node whose
        env runners ask for 0 CPUs is idle whenever the training pauses) and removes it after
        `idle_timeout_minutes` (KubeRay `idleTimeoutSeconds`, 60 s by default); spot nodes
        are preempted. A training's actors on such a node die with it, and so do the env
        runners whose owner (the algorithm) ran there. v1 drains a node without a reason (the
        GCS records only "Terminated by autoscaler."); its monitor.log says why
        ("Terminating the node with id X and ip Y. (idle)"), which rldoctor reads on the head.

        The finding names the node, its reason, the actors lost and how the training took
        it; before it happens, training actors on a node the autoscaler counts idle, or (v1
        of Ray 2.40 and older) on a node where they hold no resource, which a pause of the
        training longer than the idle timeout removes.
    """
    scaler = snap["autoscaler"]
    why, dead = _removed_nodes(snap, scaler)
    members = _training_actors(snap)
    for node_id, lost in sorted(_lost_with(snap, dead, members).items()):
        yield _removed_finding(dead[node_id], why[node_id], lost, scaler)
    if not scaler.get("running"):
        return
    early = list(_idle_by_resources(snap, scaler, members))
    yield from early
    yield from _idle_now(scaler, members, {f.subject for f in early})


# RLD109's words: a node removed under a training, and (before it happens) one counted idle
_REMOVED = ("node {short} ({ip}) was {why} while a training ran there: {what} lost with it "
            "({classes}); {took}{ray_says}")
_IDLE_NOW = ("{training}'s {count} actor(s) ({classes}) run on node {short} ({ip}, type {type}), "
             "which the autoscaler counts idle for {idle:.0f} s{timeout}")
_OF_TIMEOUT = " of its {timeout:.0f} s idle timeout: it will be removed with them"


def _removed_nodes(snap, scaler) -> tuple[dict, dict]:
    """({node id: why it was removed}, {node id: its dead node}): the GCS's reason, else v1's
    monitor.log (v1 drains without a reason)."""
    why = {n["node_id"]: _REMOVAL_REASONS[n["death_reason"]] for n in snap.nodes
           if not n.get("alive") and n.get("death_reason") in _REMOVAL_REASONS}
    for ended in scaler.get("terminated_nodes") or []:
        if ended.get("node_id") and ended["node_id"] not in why:
            why[ended["node_id"]] = ("terminated by the autoscaler as idle" if ended.get("reason") == "idle"
                                     else f"terminated by the autoscaler ({ended.get('reason')})")
    return why, {n["node_id"]: n for n in snap.nodes if n["node_id"] in why and not n.get("alive")}


def _lost_with(snap, dead, members) -> dict[str, list]:
    """{removed node id: [(training, actor)]} of the RLlib actors lost with each node."""
    by_node: dict[str, list] = {}
    for training, member in members:
        if member and member.get("node_id") in dead:
            by_node.setdefault(member["node_id"], []).append((training, member))
    # Actors whose death cause names a removed node (the training section keeps the current
    # node only; a restarted actor's old node is in its death cause).
    # An actor whose owner (the algorithm, a driver loop) ran there dies with it, wherever it ran.
    for actor in (snap.field("actors", "items") or []):
        message = dig(actor, "death_cause", "message", default="")
        for node_id, node in dead.items():
            owner_there = "Owner's node" in message and f"Owner Ip address: {node.get('ip')} " in message
            if (node_id in message or owner_there) and rllib_role(actor.get("class_name")):
                training = next((t for t, m in members if m and m.get("actor_id") == actor["actor_id"]), {})
                if not any(m.get("actor_id") == actor["actor_id"] for _, m in by_node.get(node_id, [])):
                    by_node.setdefault(node_id, []).append((training, {**actor, "role": rllib_role(actor.get("class_name"))}))
    # The env runners of an algorithm lost there die with it wherever they ran: owned by it, as
    # OWNER_DIED, or, once its references to them are gone, REF_DELETED.
    for node_id, lost in by_node.items():
        for training in {id(t): t for t, m in lost if t and m.get("role") == "algorithm"}.values():
            for runner in training.get("runners") or []:
                if (dig(runner, "death_cause", "reason") in ("OWNER_DIED", "REF_DELETED")
                        and not any(m.get("actor_id") == runner.get("actor_id") for _, m in lost)):
                    lost.append((training, runner))
    return by_node


def _removed_finding(node, why, lost, scaler):
    node_id = node["node_id"]
    trainings = {t.get("id"): t for t, _ in lost if t}
    runners = [m for _, m in lost if m.get("role") == "env runner"]
    others = [m for _, m in lost if m.get("role") != "env runner"]
    took = "; ".join(f"{t.get('subject', tid)}: {_how_taken(t, [m for tt, m in lost if tt is t])}"
                     for tid, t in trainings.items()) or "no training of it is running now"
    failed = any(dig(t, "job", "status") == "FAILED" for t in trainings.values())
    return (fail if failed else warn)(
        f"node:{node_id}",
        _REMOVED.format(short=node_id[:12], ip=node.get("ip"), why=why, took=took,
                        what=f"{len(runners)} env runner(s)"
                        + (f" and {len(others)} other RLlib actor(s)" if others else ""),
                        classes=", ".join(sorted({m.get("class_name") or "?" for _, m in lost})),
                        ray_says=f"; Ray says: {node.get('death_message')}" if node.get("death_message") else ""),
        {"node_id": node_id, "ip": node.get("ip"), "death_reason": node.get("death_reason"),
         "removed": why, "death_message": node.get("death_message"),
         "lost": [{k: m.get(k) for k in ("actor_id", "class_name", "role", "state", "num_restarts")}
                  for _, m in lost],
         "trainings": sorted(trainings), "autoscaler": scaler.get("version")},
        REMOVED_FIXES[_REMOVED_CASE].format())


def _idle_now(scaler, members, warned):
    """Before it happens: training actors on a node the autoscaler counts idle."""
    config = scaler.get("config") or {}
    timeout_s = (float(config["idle_timeout_minutes"]) * 60
                 if config.get("idle_timeout_minutes") is not None else None)
    idle = {s["node_id"]: s for s in scaler.get("idle_nodes") or [] if s.get("node_id")}
    seen = set()
    for training, member in members:
        node_id = member.get("node_id") if member else None
        if node_id not in idle or member.get("state") != "ALIVE" or (training.get("id"), node_id) in seen \
                or f"node:{node_id}" in warned:
            continue
        seen.add((training.get("id"), node_id))
        state = idle[node_id]
        on_node = [m for t, m in members if t is training and m and m.get("node_id") == node_id]
        yield warn(
            f"node:{node_id}",
            _IDLE_NOW.format(training=training.get("subject"), count=len(on_node), short=node_id[:12],
                             classes=", ".join(sorted({m.get("class_name") or "?" for m in on_node})),
                             ip=state.get("ip"), type=state.get("node_type") or "?",
                             idle=state.get("idle_s", 0),
                             timeout=_OF_TIMEOUT.format(timeout=timeout_s) if timeout_s is not None else ""),
            {"node_id": node_id, "idle_s": state.get("idle_s"), "idle_timeout_s": timeout_s,
             "node_type": state.get("node_type"), "activity": state.get("activity"),
             "actors": [m.get("actor_id") for m in on_node]}, REMOVED_FIXES[_REMOVED_CASE].format())


def counts_idle_by_resources(scaler: dict, ray_version) -> bool:
    """Autoscaler v1 of Ray 2.40 and older counts a node used only while one of its resources
    is in use (load_metrics: static != dynamic resources); from 2.41 on (ray#48519), and in v2,
    a node is busy while any worker is leased there, so a live actor keeps its node."""
    try:
        release = tuple(int(p) for p in str(ray_version).split(".")[:2])
    except ValueError:
        return False
    return scaler.get("version") == "v1" and release <= (2, 40)


def _in_use(node: dict) -> list[str]:
    total, free = node.get("resources_total") or {}, node.get("resources_available") or {}
    return sorted(k for k, v in total.items() if not k.startswith("node:") and
                  k != "object_store_memory" and float(v) - float(free.get(k, 0.0)) > 1e-9)


def _idle_by_resources(snap, scaler: dict, members: list) -> Iterator:
    """Before it happens, where the autoscaler counts idleness by resources in use: a worker
    node whose training actors hold no resource (num_cpus_per_env_runner=0) while nothing else
    does is used only while objects sit in its object store, so it is idle whenever the training
    pauses, and removed when a pause outlasts the idle timeout."""
    version = snap.field("cluster", "ray_version")
    if not counts_idle_by_resources(scaler, version):
        return
    minutes = dig(scaler, "config", "idle_timeout_minutes")
    # Only nodes it launched, of a type it may scale down (above its min_workers)
    type_of = {s.get("node_id"): s.get("node_type") for s in scaler.get("node_states") or []}
    kept = {t["name"] for t in scaler.get("node_types") or []
            if t.get("head") or (t.get("min_workers") or 0) >= (t.get("current") or 0)}
    nodes = {n["node_id"]: n for n in snap.nodes if n.get("alive") and not n.get("is_head")
             and type_of.get(n["node_id"]) and type_of[n["node_id"]] not in kept}
    by_node: dict[str, list] = {}
    for training, member in members:
        if member and member.get("state") == "ALIVE" and member.get("node_id") in nodes:
            by_node.setdefault(member["node_id"], []).append((training, member))
    for node_id, here in sorted(by_node.items()):
        node = nodes[node_id]
        if _in_use(node):
            continue
        names = ", ".join(sorted({m.get("class_name") or "?" for _, m in here}))
        subjects = ", ".join(sorted({t.get("subject") or "?" for t, _ in here}))
        yield warn(
            f"node:{node_id}",
            f"{subjects}'s {len(here)} actor(s) ({names}) run on node {node_id[:12]} "
            f"({node.get('ip')}) and hold no resource there, nor does anything else: autoscaler v1 "
            f"of Ray {version} counts a node idle while none of its resources is in use (its object "
            "store empty included), so a pause of the training (an evaluation, a checkpoint, a "
            "learner update elsewhere) longer than the idle timeout"
            + (f" ({float(minutes) * 60:.0f} s)" if minutes is not None else "")
            + " removes the node with them",
            {"node_id": node_id, "ray_version": version, "idle_timeout_minutes": minutes,
             "resources_total": node.get("resources_total"),
             "actors": [m.get("actor_id") for _, m in here]},
            REMOVED_FIXES[_NO_RESOURCE_CASE].format() + " " + REMOVED_FIXES[_REMOVED_CASE].format())
