"""The node-side host facts of memory: MemTotal and MemAvailable, the raylet's cgroup limit
(the one Ray's memory monitor reads), the kernel's OOM kills (counters and /dev/kmsg), the
memory monitor's settings, /dev/shm and the raylet's object store flags: the host keys
hostname, mem_*, memory_limit, *_oom_kills, memory_monitor, shm_*, raylet, kernel_oom_log.
Standard library only, read from /proc and /sys.
"""

from __future__ import annotations

from rldoctor.node.fact_disks import disk_of, raylet_settings
from rldoctor.node.facts import fact
from rldoctor.node.processes import raylet_pid

# Settings of Ray's memory monitor, read from the environment the raylet gave its workers.
MEMORY_MONITOR_ENV = ("RAY_memory_usage_threshold", "RAY_memory_monitor_refresh_ms",
                      "RAY_min_memory_free_bytes")


def memory_here() -> dict:
    """The node's memory and the limit that applies to its raylet's processes, read the one
    way rldoctor reads them (`host_here` for the snapshot, the bundle's host.json)."""
    total = available = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemAvailable") and rest.split():
                    value = int(rest.split()[0]) * 1024
                    total, available = (value, available) if key == "MemTotal" else (total, value)
    except (OSError, ValueError):
        pass
    return {"mem_total_bytes": total, "mem_available_bytes": available,
            "memory_limit": memory_limit_of(raylet_pid(), total, available)}


@fact("memory", spread=True)
def host_here() -> dict:
    """Memory and OOM-killer facts of the host (or container) this runs on."""
    import os
    import socket

    def read_keyed(path, sep=None):
        out = {}
        try:
            with open(path) as f:
                for line in f:
                    parts = line.replace(":", " ").split() if sep is None else line.split(sep)
                    if len(parts) >= 2:
                        out[parts[0]] = parts[1]
        except OSError:
            pass
        return out

    vmstat = read_keyed("/proc/vmstat")
    cgroup_events = read_keyed("/sys/fs/cgroup/memory.events")
    host = {
        "hostname": socket.gethostname(),
        **memory_here(),  # MemTotal, MemAvailable and the raylet's memory limit
        "kernel_oom_kills": int(vmstat["oom_kill"]) if "oom_kill" in vmstat else None,
        "cgroup_oom_kills": (int(cgroup_events["oom_kill"])
                             if "oom_kill" in cgroup_events else None),
        "memory_monitor": {k: os.environ.get(k) for k in MEMORY_MONITOR_ENV},
    }
    host["shm_total_bytes"], host["shm_free_bytes"] = disk_of("/dev/shm")
    host["raylet"] = raylet_settings()
    for key in ("plasma_directory", "fallback_directory", "spill_directory"):
        path = host["raylet"].get(key)
        if path:
            total, free = disk_of(path)
            host["raylet"][f"{key}_total_bytes"] = total
            host["raylet"][f"{key}_free_bytes"] = free
    host["kernel_oom_log"] = kernel_oom_kills_here()
    return host


KERNEL_LOG_KILLS_KEPT = 200


def kernel_oom_kills_here() -> dict:
    """The kernel's own record of its OOM kills on this host, read from /dev/kmsg.

    {"readable": True, "kills": [{"pid", "name", "memcg", "at"}...]} (the newest
    KERNEL_LOG_KILLS_KEPT, `at` in epoch seconds), or {"readable": False, "error"} when
    the log is not readable here (kernel.dmesg_restrict, a container without it). It
    names the pids the kernel killed, so a worker that vanished can be matched to a
    kernel OOM kill instead of guessed from a counter that counts since boot.
    """
    import os
    import re

    killed = re.compile(r"Killed process (\d+) \(([^)]*)\)")
    memcg = re.compile(r"oom-kill:.*task_memcg=([^,]*),.*pid=(\d+)")
    try:
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime"))
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, StopIteration, ValueError) as exc:
        return {"readable": False, "error": f"{type(exc).__name__}: {exc}"[:200]}
    kills, groups = [], {}
    try:
        for _ in range(100_000):  # the ring buffer is bounded; so is this loop
            try:
                record = os.read(fd, 8192).decode("utf-8", errors="replace")
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == 32:  # EPIPE: the record was overwritten while read
                    continue
                return {"readable": False, "error": f"{type(exc).__name__}: {exc}"[:200]}
            head, _, message = record.partition(";")
            group = memcg.search(message)
            if group:
                groups[int(group.group(2))] = group.group(1)
            match = killed.search(message)
            if match:
                fields = head.split(",")
                at = boot + int(fields[2]) / 1e6 if len(fields) > 2 and fields[2].isdigit() else None
                kills.append({"pid": int(match.group(1)), "name": match.group(2), "at": at})
    finally:
        os.close(fd)
    for kill in kills:
        kill["memcg"] = groups.get(kill["pid"])
    return {"readable": True, "kills": kills[-KERNEL_LOG_KILLS_KEPT:]}


# Where Ray's memory monitor reads a container's memory (the raylet's C++ monitor and its
# Python twin ray._private.utils.get_cgroup_mem_stats): fixed paths at the mount root.
RAY_MONITOR_CGROUP_DIRS = {1: "/sys/fs/cgroup/memory", 2: "/sys/fs/cgroup"}
_CGROUP_FILES = {1: ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file",
                     "total_active_file"),
                 2: ("memory.max", "memory.current", "inactive_file", "active_file")}


def _cgroup_of(pid: int):
    """(version, directory) of `pid`'s memory cgroup as mounted here, or (None, None).

    /proc/PID/cgroup names the group inside its hierarchy; /proc/self/mountinfo says where
    that hierarchy is mounted and which part of it (a container sees only its own subtree).
    """
    import os

    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None, None
    paths = {}
    for parts in lines:
        if len(parts) == 3 and "memory" in parts[1].split(","):
            paths[1] = parts[2]
        elif len(parts) == 3 and parts[0] == "0" and parts[1] == "":
            paths[2] = parts[2]
    for version in (1, 2):
        if version not in paths:
            continue
        for fields in mounts:
            if "-" not in fields:
                continue
            dash = fields.index("-")
            fstype, options = fields[dash + 1], (fields[dash + 3] if len(fields) > dash + 3 else "")
            if (version == 1 and fstype == "cgroup" and "memory" in options.split(",")) or (
                    version == 2 and fstype == "cgroup2"):
                root, point, path = fields[3], fields[4], paths[version]
                relative = path[len(root):] if root != "/" and path.startswith(root) else path
                where = os.path.normpath(point + "/" + relative.lstrip("/"))
                if not os.path.isdir(where):  # a cgroup namespace: the mount is the group
                    where = point
                usage_file = _CGROUP_FILES[version][1]
                if os.path.exists(os.path.join(where, usage_file)):
                    return version, where
    return None, None


def _read_int(path: str):
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # v2 writes "max" for no limit


def _keyed_ints(path: str) -> dict:
    """`key value` lines (memory.stat, memory.events, memory.oom_control) as {key: int}."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if value.strip().isdigit():
                    out[key] = int(value)
    except OSError:
        pass
    return out


def memory_limit_of(pid: int, mem_total, mem_available) -> dict:
    """The memory the processes of `pid`'s cgroup may use, and how much of it they use.

    The tightest limit on the way from `pid`'s own memory cgroup (v1 memory.limit_in_bytes,
    v2 memory.max) up to the top of the mounted hierarchy; a limit at or above the host's
    RAM is no limit (Ray caps it there too). Used is the group's usage minus its page cache
    (active_file + inactive_file), the figure Ray's memory monitor uses. Without a limit:
    the host's MemTotal and MemTotal - MemAvailable. Never raises.
    """
    import os

    host_used = mem_total - mem_available if mem_total and mem_available is not None else None
    found = {"bytes": mem_total, "used_bytes": host_used, "source": "host MemTotal",
             "kind": "host", "pid": pid}
    try:
        version, where = _cgroup_of(pid)
        if version is None:
            return found
        limit_file, usage_file, inactive, active = _CGROUP_FILES[version]
        found.update(cgroup_version=version, cgroup_path=where)
        best, best_dir = None, None
        directory = where
        for _ in range(64):  # up to the top of the hierarchy as mounted here
            limit = _read_int(os.path.join(directory, limit_file))
            if limit is not None and (best is None or limit < best):
                best, best_dir = limit, directory
            parent = os.path.dirname(directory)
            if parent == directory or not os.path.exists(os.path.join(parent, usage_file)):
                break
            directory = parent
        stat = _keyed_ints(os.path.join(where, "memory.stat"))
        hierarchical = stat.get("hierarchical_memory_limit") if version == 1 else None
        source = f"cgroup v{version} {limit_file} at {best_dir}"
        if hierarchical is not None and (best is None or hierarchical < best):
            best, best_dir = hierarchical, where  # set above the part of the tree we see
            source = f"cgroup v1 hierarchical_memory_limit at {where}"
        if best is None or not mem_total or best >= mem_total:
            return found
        stat = _keyed_ints(os.path.join(best_dir, "memory.stat"))
        usage = _read_int(os.path.join(best_dir, usage_file))
        if usage is None:
            return found
        cache = stat.get(inactive, 0) + stat.get(active, 0)
        events = _keyed_ints(os.path.join(
            best_dir, "memory.oom_control" if version == 1 else "memory.events"))
        ray_dir = RAY_MONITOR_CGROUP_DIRS[version]
        found.update(bytes=best, used_bytes=max(0, usage - cache), source=source, kind="cgroup",
                     limit_path=best_dir, usage_bytes=usage, page_cache_bytes=cache,
                     oom_kills=events.get("oom_kill"), ray_monitor_reads=ray_dir,
                     ray_monitor_sees_limit=(os.path.normpath(best_dir) == ray_dir
                                             and "hierarchical" not in source))
    except Exception as exc:  # host facts must come back whatever the cgroup files hold
        found["error"] = f"{type(exc).__name__}: {exc}"[:200]
    return found
