"""Object store pressure, spilling, host memory and /dev/shm: RLD301, RLD302, RLD303, RLD304.

A common troubleshooting table's fix for restarting workers ("raise object_store_memory")
is right exactly when these checks find the object store full, and wrong otherwise.
"""

from __future__ import annotations

from rldoctor.checks._resources import kill_threshold_in_force
from rldoctor.checks import _loglines
from rldoctor.registry import check, fail, info, warn
from rldoctor.snapshot import dig
from rldoctor.words import size

MiB = 2**20
GiB = 2**30


def _mib(value) -> str:
    return size(value or 0, "MiB")


def _gib(value) -> str:
    return size(value or 0, "GiB")


def _where(snap, node_id: str) -> str:
    return snap.label(node_id)


def _owner_label(owner: dict, actors: dict) -> str:
    actor = actors.get(owner.get("actor_id") or "")
    who = f"actor {actor['class_name']}" if actor else (
        f"actor {owner['actor_id'][:12]}" if owner.get("actor_id") else "a task or driver")
    return f"{who}, pid {owner['pid']}: {owner['num_owned_objects']} objects"


STORE_FIXES = {"the object store is nearly full": (
    "Find what holds the objects: the evidence lists the top owners; `ray memory "
    "--group-by STACK_TRACE --sort-by OBJECT_SIZE` shows where each was created. Then, by "
    "case: leaked ObjectRefs (refs kept in a list, a dict of futures never drained) must be "
    "dropped; too much in flight in RLlib means lowering "
    "`env_runners(max_requests_in_flight_per_env_runner=...)` or the batch sizes "
    "(train_batch_size_per_learner, rollout_fragment_length); genuinely large working sets "
    "need a bigger store: this is the case where the common advice \"raise "
    "object_store_memory\" is right: raise "
    "`--object-store-memory` on `ray start` (default 30% of RAM) and keep /dev/shm at least "
    "that big (Docker: `--shm-size`)."
)}


@check("RLD301", "object-store-pressure", area="memory", requires=("object_store|logged_store_faults",),
       params={"warn_fraction": 0.70, "fail_fraction": 0.90}, fixes=STORE_FIXES)
@_loglines.also("RLD301", needs=("object_store",))
def object_store_pressure(snap, params):
    """Object store use high on a node.

    Symptom:
        `ray.exceptions.ObjectStoreFullError: Failed to put object ... in object store
        because it is full`; tasks wait in `PENDING_OBJ_STORE_MEM_AVAIL`; RLlib's
        `sync_weights` or sampling slows down, then spilling starts (RLD302).

    Cause:
        The node's plasma store holds more than it comfortably can: ObjectRefs kept
        alive by a driver or actor, too many sample batches in flight, large weights
        broadcast every iteration, or a store sized too small for the workload.

    Advice:
        A common troubleshooting table says "workers restart often: not enough memory:
        raise object_store_memory". That is right in this case only: when the object
        store is what is full, as this check reports.
    """
    store = snap["object_store"]
    actors = {a["actor_id"]: a for a in snap.field("actors", "items") or []}
    for node_id, stats in sorted((store.get("nodes") or {}).items()):
        s = stats["store"]
        capacity = s.get("object_store_bytes_avail") or 0
        if capacity <= 0:
            continue
        used = s.get("object_store_bytes_used") or 0
        fraction = used / capacity
        if fraction < params["warn_fraction"]:
            continue
        primary = (s.get("object_store_bytes_primary_copy") or 0) / capacity
        severity = fail if fraction >= params["fail_fraction"] else warn
        owners = stats.get("top_owners") or []
        message = (f"object store on {_where(snap, node_id)} is {fraction:.0%} full: "
                   f"{_mib(used)} of {_mib(capacity)}, {s.get('num_local_objects', 0)} objects, "
                   f"{primary:.0%} primary copies that cannot be evicted")
        if owners:
            message += f"; top owner: {_owner_label(owners[0], actors)}"
        yield severity(f"node:{node_id}", message, {
            "node_id": node_id, "used_bytes": used, "capacity_bytes": capacity,
            "used_fraction": round(fraction, 4), "primary_copy_fraction": round(primary, 4),
            "num_objects": s.get("num_local_objects"),
            "fallback_bytes": s.get("object_store_bytes_fallback"),
            "top_owners": [dict(o, label=_owner_label(o, actors)) for o in owners],
            "thresholds": {"warn": params["warn_fraction"], "fail": params["fail_fraction"]}},
            STORE_FIXES["the object store is nearly full"].format())


SPILL_FIXES = {"objects were spilled to disk": (
    "Spilling keeps a full object store working by writing objects to disk, at disk speed: "
    "fine now and then, a bottleneck when steady. Reduce what is in the store (see RLD301's "
    "fix: leaked refs, max_requests_in_flight_per_env_runner, batch sizes) or give the store "
    "more memory (`ray start --object-store-memory`). Spill to a large, fast disk with "
    "`ray start --object-spilling-directory /mnt/fast-disk` (Ray's default is the session dir "
    "under /tmp); past local_fs_capacity_threshold (95% full) object creation fails with "
    "OutOfDiskError."
)}


@check("RLD302", "object-spilling", area="memory", requires=("object_store|logged_store_faults",),
       params={"disk_fail_fraction": 0.95}, fixes=SPILL_FIXES)
@_loglines.also("RLD302", needs=("object_store",))
def object_spilling(snap, params):
    """Objects spilled to disk.

    Symptom:
        Iterations slow down; raylet logs "Spilled N MiB, M objects, write throughput ..."
        or `ray memory --stats-only` shows "Spilled"; later `OutOfDiskError` or
        "... is over 95% full ... Object creation will fail if spilling is required".

    Cause:
        The object store filled up (RLD301) and Ray moved primary copies to disk to make
        room. Every spilled object is written and later read back from disk.
    """
    for node_id, stats in sorted((snap["object_store"].get("nodes") or {}).items()):
        s = stats["store"]
        spilled = s.get("spilled_bytes_total") or 0
        if spilled <= 0:
            continue
        raylet = snap.host(node_id).get("raylet") or {}
        spill_dir = raylet.get("spill_directory")
        total, free = raylet.get("spill_directory_total_bytes"), raylet.get("spill_directory_free_bytes")
        disk_used = (1 - free / total) if total and free is not None else None
        severity = fail if disk_used is not None and disk_used >= params["disk_fail_fraction"] else warn
        seconds = s.get("spill_time_total_s") or 0
        rate = f", {spilled / MiB / seconds:.0f} MiB/s" if seconds > 0 else ""
        message = (f"{_where(snap, node_id)} spilled {_mib(spilled)} "
                   f"({s.get('spilled_objects_total', 0)} objects{rate}) to "
                   f"{spill_dir or 'disk'}")
        if disk_used is not None:
            message += f", whose disk is {disk_used:.0%} full ({_gib(free)} free)"
        yield severity(f"node:{node_id}", message, {
            "node_id": node_id, "spilled_bytes": spilled,
            "spilled_objects": s.get("spilled_objects_total"),
            "restored_bytes": s.get("restored_bytes_total"),
            "spill_time_s": seconds, "spill_directory": spill_dir,
            "spill_directory_is_default": raylet.get("spill_directory_is_default"),
            "spill_disk_free_bytes": free, "spill_disk_total_bytes": total},
            SPILL_FIXES["objects were spilled to disk"].format())


MEMORY_FIXES = {"the node's memory is near Ray's kill threshold": (
    "The node is close to the point where Ray's memory monitor kills workers (RLD402). Cut "
    "heap use per node: fewer env runners per node (lower num_env_runners or raise "
    "num_cpus_per_env_runner), smaller batches and fewer envs per runner, or more RAM. Look "
    "at what uses it (`ray logs raylet.out` lists the top memory users at each kill; `ps` "
    "on the host). The object store's memory counts too: do not raise object_store_memory "
    "to fix this."
), "the node runs in a memory-limited cgroup (in addition to the above)": (
    "This node runs in a memory-limited cgroup (a container, a pod, a systemd slice): its "
    "limit, not the host's RAM, is what it may use, so raising the limit works too (Docker "
    "`--memory`, Kubernetes `resources.limits.memory`, the group's memory.max or "
    "memory.limit_in_bytes)."
)}


def _memory_in_force(host: dict) -> dict | None:
    """The tighter of the host's RAM and the raylet's cgroup limit (`hosts[n].memory_limit`,
    absent from older snapshots), as {judged, used, total, used_bytes, source}."""
    total, available = host.get("mem_total_bytes"), host.get("mem_available_bytes")
    candidates = []
    if total and available is not None:
        candidates.append({"judged": "host", "used": 1 - available / total, "total": total,
                           "used_bytes": total - available, "source": "host MemTotal"})
    limit = host.get("memory_limit") or {}
    if limit.get("kind") == "cgroup" and limit.get("bytes") and limit.get("used_bytes") is not None:
        candidates.append({"judged": "cgroup", "used": limit["used_bytes"] / limit["bytes"],
                           "total": limit["bytes"], "used_bytes": limit["used_bytes"],
                           "source": limit.get("source") or "a cgroup limit"})
    return max(candidates, key=lambda c: c["used"], default=None)


@check("RLD303", "node-memory-pressure", area="memory", requires=("hosts",),
       params={"warn_margin": 0.10, "fail_margin": 0.03}, fixes=MEMORY_FIXES)
def node_memory_pressure(snap, params):
    """Host or container memory near Ray's OOM-kill threshold.

    Symptom:
        Workers start dying with `OutOfMemoryError` (RLD402) or vanish (kernel OOM,
        RLD403); the node swaps or slows down; `ray status` shows memory near the limit.

    Cause:
        The processes on the node (env runners, learners, their batches, the object
        store, Ray's own daemons) use nearly all the memory the node may use: the host's
        RAM or, in a container, the memory limit of the raylet's cgroup (v1
        memory.limit_in_bytes, v2 memory.max), whichever is tighter. Ray's memory monitor
        kills workers once use passes `RAY_memory_usage_threshold` (default 0.95) of the
        node's memory; in a cgroup that it does not see, the kernel kills at the limit.
        Warned within 10 points of the threshold, failed within 3 (settable).
    """
    for node_id, host in sorted((snap["hosts"] or {}).items()):
        memory = _memory_in_force(host)
        if memory is None:
            continue
        used, total, used_bytes = memory["used"], memory["total"], memory["used_bytes"]
        threshold, source = kill_threshold_in_force(host)
        margin = threshold - used
        if margin > params["warn_margin"]:
            continue
        severity = fail if margin <= params["fail_margin"] else warn
        state = "above" if margin < 0 else f"within {margin * 100:.1f} points of"
        evidence = {"node_id": node_id, "used_fraction": round(used, 4),
                    "kill_threshold": threshold, "threshold_source": source, "mem_total_bytes": host.get("mem_total_bytes"),
                    "mem_available_bytes": host.get("mem_available_bytes"),
                    "judged_against": memory["judged"], "limit_source": memory["source"],
                    "memory_limit_bytes": total, "memory_used_bytes": used_bytes,
                    "margins": {"warn": params["warn_margin"], "fail": params["fail_margin"]}}
        said = {"where": _where(snap, node_id), "used": used * 100, "used_bytes": _gib(used_bytes),
                "total": _gib(total), "state": state, "threshold": threshold * 100, "source": source}
        if memory["judged"] == "host":
            yield severity(f"node:{node_id}", _HOST_PRESSURE.format(**said), evidence, _memory_fix(memory))
        else:
            yield severity(f"node:{node_id}", _cgroup_pressure(host, memory, said, evidence), evidence,
                           _memory_fix(memory))


# RLD303's message, as data: the host's memory, or the raylet cgroup's with what else is known.
_HOST_PRESSURE = ("host memory on {where} is {used:.1f}% used ({used_bytes} of {total}), {state} "
                  "the kill threshold {threshold:.1f}% ({source})")
_CGROUP_PRESSURE = ("memory on {where} is {used:.1f}% used ({used_bytes} of {total}, the memory "
                    "limit of its raylet's cgroup: {limit_source}), {state} the kill threshold "
                    "{threshold:.1f}% ({source})")
_HOST_ITSELF = "; the host itself is {host_used:.0f}% used"
_MONITOR_BLIND = ("; Ray's memory monitor reads {reads}, not this cgroup, so it will not act "
                  "before the kernel's OOM killer does at the limit: workers vanish with SIGKILL "
                  "(RLD403) instead of an OutOfMemoryError")


def _memory_fix(memory: dict) -> str:
    """RLD303's fix: the node's memory, and a cgroup's limit where that is what it is judged by."""
    fix = MEMORY_FIXES["the node's memory is near Ray's kill threshold"].format()
    if memory["judged"] == "cgroup":
        fix += " " + MEMORY_FIXES[
            "the node runs in a memory-limited cgroup (in addition to the above)"].format()
    return fix


def _cgroup_pressure(host: dict, memory: dict, said: dict, evidence: dict) -> str:
    """RLD303's message on a node judged by its raylet's cgroup; adds the limit and the host's
    own use to `evidence`."""
    limit = host["memory_limit"]
    host_total, host_free = host.get("mem_total_bytes"), host.get("mem_available_bytes")
    host_used = 1 - host_free / host_total if host_total and host_free is not None else None
    evidence.update(memory_limit=limit, host_used_fraction=(
        round(host_used, 4) if host_used is not None else None))
    message = _CGROUP_PRESSURE.format(**said, limit_source=memory["source"])
    if host_used is not None:
        message += _HOST_ITSELF.format(host_used=host_used * 100)
    if limit.get("ray_monitor_sees_limit") is False:
        message += _MONITOR_BLIND.format(reads=limit.get("ray_monitor_reads"))
    return message


SHM_FIXES = {"the object store is not in shared memory or does not fit it": (
    "Give the object store shared memory: on Docker run with `--shm-size` at least the "
    "object store size (Ray's default store is 30% of RAM; in a Ray cluster YAML add it to "
    "`docker.run_options`); on Kubernetes mount an `emptyDir: {{medium: Memory}}` at /dev/shm "
    "(KubeRay does this for you when you set it in the pod template). Or shrink the store "
    "with `ray start --object-store-memory` to fit /dev/shm. A store on disk "
    "(RAY_OBJECT_STORE_ALLOW_SLOW_STORAGE) works, slowly."
)}


def _shm_fix() -> str:
    return SHM_FIXES["the object store is not in shared memory or does not fit it"].format()


@check("RLD304", "shm-too-small", area="memory", requires=("hosts",), fixes=SHM_FIXES)
def shm_too_small(snap, params):
    """Object store not on /dev/shm, or /dev/shm smaller than the configured object store.

    Symptom:
        Ray warned at start "The object store is using /tmp instead of /dev/shm because
        /dev/shm has only N bytes available. This will harm performance!"; object
        transfers and `ray.get` are slow; the store overflows into disk-backed memory.

    Cause:
        Containers get a 64 MB /dev/shm by default. When it is smaller than the object
        store, Ray puts the store on disk (/tmp) instead; a store placed elsewhere by
        `--plasma-directory` is on disk too.
    """
    for node_id, host in sorted((snap["hosts"] or {}).items()):
        raylet = host.get("raylet") or {}
        plasma = raylet.get("plasma_directory")
        size = raylet.get("object_store_memory")
        shm_total = host.get("shm_total_bytes")
        fallback = dig(snap.store(node_id), "store", "object_store_bytes_fallback") or 0
        evidence = {"node_id": node_id, "plasma_directory": plasma, "object_store_bytes": size,
                    "shm_total_bytes": shm_total, "shm_free_bytes": host.get("shm_free_bytes"),
                    "fallback_bytes_in_use": fallback}
        if plasma and not plasma.startswith("/dev/shm"):
            yield warn(f"node:{node_id}",
                       f"object store on {_where(snap, node_id)} lives in {plasma}, not /dev/shm: "
                       f"every object is disk-backed"
                       + (f" (/dev/shm is {_mib(shm_total)}, the store {_mib(size)})"
                          if shm_total and size else ""),
                       evidence, _shm_fix())
        elif shm_total is not None and size and shm_total < size:
            yield fail(f"node:{node_id}",
                       f"/dev/shm on {_where(snap, node_id)} is {_mib(shm_total)}, smaller than "
                       f"the {_mib(size)} object store placed on it",
                       evidence, _shm_fix())
        elif fallback > 0:
            yield info(f"node:{node_id}",
                       f"object store on {_where(snap, node_id)} overflowed {_mib(fallback)} "
                       "into disk-backed fallback memory", evidence, _shm_fix())
