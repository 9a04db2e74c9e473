"""Cluster membership, versions and scheduling: RLD101, RLD102, RLD103, RLD105."""

from __future__ import annotations

from rldoctor.checks import _autoscaling as scaling
from rldoctor.checks._reach import explains_silence
from rldoctor.checks._resources import add, fits, missing, show
from rldoctor import node_state
from rldoctor.checks import _loglines
from rldoctor.registry import check, fail, info, warn

# Ray's NodeDeathInfo reasons, and how worried an on-call engineer should be.
_DEATH_SEVERITY = {
    "UNEXPECTED_TERMINATION": fail,
    "UNSPECIFIED": fail,
    "AUTOSCALER_DRAIN_PREEMPTED": warn,
    "EXPECTED_TERMINATION": info,
    "AUTOSCALER_DRAIN_IDLE": info,
}

# RLD101's fixes, by what became of the node (the words of each state are below the check)
_DIED_CASE = "a node died, or neither its raylet nor rldoctor's probe answers"
_SILENT_CASE = "a node's raylet is alive but does not answer (frozen or cut off)"
_NO_PROBE_CASE = "a node alive in the GCS did not answer rldoctor's probe"
_NOT_STARTING_CASE = "a node's raylet answers but its worker processes do not start"
NODE_FIXES = {
    _DIED_CASE: (
    "Read why the node went away: `ray logs raylet.out --node-id {node_id}` (if its logs "
    "survive) and the host's `dmesg` for OOM kills or preemption. A raylet that missed "
    "health checks died (OOM, preemption, crash) or was starved (saturated network, busy "
    "host); Ray waits health_check_period_ms x health_check_failure_threshold before it "
    "marks a node dead. Replace the node (`ray start --address <head>` on a new host, or let "
    "the autoscaler/KubeRay do it); RLlib restarts env runners that were on it only when "
    "`config.fault_tolerance(restart_failed_env_runners=True)` (the default)."),
    _SILENT_CASE: (
    "A raylet that is alive but silent is frozen (SIGSTOP, a process stuck in the kernel on a "
    "dying disk or NFS mount, a paused VM or container) or cut off by the network. On the host: "
    "`ps -o stat,pid,cmd -C raylet` (state T is stopped, D is stuck in the kernel), `dmesg`, and "
    "the node's `raylet.out`. A stopped process resumes with SIGCONT; otherwise drain or replace "
    "the node ({the_fix_for_a_node_that_died})"),
    _NO_PROBE_CASE: (
    "The raylet may be dying, overloaded or cut off. Check the host (load, memory, network), "
    "`ray logs raylet.out --node-id {node_id}`, and run `rldoctor check` again: the GCS marks a "
    "node dead after its health checks fail (about 15 s by default). A worker port range closed "
    "to the head (--min-worker-port..--max-worker-port) would be RLD204's: it is tried through a "
    "task a peer places on the node, which did not answer either."),
    _NOT_STARTING_CASE: (
    "Its worker processes hang or die at start, so tasks and actors placed on it wait: see "
    "`rldoctor explain RLD106` (a sitecustomize or .pth hook, an import from a slow network file "
    "system, a broken Python environment on that node; `py-spy dump --pid` of its newest "
    "`default_worker.py`), and run `rldoctor check` again after the register timeout for Ray's "
    "own line."),
}


@check("RLD101", "node-dead", area="cluster", requires=("nodes",), fixes=NODE_FIXES)
@_loglines.also("RLD101")
def node_dead(snap, params):
    """Nodes dead or missing, with Ray's death reason.

    Symptom:
        Env runners or learners die with `ActorDiedError` / `NodeDiedError`, training
        stops or slows down, `ray status` shows fewer nodes than expected, the raylet
        prints "has been marked dead because the detector has missed too many heartbeats".

    Cause:
        A raylet crashed or was killed (host OOM, SIGKILL, preemption of a spot
        instance), the host went away, or the node was starved so long that the GCS
        health check gave up on it. Ray records the reason as `UNEXPECTED_TERMINATION`,
        `AUTOSCALER_DRAIN_PREEMPTED`, `AUTOSCALER_DRAIN_IDLE` or `EXPECTED_TERMINATION`.
        A node the GCS still lists as alive but whose raylet does not answer a cheap
        ping within 2 s is reported as "not answering" (frozen or cut off) before the GCS
        notices; one whose raylet answers but whose probe's worker never ran is a node
        whose workers do not start (a warn, until its raylet says why: RLD106). A node
        that does not answer because some of its
        ports are closed to other nodes (a firewall) is RLD204's, which names the ports;
        a frozen raylet still accepts connections and stays "not answering" here. Idle
        scale-down and `ray stop` are expected terminations and are reported only as info.
    """
    for node in snap.nodes:
        decided = node_state.of(snap, node)
        if decided.kind not in _NODE_STATES:
            continue  # alive, slow (RLD104) or refusing rldoctor's credentials (RLD105)
        failure = decided.probe_failure or {}
        if decided.kind != "dead" and explains_silence(snap, node["node_id"], failure.get("kind")):
            continue  # a port of it is closed to other nodes: RLD204 names which, from where
        evidence = {"node_id": node["node_id"], "ip": node.get("ip"), "is_head": node.get("is_head"),
                    "labels": {k: v for k, v in (node.get("labels") or {}).items()
                               if k != "ray.io/node-id"}}
        found = _NODE_STATES[decided.kind](snap, node, decided, failure, evidence)
        if found:
            yield found


# What RLD101 says of a node in each state node_state decides (rldoctor.node_state): the
# words once, as data, filled in by the state's own reader below.
_DEAD = "{what}{label} is dead: {reason}{message}"
_SILENT = ("{label} is not answering: its raylet did not answer a ping (GetSystemConfig, answered "
           "in milliseconds by a healthy raylet) within {waited:g}s, so its probe, object store "
           "and network figures were not waited for; the GCS still lists it as alive and marks it "
           "dead only after its health checks run out (about 15 s by default)")
_GONE = ("{label} stopped answering: its raylet is unreachable ({raylet}) and its probe failed "
         "({error}); the GCS still lists it as alive until its health checks run out")
_NO_PROBE = "{label} is alive in the GCS but did not answer a zero-CPU probe: {error}{answers}"
_ANSWERS = "; its raylet answers{took}, so the node is up"
_NOT_STARTING = (
    "; its raylet answers{took} but the worker of the probe never ran: the node's worker "
    "processes do not start. Ray's raylet has not said why yet ({where}); it logs \"have not "
    "registered within the timeout\" once a worker has waited "
    "RAY_worker_register_timeout_seconds (60 s by default), and then RLD106 quotes it")


def _dead(snap, node, decided, failure, evidence):
    reason = node.get("death_reason") or "UNSPECIFIED"
    message = node.get("death_message") or ""
    return _DEATH_SEVERITY.get(reason, fail)(
        f"node:{node['node_id']}",
        _DEAD.format(what="head " if node.get("is_head") else "", label=snap.label(node["node_id"]),
                     reason=reason, message=f": {message}" if message else ""),
        {**evidence, "death_reason": reason, "death_message": message},
        NODE_FIXES[_DIED_CASE].format(node_id=node["node_id"]))


def _silent(snap, node, decided, failure, evidence):
    ping = decided.ping or {}
    return fail(f"node:{node['node_id']}",
                _SILENT.format(label=snap.label(node["node_id"]), waited=ping.get("waited_s") or 2),
                {**evidence, "raylet_ping": ping, "raylet_error": decided.raylet_error,
                 "state": "not answering"},
                NODE_FIXES[_SILENT_CASE].format(
                    the_fix_for_a_node_that_died=NODE_FIXES[_DIED_CASE].format(node_id=node["node_id"])))


def _gone(snap, node, decided, failure, evidence):
    """Two independent paths to the node failed: it is gone."""
    error = failure.get("error", "")
    return fail(f"node:{node['node_id']}",
                _GONE.format(label=snap.label(node["node_id"]), raylet=decided.raylet_error[:100],
                             error=error[:100]),
                {**evidence, "probe_error": error, "raylet_error": decided.raylet_error},
                NODE_FIXES[_DIED_CASE].format(node_id=node["node_id"]))


def _no_probe(snap, node, decided, failure, evidence):
    node_id = node["node_id"]
    if set(snap.log_signals(node_id)) & {"workers_not_registered", "no_available_ports"}:
        return None  # alive, with Ray's word that its workers do not start: RLD106
    ping = decided.ping or {}
    error = failure.get("error", "")
    took = f" (a ping took {ping['ms']:.0f} ms)" if ping.get("ms") is not None else ""
    answers, case = (_ANSWERS.format(took=took) if took else ""), _NO_PROBE_CASE
    starts = failure.get("kind") == "timeout" and failure.get("raylet") == "answers"
    if starts:
        read = failure.get("ray_logs") or {}
        where = (f"read: {', '.join(read.get('files') or []) or 'no raylet log'}"
                 if "error" not in read else f"its raylet log could not be read: {read['error'][:120]}")
        answers, case = _NOT_STARTING.format(took=took, where=where), _NOT_STARTING_CASE
    return warn(f"node:{node_id}",
                _NO_PROBE.format(label=snap.label(node_id), error=error[:160], answers=answers),
                {**evidence, "probe_error": error, "raylet_ping": ping or None,
                 **({"workers_start": False, "raylet_log": failure.get("ray_logs")} if starts else {})},
                NODE_FIXES[case].format(node_id=node_id))


_NODE_STATES = {"dead": _dead, "silent": _silent, "gone": _gone, "no_probe": _no_probe}


AUTH_FIXES = {"nodes or clients disagree on token authentication": (
    "Every node and every client of one cluster must agree on token authentication: start "
    "each node's `ray start` (head and workers; on KubeRay, the same authOptions for every "
    "group) with the same RAY_AUTH_MODE, and with token auth on, the same token (RAY_AUTH_TOKEN "
    "or RAY_AUTH_TOKEN_PATH; `ray get-auth-token` on the head prints it). A node in token mode "
    "refuses everything from processes that carry no token, and a process in token mode "
    "refuses calls from nodes that send none, so tasks and actors placed across the two fail "
    "with ActorDiedError or never start. Until then, rldoctor cannot examine that node."
)}


@check("RLD105", "auth-mismatch", area="cluster", requires=("versions",), fixes=AUTH_FIXES)
def auth_mismatch(snap, params):
    """A node that disagrees with rldoctor (and the cluster's head) on token authentication.

    Symptom:
        Actors and tasks on some nodes die at once with `ActorDiedError: The actor died
        unexpectedly` or never start, while the nodes look healthy; the raylet or worker logs
        say "Missing authorization header in request!" or `InvalidAuthToken`.

    Cause:
        Nodes of one cluster (or a client and the cluster) were started with different
        RAY_AUTH_MODE settings or tokens. rldoctor joins in the mode the head's GCS asks for;
        a node that refuses its credentials, or whose processes rldoctor's driver had to
        refuse, runs in the other mode.
    """
    failed = snap.field("versions", "failed") or {}
    client = snap.field("cluster", "client_auth") or {}
    for node_id, failure in sorted(failed.items()):
        state = snap.state(node_id)  # node_state decides, as for every other reader
        refused = state.state == node_state.AUTH_MISMATCH if state else failure.get("kind") == "auth"
        if not refused:
            continue
        node = snap.node(node_id) or {}
        mode = client.get("mode", "?")
        yield fail(
            f"node:{node_id}",
            f"{snap.label(node_id)} disagrees with rldoctor on token "
            f"authentication, so it could not be examined; {failure.get('auth')}; rldoctor "
            f"joined with RAY_AUTH_MODE={mode} because "
            f"{client.get('why') or 'that is what the head asked for'}",
            {"node_id": node_id, "ip": node.get("ip"), "probe_error": failure.get("error"),
             "raylet": failure.get("raylet"), "client_auth": client},
            AUTH_FIXES["nodes or clients disagree on token authentication"].format())


# Components whose mismatch breaks training, and how badly.
_VERSION_SEVERITY = {"ray": fail, "python": fail, "rllib": fail, "torch": warn, "gymnasium": warn}
VERSION_FIXES = {"a version differs between the nodes and the driver": (
    "Run the same Ray, Python, torch and gymnasium on every node and on the driver: build one "
    "image (or one lock file) and use it for the head, the workers and the machine you submit "
    "from. Ray refuses drivers and nodes whose Ray or Python version differs from the "
    "cluster's; a torch or gymnasium that differs between the learner and the env runners "
    "breaks weight loading or changes env behaviour silently."
)}


def _python_release(version: str | None) -> str | None:
    return version.split()[0] if version else version


@check("RLD102", "version-mismatch", area="cluster", requires=("versions|logged_version_faults",),
       fixes=VERSION_FIXES)
@_loglines.also("RLD102", needs=("versions",))
def version_mismatch(snap, params):
    """Ray, Python, RLlib, torch or gymnasium versions differ between nodes or the driver.

    Symptom:
        `RuntimeError: Version mismatch: The cluster was started with: Ray: X Python: Y
        This process on node ... was started with ...`; env runners that crash while
        unpickling weights or the env; a training that behaves differently on some nodes.

    Cause:
        Nodes and the driver were built from different images or virtualenvs. Ray checks
        its own and Python's version when a node or driver joins, but not torch or
        gymnasium, and a node can lack a package entirely.
    """
    versions = snap["versions"]
    seen: dict[str, dict[str, dict]] = {}
    where = [("driver", versions.get("driver") or {})]
    where += [(f"node:{nid}", v) for nid, v in sorted((versions.get("nodes") or {}).items())]
    for who, comp in where:
        for name in _VERSION_SEVERITY:
            value = comp.get(name)
            if name == "python":
                value = _python_release(value)
            seen.setdefault(name, {}).setdefault(str(value), {})[who] = True
    for name, by_value in seen.items():
        if len(by_value) < 2:
            continue
        groups = {value: sorted(who) for value, who in by_value.items()}
        severity = _VERSION_SEVERITY[name]
        if "None" in groups:
            severity = fail  # installed on some machines, absent on others
        odd = min(groups.items(), key=lambda item: (len(item[1]), item[0]))
        shown = "; ".join(f"{'not installed' if v == 'None' else v} on {len(w)}"
                          for v, w in sorted(groups.items()))
        subject = odd[1][0] if len(odd[1]) == 1 and odd[1][0].startswith("node:") else "cluster"
        yield severity(
            subject,
            f"{name} differs across the cluster ({shown}); odd one out: "
            f"{'not installed' if odd[0] == 'None' else odd[0]} on {', '.join(odd[1][:3])}",
            {"component": name, "versions": groups},
            VERSION_FIXES["a version differs between the nodes and the driver"].format(),
        )


# RLD103's fixes, by where the demand stands (its words are in _DEMAND_SAYS and _PG_SAYS)
_INFEASIBLE = "no node can ever hold what a task or actor requests"
_PG_INFEASIBLE = "no node, or no set of nodes, can ever hold a placement group's bundles"
_PENDING = "nodes that could run the demand are busy"
_SCALING = "a node type of the autoscaler fits the demand"
DEMAND_FIXES = {
    _INFEASIBLE: (
    "No node can ever satisfy this request, so it waits forever (Tune shows the trial "
    "PENDING). Ask for less or add a node that has it: for RLlib, lower "
    "`env_runners(num_env_runners=..., num_cpus_per_env_runner=..., num_gpus_per_env_runner=...)` "
    "or `learners(num_learners=..., num_gpus_per_learner=...)`, check custom resource names "
    "for typos, or start a node with `ray start --resources '{{\"{name}\": N}}'` / a matching "
    "node type in the cluster launcher or KubeRay worker group. `ray status` lists it under "
    "Pending Demands."),
    _PG_INFEASIBLE: (
    "No node (or no set of nodes) can hold these bundles with this strategy, so the placement "
    "group stays PENDING forever and so does the algorithm or Tune trial that made it. "
    "STRICT_PACK needs every bundle on one node: use PACK, or fewer/smaller bundles than the "
    "largest node offers; STRICT_SPREAD needs a distinct node per bundle. For RLlib the "
    "group is 1 bundle for the algorithm (plus learners) and 1 per env runner: lower "
    "`num_env_runners` / `num_cpus_per_env_runner`, or add nodes."),
    _PENDING: (
    "The cluster has nodes that could run this, but they are busy. Wait for running work to "
    "finish, let the autoscaler add nodes, or ask for fewer env runners / CPUs per env runner. "
    "If it never starts, look for leaked actors or placement groups holding the resources "
    "(`ray list actors --filter state=ALIVE`, `ray list placement-groups`)."),
    _SCALING: (
    "A node type of the autoscaler fits this demand; whether it starts depends on the "
    "autoscaler adding that node: RLD108 names what stops it (max_workers, failing launches, "
    "nodes that never join). `ray status -v` on the head shows the autoscaler's view."),
}
_SCALER_WILL = (scaling.WILL_SCALE,)
_SCALER_CANNOT = (scaling.AT_MAX, scaling.LAUNCH_FAILS, scaling.NEVER_JOINS)


def _actors_for(shape, pending_actors):
    return [a for a in pending_actors if (a.get("required_resources") or {}) == shape]


@check("RLD103", "unschedulable-demand", area="cluster", requires=("nodes", "demands"),
       fixes=DEMAND_FIXES)
def unschedulable_demand(snap, params):
    """Pending or infeasible resource demands: tasks, actors and placement groups that cannot start.

    Symptom:
        Training never starts or hangs at "Waiting for resources"; Tune shows the trial
        `PENDING`; the driver prints "The following resource request cannot be scheduled
        right now" or "No available node types can fulfill resource request".

    Cause:
        An actor, task or placement group asks for more than any node has (an
        infeasible demand: a GPU on a CPU-only cluster, a typo in a custom resource, a
        PPO placement group of 1 + num_env_runners x num_cpus_per_env_runner CPUs that no
        node or the whole cluster cannot give), or more than is free right now. The
        evidence shows the largest node to compare the demand with.
    """
    offers = [n.get("resources_total") or {} for n in snap.alive_nodes]
    largest = max(offers, key=lambda o: (o.get("CPU", 0), o.get("GPU", 0)), default={})
    demands = snap["demands"]
    for demand in demands.get("task_actor") or []:
        yield _task_actor_demand(snap, demand, offers, largest, demands.get("pending_actors") or [])
    for pg in demands.get("placement_groups") or []:
        yield _placement_group_demand(snap, pg, offers, largest)


def _situation(fits_now: bool, cause: str) -> str:
    """Where a demand stands: no alive node could hold it ("absent") or it waits ("busy"), and
    what the autoscaler will do about it (rldoctor.checks._autoscaling's verdict)."""
    scaler = "-will" if cause in _SCALER_WILL else "-cannot" if cause in _SCALER_CANNOT else ""
    if fits_now and cause == scaling.AT_MAX:
        return "at-max"
    return ("busy" if fits_now else "absent") + scaler


# RLD103's words for a task's or actor's demand in each situation: (severity, message, fix's case)
_DEMAND_SAYS = {
    "absent-will": (warn, "{who} requests {{{shape}}}, which no alive node has yet: {detail}, so "
                    "the autoscaler is expected to start it", _SCALING),
    "absent-cannot": (warn, "{who} requests {{{shape}}}, which no alive node has; node type "
                      "{types} fits it but {detail}: it waits until that is fixed (RLD108)",
                      _SCALING),
    "absent": (fail, "{who} requests {{{shape}}}, which no alive node has (short of {short} on "
               "the largest node): infeasible, it will never start", _INFEASIBLE),
    "at-max": (warn, "{who} requesting {{{shape}}} wait and will not start until running work "
               "frees it: {detail}, so no node will be added (RLD108)", _SCALING),
    "busy-will": (warn, "{who} requesting {{{shape}}} are waiting for free resources; {detail}, "
                  "so the autoscaler is expected to start them", _PENDING),
    "busy-cannot": (warn, "{who} requesting {{{shape}}} are waiting for free resources, and no "
                    "node will be added: {detail} (RLD108)", _SCALING),
    "busy": (warn, "{who} requesting {{{shape}}} are waiting for free resources",
             _PENDING),
}
# ... and for a placement group's
_PG_SAYS = {
    "absent-will": (warn, "{name} cannot be placed on the nodes alive now; {detail}, so the "
                    "autoscaler is expected to place it", _SCALING),
    "absent-cannot": (warn, "{name} cannot be placed on the nodes alive now; a node type fits it "
                      "but {detail}: it waits until that is fixed (RLD108)", _SCALING),
    "absent": (fail, "{name} needs bundles [{bundles}] that the cluster cannot place (largest "
               "node: {{{largest}}}): infeasible, it will never be created", _PG_INFEASIBLE),
    "at-max": (warn, "{name} is pending, and no node will be added for it: {detail} (RLD108)",
               _SCALING),
    "busy-cannot": (warn, "{name} is pending, and no node will be added for it: {detail} (RLD108)",
                    _SCALING),
    "busy-will": (warn, "{name} is pending until resources free up", _PENDING),
    "busy": (warn, "{name} is pending until resources free up", _PENDING),
}


def _said(says: dict, situation: str, subject: str, evidence: dict, **words):
    severity, message, case = says[situation]
    return severity(subject, message.format(**words), evidence, DEMAND_FIXES[case].format(**words))


def _task_actor_demand(snap, demand, offers, largest, pending_actors):
    shape = {k: float(v) for k, v in (demand.get("shape") or {}).items()}
    count = demand.get("count", 1)
    actors = _actors_for(shape, pending_actors)
    one = actors[0] if len(actors) == 1 else None
    who = (f"actor {one.get('class_name')}" + (f" '{one['name']}'" if one.get("name") else "")
           if one else f"{count} task(s)/actor(s)")
    verdict = scaling.judge(snap, [shape])
    evidence = {"shape": shape, "count": count,
                "actors": [{k: a.get(k) for k in ("actor_id", "class_name", "name", "job_id")}
                           for a in actors[:10]],
                "largest_node": largest,
                "autoscaler": {"cause": verdict.cause, "node_types": verdict.node_types,
                               "detail": verdict.detail}}
    short = missing(shape, largest)
    return _said(_DEMAND_SAYS, _situation(any(fits(shape, offer) for offer in offers), verdict.cause),
                 f"actor:{one['actor_id']}" if one else "cluster", evidence, who=who,
                 shape=show(shape), detail=verdict.detail, types=", ".join(verdict.node_types),
                 short=show(short), name=sorted(short)[0] if short else "resource")


def _placement_group_demand(snap, pg, offers, largest):
    bundles = [{k: float(v) for k, v in b.items()} for b in pg.get("bundles") or []]
    strategy = pg.get("strategy", "PACK")
    if strategy == "STRICT_PACK":
        feasible = any(fits(add(bundles), offer) for offer in offers)
    elif strategy == "STRICT_SPREAD":
        feasible = all(sum(fits(b, o) for o in offers) >= len(bundles) for b in bundles)
    else:
        feasible = (all(any(fits(b, o) for o in offers) for b in bundles)
                    and fits(add(bundles), add(offers)))
    verdict = scaling.judge(snap, bundles, strategy)
    evidence = {"pg_id": pg.get("pg_id"), "strategy": strategy, "bundles": bundles,
                "state": pg.get("state"), "largest_node": largest,
                "autoscaler": {"cause": verdict.cause, "node_types": verdict.node_types,
                               "detail": verdict.detail}}
    name = f"placement group {pg.get('name') or pg.get('pg_id', '')[:12]} ({strategy})"
    return _said(_PG_SAYS, _situation(feasible, verdict.cause), f"placement_group:{pg.get('pg_id')}",
                 evidence, name=name, detail=verdict.detail, largest=show(largest),
                 bundles=", ".join("{" + show(b) + "}" for b in bundles))
