"""The training's demand against the cluster's capacity: RLD901.

The demand is the placement group RLlib asks for (`Algorithm.default_resource_request`: the
main process, each env runner and each learner as one bundle, with its strategy), times the
Tune trials that run at once. It is packed, first fit from the largest bundle, into the nodes'
free resources (placeable now), into their totals (placeable once what runs now ends), and
then into the nodes the autoscaler can add (each node type's resources, within its and the
cluster's max_workers, read as RLD108 reads them): placeable after scale-up, or never.
"""

from __future__ import annotations

from rldoctor.checks._autoscaling import launched, section as autoscaler, worker_types
from rldoctor.checks._resources import fits, missing, show
from rldoctor.checks.preflight._plan import plan, shape
from rldoctor.registry import check, fail, warn
from rldoctor.snapshot import dig

# The fixes of RLD901's findings, by case (rldoctor.engine.registry).
CAPACITY_FIXES = {
    "one bundle is larger than every node (and node type)": (
        "Ask for less per {role} (`num_cpus_per_env_runner`, `num_gpus_per_learner`, "
        "custom resources) or add a node (or an autoscaler node type) that offers "
        "{{{short}}}; Ray would print `The following resource request cannot be "
        "scheduled right now` forever."),
    "the group is larger than the cluster is or can grow to": (
        "Lower `num_env_runners` / `num_learners` (or the Tune trials run at once: "
        "`max_concurrent_trials`) to what the cluster can hold, or raise the autoscaler's "
        "max_workers; the whole group waits until every bundle has a place."),
    "the strategy keeps the group from fitting": (
        "Use the strategy PACK (RLlib's default) instead of {strategy}, or ask for "
        "bundles a single node can hold."),
    "it is placeable only after a scale-up": (
        "Nothing to change if waiting for the new nodes is expected; to start at once, "
        "lower `num_env_runners` / `num_learners` to fit the nodes there are now, or keep "
        "min_workers of {types} up."),
    "it is placeable only once what runs now ends": (
        "The cluster holds it once the jobs that use {busy} end (`ray list actors` / "
        "`rldoctor check` name them); submit after them, or lower the demand."),
}


def _pack(bundles: list[dict], bins: list[dict], strategy: str) -> list[dict] | None:
    """First fit of the bundles (largest first) into copies of `bins`; the bins left, or None."""
    left = [dict(b) for b in bins]
    if strategy == "STRICT_PACK":
        total: dict = {}
        for b in bundles:
            for k, v in b.items():
                total[k] = total.get(k, 0.0) + v
        bundles = [total]
    used: set[int] = set()
    for b in sorted(bundles, key=lambda s: -sum(s.values())):
        for i, room in enumerate(left):
            if strategy == "STRICT_SPREAD" and i in used:
                continue
            if fits(b, room):
                for k, v in b.items():
                    room[k] = room.get(k, 0.0) - v
                used.add(i)
                break
        else:
            return None
    return left


def _scale_up(bundles: list[dict], bins: list[dict], scaler: dict, strategy: str):
    """Node types to add (name -> count) for the bundles to fit, within the maxima; or None."""
    types = worker_types(scaler)
    room = {t["name"]: (t["max_workers"] - launched(scaler, t)) if t.get("max_workers") is not None
            else 10**6 for t in types}
    config = scaler.get("config") or {}
    global_max = config.get("max_workers")
    total_room = (global_max - sum(launched(scaler, t) for t in types)) if global_max is not None else 10**6
    added: dict[str, int] = {}
    pool = [dict(b) for b in bins]
    for _ in range(64):
        if _pack(bundles, pool, strategy) is not None:
            return added
        if sum(added.values()) >= total_room:
            return None
        # the largest bundle that fits nowhere decides the type to add
        for b in sorted(bundles, key=lambda s: -sum(s.values())):
            if not any(fits(b, p) for p in pool):
                want = b
                break
        else:
            want = max(bundles, key=lambda s: sum(s.values()))
        fitting = [t for t in types if room[t["name"]] > added.get(t["name"], 0)
                   and fits(want, shape(t["resources"]))]
        if not fitting:
            return None
        chosen = fitting[0]
        added[chosen["name"]] = added.get(chosen["name"], 0) + 1
        pool.append(shape(chosen["resources"]))
    return None


def _roles(demand: dict) -> list[tuple[str, dict]]:
    one = [(b.get("role") or "bundle", shape(b.get("resources"))) for b in demand.get("bundles") or []]
    one = [(r, b) for r, b in one if any(v > 0 for v in b.values())]
    return one * max(1, int(demand.get("trials") or 1))


def _bundles(demand: dict) -> list[dict]:
    return [b for _, b in _roles(demand)]


def _what(demand: dict) -> str:
    parts = []
    for role in ("main process", "env runner", "evaluation env runner", "learner"):
        mine = [b for b in demand.get("bundles") or [] if b.get("role") == role]
        if mine:
            count = f"{len(mine)} " if len(mine) > 1 or role != "main process" else ""
            parts.append(f"{count}{role}{'s' if len(mine) > 1 else ''} "
                         f"{{{show(shape(mine[0]['resources']))}}}")
    trials = int(demand.get("trials") or 1)
    return ", ".join(parts) + (f", for each of {trials} Tune trials" if trials > 1 else "")


@check("RLD901", "demand-exceeds-capacity", area="preflight", lifecycle="preview", requires=("preflight", "nodes"),
       fixes=CAPACITY_FIXES)
def demand_exceeds_capacity(snap, params):
    """A training whose env runners, learners or Tune trials the cluster cannot place, now or ever.

    Symptom:
        The training never starts: `Warning: The following resource request cannot be
        scheduled right now: {'CPU': 1.0}` repeats forever, `Algorithm.from_checkpoint()` or
        `tuner.fit()` hangs without an error, or a trial stays PENDING.

    Cause:
        RLlib asks for one placement group: a bundle for the main process, one per env runner
        and one per learner, each with its CPUs, GPUs and custom resources. It waits until
        every bundle has a place. A bundle larger than every node never gets one, even when the
        cluster's total would hold it; a group larger than the cluster gets one only if the
        autoscaler can add nodes of a type that fits, within its max_workers.
    """
    demand = plan(snap).get("demand") or {}
    bundles = _bundles(demand)
    if not bundles:
        return
    strategy = demand.get("strategy") or "PACK"
    alive = snap.alive_nodes
    free = [shape(n.get("resources_available")) for n in alive]
    total = [shape(n.get("resources_total")) for n in alive]
    what = _what(demand)
    evidence = {"demand": what, "strategy": strategy,
                "nodes": {n["node_id"][:8]: show(shape(n.get("resources_total"))) for n in alive}}
    if _pack(bundles, free, strategy) is not None:
        return
    if _pack(bundles, total, strategy) is not None:
        busy = _in_use(total, free)
        yield warn("cluster", f"placeable only once what runs now ends: {what} fits the nodes' "
                   f"totals, not what is free now ({{{show(busy)}}} in use)",
                   {**evidence, "in_use": busy},
                   CAPACITY_FIXES["it is placeable only once what runs now ends"].format(busy=show(busy)))
        return
    scaler = autoscaler(snap)
    if scaler and scaler.get("running") and worker_types(scaler):
        added = _scale_up(bundles, total, scaler, strategy)
        if added:
            types = ", ".join(f"{n} x {t}" for t, n in added.items())
            yield warn("cluster", f"placeable only after scale-up: {what} needs {types} more "
                       "node(s) from the autoscaler before it starts",
                       {**evidence, "scale_up": added},
                       CAPACITY_FIXES["it is placeable only after a scale-up"].format(types=", ".join(added)))
            return
    yield from _never_placeable(demand, bundles, total, scaler, evidence, strategy, len(alive))


def _in_use(total: list[dict], free: list[dict]) -> dict:
    """What the nodes hold now: their totals less what is free, summed."""
    busy: dict = {}
    for t, f in zip(total, free):
        for k, v in t.items():
            if v - f.get(k, 0.0) > 1e-9:
                busy[k] = busy.get(k, 0.0) + v - f.get(k, 0.0)
    return busy


def _summed(shapes) -> dict:
    summed: dict = {}
    for one in shapes:
        for k, v in one.items():
            summed[k] = summed.get(k, 0.0) + v
    return summed


def _never_placeable(demand, bundles, total, scaler, evidence, strategy, node_count):
    """The fail of a demand that neither fits now, once jobs end, nor after a scale-up."""
    what = evidence["demand"]
    offers = total + ([shape(t["resources"]) for t in worker_types(scaler)]
                      if scaler and scaler.get("running") else [])
    for role, b in _roles(demand):
        if not any(fits(b, o) for o in offers):
            largest = max(offers, key=lambda o: sum(o.get(k, 0.0) for k in b), default={})
            short = missing(b, largest)
            yield fail("cluster", f"never placeable: one {role} asks for {{{show(b)}}} and no node "
                       f"{'or node type ' if scaler and scaler.get('running') else ''}offers it "
                       f"(the largest: {{{show(largest)}}})", {**evidence, "short": short},
                       CAPACITY_FIXES["one bundle is larger than every node (and node type)"].format(
                           role=role, short=show(short)))
            return
    if strategy in ("STRICT_PACK", "STRICT_SPREAD"):
        yield fail("cluster", f"never placeable with {strategy}: {what} does not fit as that "
                   f"strategy asks on {node_count} node(s)", evidence,
                   CAPACITY_FIXES["the strategy keeps the group from fitting"].format(strategy=strategy))
        return
    need, have = _summed(bundles), _summed(total)
    scaling = scaler and scaler.get("running")
    yield fail("cluster", f"never placeable: {what} asks for {{{show(need)}}} in all; the cluster "
               f"has {{{show(have)}}}"
               + (f" and the autoscaler cannot add enough ({_maxima(scaler)})" if scaling else
                  " and no autoscaler adds nodes"),
               {**evidence, "asks": need, "has": have,
                **({"max_workers": _max_workers(scaler)} if scaling else {})},
               CAPACITY_FIXES["the group is larger than the cluster is or can grow to"].format())


def _max_workers(scaler: dict) -> dict:
    """Each worker node type's max_workers (None: no max of its own), and the cluster's."""
    types = {t["name"]: t.get("max_workers") for t in worker_types(scaler)}
    return {"node_types": types, "cluster": dig(scaler, "config", "max_workers")}


def _maxima(scaler: dict) -> str:
    """What the autoscaler can ever have: 'max_workers 4; cpu_worker at most 2 x {CPU: 1}'."""
    parts = [f"{t['name']} at most "
             f"{t['max_workers'] if t.get('max_workers') is not None else 'unbounded'} x "
             f"{{{show(shape(t['resources']))}}}" for t in worker_types(scaler)]
    cluster = dig(scaler, "config", "max_workers")
    return "; ".join(([f"max_workers {cluster}"] if cluster is not None else []) + parts)
