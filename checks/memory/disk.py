"""A node's temp, log and spill file systems against Ray's local_fs_capacity_threshold: RLD305."""

from __future__ import annotations

from rldoctor.checks import _loglines
from rldoctor.registry import check, fail, warn
from rldoctor.snapshot import dig
from rldoctor.words import size

RAY_DEFAULT_THRESHOLD = 0.95  # RayConfig local_fs_capacity_threshold
_ROLE_WORDS = {"temp_dir": "temp dir", "session_dir": "session dir", "log_dir": "logs",
               "spill_directory": "spill dir", "fallback_directory": "object store fallback",
               "plasma_directory": "object store"}


def _size(value) -> str:
    return size(value or 0)


def threshold_of(snap, node_id: str, disk: dict) -> tuple[float, str]:
    """(threshold, where it came from): the cluster's _system_config as the node's raylet gave
    it, else RAY_local_fs_capacity_threshold in the node's environment, else Ray's default."""
    ping = snap.raylet_ping(node_id)
    config = dig(ping, "system_config", "local_fs_capacity_threshold")
    if isinstance(config, (int, float)):
        return float(config), "_system_config (from the node's raylet)"
    try:
        if disk.get("threshold_env"):
            return float(disk["threshold_env"]), "RAY_local_fs_capacity_threshold on the node"
    except ValueError:
        pass
    return RAY_DEFAULT_THRESHOLD, "Ray's default"


def _what_fills(contents: dict) -> list[str]:
    parts = []
    for entry in contents.get("temp_dir_entries") or []:
        kind = entry.get("kind") or ("dir" if entry.get("dir") else "file")
        more = "" if entry.get("complete", True) else " (at least: counted in bounded time)"
        parts.append(f"{entry['name']} ({kind}) {_size(entry['bytes'])}{more}")
    logs = contents.get("largest_logs") or []
    if logs:
        parts.append("largest logs: " + ", ".join(f"{e['name']} {_size(e['bytes'])}" for e in logs[:3]))
    spilled = contents.get("spilled") or {}
    if spilled.get("bytes"):
        parts.append(f"spilled objects {_size(spilled['bytes'])} in {spilled['files']} file(s)")
    return parts


_OLD_SESSIONS = "old session dirs of earlier runs are on it"
DISK_FIXES = {
    _OLD_SESSIONS: (
        "delete the old session dirs in {temp} ({old}): only the current session (session_latest "
        "points to it) is in use; "),
    "a file system near or over Ray's local_fs_capacity_threshold": (
        "Free space now, then move Ray's writes to a volume of their own. Safe to delete: "
        "{" + _OLD_SESSIONS + "}"
        "delete rotated logs (`*.1.out` ... and logs/old/) of the current session; bound the "
        "rest with RAY_ROTATION_MAX_BYTES and RAY_ROTATION_BACKUP_COUNT on `ray start` "
        "(gcs_server.out is not rotated by Ray: logrotate with copytruncate); spilled objects "
        "go when the ObjectRefs holding them are released (RLD302); never delete spill files "
        "of a running session by hand; stray files that are not Ray's (the largest entries "
        "above) are yours to remove. For good: start the node with `ray start "
        "--temp-dir=/mnt/big/ray` (per node) and spill elsewhere with `ray start "
        "--object-spilling-directory=/mnt/big/spill` (or `_system_config={{\"object_spilling_config\": "
        "...}}` on the head); raising `local_fs_capacity_threshold` only postpones the "
        "OutOfDiskError."),
}


def _fix(paths: dict, contents: dict) -> str:
    old = [e["name"] for e in contents.get("temp_dir_entries") or [] if e.get("kind") == "old session"]
    temp = paths.get("temp_dir") or paths.get("session_dir") or "the temp dir"
    sessions = DISK_FIXES[_OLD_SESSIONS].format(temp=temp, old=", ".join(old[:3])) if old else ""
    return DISK_FIXES["a file system near or over Ray's local_fs_capacity_threshold"].format(
        **{_OLD_SESSIONS: sessions})


def _headroom(fs: dict, threshold: float) -> int | None:
    """Bytes Ray may still write on the file system before it refuses (its own arithmetic:
    available space against capacity × (1 - threshold))."""
    total, free = fs.get("total_bytes"), fs.get("free_bytes")
    if not isinstance(total, (int, float)) or not isinstance(free, (int, float)):
        return None
    return max(0, int(free - total * (1.0 - threshold)))


def _close_enough(snap, node_id: str, headroom: int | None, params) -> tuple[bool, str]:
    """A file system within the margin of the threshold is close to it only when what is left
    is small: under the floor, or under what the node's object store could spill at once. A
    large disk at 86 % with tens of GiB to go is how many nodes run."""
    store = dig(snap.node(node_id) or {}, "resources_total", "object_store_memory") or 0
    limit = max(params["warn_headroom_bytes"], int(store))
    if headroom is None or headroom < limit:
        which = ("the node's object store, which spilling can write at once"
                 if store > params["warn_headroom_bytes"] else f"{size(params['warn_headroom_bytes'])}")
        return True, ("" if headroom is None else
                      f"; {size(headroom)} left before it, less than {which}")
    return False, ""


@check("RLD305", "disk-pressure", area="memory", requires=("hosts|logged_host_faults",),
       params={"warn_margin": 0.10, "warn_headroom_bytes": 10 * 2**30}, fixes=DISK_FIXES)
@_loglines.also("RLD305", needs=("hosts",))
def disk_pressure(snap, params):
    """A node's temp, log or spill file system near or over Ray's local_fs_capacity_threshold.

    Symptom:
        The raylet logs "... is over 95% full, available space: ...; capacity: .... Object
        creation will fail if spilling is required."; tasks fail with
        `ray.exceptions.OutOfDiskError: Local disk is full`; logs stop being written; a
        node that spills objects stalls.

    Cause:
        Ray writes everything of a node under its temp dir (/tmp/ray by default): session dirs
        of earlier runs that nobody deleted, worker and GCS logs that grow without rotation,
        objects spilled from a full object store (kept until every reference is released),
        and the object store's fallback files. Above `local_fs_capacity_threshold` (0.95 by
        default; read from the cluster, not assumed) of its file system, Ray refuses to create
        objects that would need spilling. Within 10 points of it the file system is close to full only
        when what is left before it is small too: under 10 GiB, or under the node's object
        store (spilling can write that much at once); a large disk at 86 % with tens of GiB to
        go is how many nodes run.
    """
    for node_id, host in sorted((snap["hosts"] or {}).items()):
        disk = host.get("disk") or {}
        if not disk.get("filesystems"):
            continue
        threshold, source = threshold_of(snap, node_id, disk)
        where = snap.label(node_id)
        raylet_said = snap.log_signals(node_id).get("disk_over_capacity")
        for fs in disk["filesystems"]:
            used = fs.get("used_fraction")
            if used is None or used < threshold - params["warn_margin"]:
                continue
            over = used >= threshold
            headroom = _headroom(fs, threshold)
            close, left = (True, "") if over else _close_enough(snap, node_id, headroom, params)
            if not close:
                continue
            roles = ", ".join(_ROLE_WORDS.get(r, r) for r in fs["paths"])
            first = next(iter(fs["paths"].values()))
            contents = fs.get("contents") or {}
            fills = _what_fills(contents)
            message = (f"the file system of the {roles} ({first}) on {where} is {used:.1%} full "
                       f"({_size(fs.get('free_bytes'))} free of {_size(fs.get('total_bytes'))}), "
                       + (f"over Ray's local_fs_capacity_threshold {threshold:g}: object creation "
                          "fails with OutOfDiskError when spilling is needed" if over else
                          f"close to Ray's local_fs_capacity_threshold {threshold:g}{left}")
                       + (f". What fills it: {'; '.join(fills)}" if fills else ""))
            if raylet_said:
                message += f'. The raylet says ({raylet_said["count"]}x): "{raylet_said["lines"][-1][-240:]}"'
            evidence = {"node_id": node_id, "paths": fs["paths"], "device": fs.get("device"),
                        "total_bytes": fs.get("total_bytes"), "free_bytes": fs.get("free_bytes"),
                        "used_fraction": used, "headroom_bytes": headroom, "threshold": threshold, "threshold_source": source,
                        "contents": contents, "raylet_log": raylet_said,
                        "errors": disk.get("errors") or [], "probe_status": disk.get("status")}
            yield (fail if over else warn)(f"node:{node_id}", message, evidence,
                                           _fix(fs["paths"], contents))
