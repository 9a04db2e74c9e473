"""Code that runs on the cluster's nodes.

These functions are shipped to the workers by value (see `register`), so a
production cluster needs nothing of rldoctor installed. They import only the
standard library and ray, read package versions from metadata instead of
importing torch, and read host facts from /proc and /sys.
"""

from __future__ import annotations

PROBED_PACKAGES = ("torch", "gymnasium")
# Settings of Ray's memory monitor, read from the environment the raylet gave its workers.
MEMORY_MONITOR_ENV = ("RAY_memory_usage_threshold", "RAY_memory_monitor_refresh_ms",
                      "RAY_min_memory_free_bytes")


def versions_here() -> dict:
    """Ray, Python, RLlib, torch and gymnasium versions of this process's environment."""
    import importlib.metadata as metadata
    import importlib.util
    import platform

    def version_of(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    ray_version = version_of("ray")
    try:
        has_rllib = importlib.util.find_spec("ray.rllib") is not None
    except (ImportError, ValueError):
        has_rllib = False
    found = {"ray": ray_version, "python": platform.python_version(),
             "rllib": ray_version if has_rllib else None}
    for dist in PROBED_PACKAGES:
        found[dist] = version_of(dist)
    return found


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


def raylet_pid() -> int:
    """This node's raylet (a probe's parent), or this process when it runs elsewhere."""
    import os

    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            first = f.read().split(b"\0")[0]
    except OSError:
        return os.getpid()
    return os.getppid() if first.endswith(b"raylet") else os.getpid()


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


def disk_of(path: str):
    """(total, free) bytes of the filesystem holding `path`, or (None, None)."""
    import os

    try:
        st = os.statvfs(path)
    except OSError:
        return None, None
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def spill_directory_set() -> str | None:
    """The spill directory the raylet gave its workers (RAY_object_spilling_directory, or the
    directory of RAY_object_spilling_config), or None when Ray spills to its session dir."""
    import json
    import os

    spill = os.environ.get("RAY_object_spilling_directory")
    if not spill and os.environ.get("RAY_object_spilling_config"):
        try:
            spill = json.loads(os.environ["RAY_object_spilling_config"])["params"]["directory_path"]
        except (ValueError, KeyError, TypeError):
            spill = None
    return spill or None


def raylet_settings() -> dict:
    """The object store flags of this node's raylet, read from its command line.

    A worker is a child of its node's raylet; the raylet's flags say where the
    object store lives (`--plasma_directory`: /dev/shm, or a disk when /dev/shm was
    too small) and how big it is.
    """
    import os

    settings: dict = {}
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            args = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return settings
    if not args or not args[0].endswith("raylet"):
        return settings
    for arg in args[1:]:
        key, _, value = arg.lstrip("-").partition("=")
        if key in ("plasma_directory", "fallback_directory", "session_dir"):
            settings[key] = value
        elif key == "object_store_memory":
            settings[key] = int(value)
        elif key == "huge_pages":
            settings[key] = True
    spill = spill_directory_set()
    settings["spill_directory"] = spill or settings.get("session_dir")
    settings["spill_directory_is_default"] = not spill
    return settings


# The disks under a node's Ray directories (RLD305): statvfs always; what fills one only
# when it is near full, in a walk bounded in time.
DISK_WALK_DEADLINE_S = 0.3
DISK_LOOK_CLOSER_FRACTION = 0.80
DISK_TOP_ITEMS = 5
FS_THRESHOLD_ENV = "RAY_local_fs_capacity_threshold"


def _tree_size(path: str, deadline: float) -> tuple[int, int, bool]:
    """(bytes, files, complete) under `path`, without following links; stops at `deadline`."""
    import os
    import time

    total, files, stack = 0, 0, [path]
    while stack:
        if time.monotonic() > deadline:
            return total, files, False
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_blocks * 512
                            files += 1
                    except OSError:  # gone while read (a rotated log, a freed spill file)
                        continue
        except OSError:
            continue
    return total, files, True


def _largest_entries(directory: str, deadline: float, only_files: bool = False) -> tuple[list, list]:
    """([{name, bytes, complete}...] the DISK_TOP_ITEMS largest entries of `directory`, errors)."""
    import os

    found, errors = [], []
    try:
        with os.scandir(directory) as entries:
            listed = list(entries)
    except OSError as exc:
        return [], [f"{directory}: {exc.strerror or exc}"]
    for entry in listed:
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if only_files:
                    continue
                size, files, complete = _tree_size(entry.path, deadline)
                found.append({"name": entry.name, "bytes": size, "files": files,
                              "complete": complete, "dir": True})
            else:
                found.append({"name": entry.name,
                              "bytes": entry.stat(follow_symlinks=False).st_blocks * 512,
                              "complete": True})
        except OSError as exc:
            errors.append(f"{entry.path}: {exc.strerror or exc}")
    found.sort(key=lambda e: -e["bytes"])
    return found[:DISK_TOP_ITEMS], errors[:5]


def ray_dirs_here(raylet_args: list) -> dict:
    """{role: path} of the directories this node's raylet writes: its temp dir, session dir,
    logs, spill directory and object store fallback, from its command line."""
    flags = _flags(raylet_args)
    dirs = {"temp_dir": flags.get("temp_dir"), "session_dir": flags.get("session_dir"),
            "log_dir": flags.get("log_dir"), "fallback_directory": flags.get("fallback_directory")}
    plasma = flags.get("plasma_directory")
    if plasma and not plasma.startswith("/dev/shm"):
        dirs["plasma_directory"] = plasma
    dirs["spill_directory"] = spill_directory_set() or flags.get("session_dir")
    return {role: path for role, path in dirs.items() if path}


def disk_usage_here() -> dict:
    """The file systems under this node's Ray directories, how full each is, and (near full)
    what fills them: old session dirs, the largest logs, spilled objects. Never raises.

    {"status", "threshold_env", "filesystems": [{"paths": {role: path}, "total_bytes",
    "free_bytes", "used_fraction", "device", "contents": {...}}], "errors", "duration_s"}.
    `used_fraction` is Ray's own measure: 1 - available / capacity (file_system_monitor).
    """
    import os
    import time

    started = time.monotonic()
    deadline = started + DISK_WALK_DEADLINE_S
    raylet = raylet_pid()
    args = _cmdline(raylet)
    out = {"status": "ok", "threshold_env": os.environ.get(FS_THRESHOLD_ENV), "filesystems": [],
           "errors": []}
    if not args or not args[0].endswith("raylet"):
        return {**out, "status": "unavailable", "why": "this probe is not a child of a raylet"}
    dirs = ray_dirs_here(args)
    by_device: dict = {}
    for role, path in dirs.items():
        try:
            st, device = os.statvfs(path), os.stat(path).st_dev
        except OSError as exc:
            out["errors"].append(f"{role} {path}: {exc.strerror or exc}")
            continue
        fs = by_device.get(device)
        if fs is None:
            total, free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
            fs = by_device[device] = {
                "paths": {}, "device": f"{os.major(device)}:{os.minor(device)}",
                "total_bytes": total, "free_bytes": free,
                "used_fraction": round(1 - free / total, 4) if total else None}
            out["filesystems"].append(fs)
        fs["paths"][role] = path
    for fs in out["filesystems"]:
        if (fs["used_fraction"] or 0) >= DISK_LOOK_CLOSER_FRACTION:
            fs["contents"] = _what_fills(fs["paths"], dirs, deadline, out["errors"])
    if any(not part.get("complete", True) for fs in out["filesystems"]
           for part in (fs.get("contents") or {}).get("temp_dir_entries", [])):
        out["status"] = "partial"
        out["why"] = f"sizes counted for {DISK_WALK_DEADLINE_S:g}s only (a huge directory)"
    out["errors"] = out["errors"][:10]
    out["duration_s"] = round(time.monotonic() - started, 3)
    return out


def _what_fills(paths: dict, dirs: dict, deadline: float, errors: list) -> dict:
    """The largest entries of the temp dir (session dirs among them), logs and spill files."""
    import os

    contents: dict = {}
    temp = paths.get("temp_dir")
    if temp:
        entries, errs = _largest_entries(temp, deadline)
        errors += errs
        current = os.path.basename(dirs.get("session_dir", "").rstrip("/"))
        for entry in entries:
            if entry["name"].startswith("session_") and entry.get("dir"):
                entry["kind"] = "current session" if entry["name"] == current else "old session"
        contents["temp_dir_entries"] = entries
    logs = dirs.get("log_dir")
    if logs and (set(paths) & {"temp_dir", "session_dir", "log_dir"}):
        contents["largest_logs"], errs = _largest_entries(logs, deadline, only_files=True)
        errors += errs
    spill = paths.get("spill_directory")
    if spill:
        spilled = [0, 0, True]
        try:
            names = [n for n in os.listdir(spill) if n.startswith("ray_spilled_objects")]
        except OSError as exc:
            names = []
            errors.append(f"{spill}: {exc.strerror or exc}")
        for name in names:
            size, files, complete = _tree_size(os.path.join(spill, name), deadline)
            spilled = [spilled[0] + size, spilled[1] + files, spilled[2] and complete]
        contents["spilled"] = {"bytes": spilled[0], "files": spilled[1], "complete": spilled[2]}
    return contents


# Open files of a node's Ray processes (RLD107): /proc/PID/limits against /proc/PID/fd.
OPEN_FILES_DEADLINE_S = 0.3
OPEN_FILES_WORKERS_KEPT = 10
CONTROL_PLANE_ROLES = ("gcs", "raylet")


def nofile_limit_of(pid: int) -> tuple:
    """(soft, hard) "Max open files" of `pid` (None for unlimited), or (None, None)."""
    try:
        with open(f"/proc/{pid}/limits") as f:
            for line in f:
                if line.startswith("Max open files"):
                    soft, hard = line.split()[3:5]
                    return (None if soft == "unlimited" else int(soft),
                            None if hard == "unlimited" else int(hard))
    except (OSError, ValueError):
        pass
    return None, None


def open_files_here() -> dict:
    """Each Ray process of this node (GCS on the head, raylet, agents, workers): its open-files
    limit and how many files it has open now. Never raises; a process that ends while read
    is counted as gone.

    {"status", "processes": [{"pid", "role", "name", "soft", "hard", "open"}], "workers_total",
    "workers_left_out", "gone", "duration_s"}: every control-plane process, and the
    OPEN_FILES_WORKERS_KEPT other processes nearest their limit.
    """
    import os
    import time

    started = time.monotonic()
    deadline = started + OPEN_FILES_DEADLINE_S
    raylet = _raylet_above(os.getpid())
    if not raylet:
        return {"status": "unavailable", "why": "this probe is not a descendant of a raylet",
                "processes": []}
    roles, commands, order = node_processes(raylet, _cmdline(raylet), deadline)
    rows, gone, status = [], 0, "ok"
    for pid in order:
        if time.monotonic() > deadline and roles[pid] not in CONTROL_PLANE_ROLES:
            status = "partial"
            continue
        soft, hard = nofile_limit_of(pid)
        try:
            count = len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            gone += 1  # it ended while read, or is not ours to read
            continue
        rows.append({"pid": pid, "role": roles[pid], "name": process_name(commands.get(pid) or []),
                     "soft": soft, "hard": hard, "open": count})
    control = [r for r in rows if r["role"] in CONTROL_PLANE_ROLES]
    others = sorted((r for r in rows if r["role"] not in CONTROL_PLANE_ROLES),
                    key=lambda r: -(r["open"] / r["soft"] if r["soft"] else 0))
    out = {"status": status, "processes": control + others[:OPEN_FILES_WORKERS_KEPT],
           "workers_total": sum(1 for r in rows if r["role"] == "worker"),
           "processes_total": len(rows),
           "left_out": max(0, len(others) - OPEN_FILES_WORKERS_KEPT), "gone": gone,
           "duration_s": round(time.monotonic() - started, 3)}
    if status == "partial":
        out["why"] = f"stopped reading workers after {OPEN_FILES_DEADLINE_S:g}s"
    return out


# What Ray's own logs on this node say (RLD106, RLD107, RLD404): the tails of the log files
# its raylet, GCS and runtime env agent hold open, matched against Ray's own words.
LOG_TAIL_BYTES = 256 * 1024
RAY_LOG_PATTERNS = {
    "workers_not_registered": "have not registered within the timeout",
    "no_available_ports": "No available ports",
    "too_many_open_files": "Too many open files",
    "disk_over_capacity": "Object creation will fail if spilling is required",
}
RUNTIME_ENV_FAILED = "Failed to create runtime env"
LOG_LINES_KEPT = 3


def open_files_of(pid) -> list:
    """The paths of the files process `pid` holds open, each once ([] when it is gone)."""
    import os

    found = []
    try:
        fds = os.listdir(f"/proc/{int(pid)}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{int(pid)}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("/") and link not in found:
            found.append(link)
    return found


def _open_logs_of(pid: int) -> list:
    """The .out/.log/.err files process `pid` holds open (its own logs)."""
    return [path for path in open_files_of(pid) if path.endswith((".out", ".log", ".err"))]


def tail_of(path: str, max_bytes: int = LOG_TAIL_BYTES) -> tuple:
    """(the last `max_bytes` of a file as text, None) or ("", why it could not be read).
    A file that rotates or shrinks while read gives what was there."""
    import os

    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - max_bytes))
            data = f.read(max_bytes)
    except OSError as exc:
        return "", f"{os.path.basename(path)}: {exc.strerror or exc}"
    text = data.decode("utf-8", errors="replace")
    if size > max_bytes:  # the first line was cut
        text = text.partition("\n")[2]
    return text, None


def log_signals(text: str) -> dict:
    """{signal: {"count", "lines": the last LOG_LINES_KEPT lines}} of RAY_LOG_PATTERNS in `text`."""
    found: dict = {}
    for line in text.splitlines():
        for key, words in RAY_LOG_PATTERNS.items():
            if words in line:
                entry = found.setdefault(key, {"count": 0, "lines": []})
                entry["count"] += 1
                entry["lines"] = (entry["lines"] + [line.strip()[:400]])[-LOG_LINES_KEPT:]
    return found


def runtime_env_failures(text: str) -> list:
    """Each "Failed to create runtime env" of a runtime env agent's log, with what it was
    asked to build (pip packages, conda, working_dir, never env_vars) and pip's (or conda's)
    last error line. The newest last."""
    import json
    import re

    stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
    failures, current = [], None
    for line in text.splitlines():
        if RUNTIME_ENV_FAILED in line:
            current = {"at": line[:19] if stamp.match(line) else None, "what": {}, "reason": None}
            raw = line.split(RUNTIME_ENV_FAILED, 1)[1].strip().rstrip(".")
            try:
                env = json.loads(raw)
            except ValueError:
                env = {}
            current["what"] = runtime_env_summary(env)
            failures.append(current)
        elif current is not None and stamp.match(line) and "giving up" in line:
            current["gave_up"] = True
            current = None
        elif current is not None and line.strip().startswith(("ERROR:", "error:")):
            current["reason"] = line.strip()[:400]
        elif current is not None and not current["reason"] and (
                "Exception" in line or "Error" in line) and not line.startswith(" "):
            current["error"] = line.strip()[:400]
    return failures[-20:]


def runtime_env_summary(env) -> dict:
    """What a runtime_env asks to build, safe to print: pip and conda packages, working_dir
    and py_modules locations, the keys present. Never env_vars values."""
    if not isinstance(env, dict):
        return {}
    out: dict = {"keys": sorted(k for k in env if not k.startswith("_"))}
    pip = env.get("pip")
    if isinstance(pip, dict):
        pip = pip.get("packages")
    if isinstance(pip, list):
        out["pip"] = [str(p)[:200] for p in pip[:50]]
    elif isinstance(pip, str):
        out["pip"] = [pip[:200]]
    conda = env.get("conda")
    if isinstance(conda, (str, dict)):
        out["conda"] = conda[:200] if isinstance(conda, str) else sorted(conda)[:10]
    for key in ("working_dir", "py_modules"):
        if isinstance(env.get(key), str):
            out[key] = env[key][:300]
    return out


def ray_logs_here() -> dict:
    """Ray's own words on this node: RAY_LOG_PATTERNS in the tails of the logs its raylet and
    (on the head) GCS hold open, and the runtime env agent's failures. Never raises."""
    import os
    import time

    started = time.monotonic()
    out = {"status": "ok", "signals": {}, "runtime_env_failures": [], "files": [], "errors": []}
    raylet = _raylet_above(os.getpid())
    if not raylet:
        return {**out, "status": "unavailable", "why": "this probe is not a descendant of a raylet"}
    roles, _, order = node_processes(raylet, _cmdline(raylet), started + OPEN_FILES_DEADLINE_S)
    for pid in order:
        role = roles[pid]
        if role not in ("raylet", "gcs", "runtime_env_agent"):
            continue
        for path in _open_logs_of(pid):
            name = os.path.basename(path)
            if role == "runtime_env_agent" and not name.startswith("runtime_env_agent"):
                continue  # the agent's inherited stdout and stderr are the raylet's files
            if name.endswith(".log") and role != "runtime_env_agent":
                continue
            text, error = tail_of(path)
            if error:
                out["errors"].append(error)
                continue
            out["files"].append({"role": role, "file": name})
            if role == "runtime_env_agent":
                out["runtime_env_failures"] += runtime_env_failures(text)
            else:
                for key, found in log_signals(text).items():
                    found["file"] = name
                    out["signals"].setdefault(key, found)
    out["duration_s"] = round(time.monotonic() - started, 3)
    return out


# What listens on a node: its own socket table, limited to the node's Ray processes.
LISTENING_DEADLINE_S = 2.0
MAX_LISTENING = 256  # sockets kept per node; a node with more says how many were left out
# Ray's processes, told apart by their command line, most specific first: (text, role).
# Binaries are matched on argv[0]'s name, the rest anywhere in the first arguments.
RAY_BINARIES = {"gcs_server": "gcs", "raylet": "raylet"}
RAY_COMMAND_ROLES = (
    ("ray-dashboard-", "dashboard"), ("ray/dashboard/dashboard.py", "dashboard"),
    ("ray::DashboardAgent", "dashboard_agent"), ("ray/dashboard/agent.py", "dashboard_agent"),
    ("ray::RuntimeEnvAgent", "runtime_env_agent"),
    ("runtime_env/agent/main.py", "runtime_env_agent"),
    ("ray.util.client.server", "client_server"), ("log_monitor.py", "log_monitor"),
    ("ray/autoscaler/", "autoscaler"), ("default_worker.py", "worker"), ("ray::", "worker"),
)
HEAD_ROLES = ("gcs", "dashboard", "client_server", "autoscaler")  # outside the raylet's tree


def _cmdline(pid) -> list:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def ray_role(args: list):
    """The part of Ray a process is, from its command line; None for anything else."""
    import os

    if not args:
        return None
    binary = RAY_BINARIES.get(os.path.basename(args[0].split(" ")[0]))
    if binary:
        return binary
    head = " ".join(args[:4])
    return next((role for text, role in RAY_COMMAND_ROLES if text in head), None)


def process_name(args: list) -> str:
    """A short name for a process (its title, or program and script), never its arguments."""
    import os

    if not args:
        return "?"
    first = args[0].strip()
    if first.startswith(("ray::", "ray-dashboard-")):
        return first.split(" (")[0].strip()[:60]
    name = os.path.basename(first.split(" ")[0])
    if name.startswith("python"):
        rest = iter(args[1:])
        for arg in rest:
            if arg == "-m":
                return f"{name} -m {next(rest, '?')}"[:60]
            if not arg.startswith("-"):
                return f"{name} {os.path.basename(arg)}"[:60]
    return name[:60]


def _flags(args: list) -> dict:
    """`--key=value` arguments as {key with dashes as underscores: value}; bare flags map to ''."""
    out = {}
    for arg in args:
        if arg.startswith("--"):
            key, _, value = arg[2:].partition("=")
            out[key.replace("-", "_")] = value
    return out


def _raylet_above(pid: int, levels: int = 4):
    """The raylet this process descends from (a worker's parent, or a few levels up)."""
    for _ in range(levels):
        pid = _parent_of(pid)
        if not pid:
            return None
        if ray_role(_cmdline(pid)) == "raylet":
            return pid
    return None


def _parent_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _tcp_listeners() -> dict:
    """{socket inode: (address, port)} of every TCP socket listening in this network namespace."""
    import ipaddress

    found = {}
    for path, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        try:
            with open(path) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != "0A":  # 0A: TCP_LISTEN
                continue
            hex_addr, _, hex_port = fields[1].partition(":")
            raw = bytes.fromhex(hex_addr)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # host order words
            addr = ipaddress.ip_address(raw) if len(raw) == width else None
            if addr is None:
                continue
            if addr.version == 6 and addr.ipv4_mapped is not None:
                addr = addr.ipv4_mapped
            found[int(fields[9])] = (str(addr), int(hex_port, 16))
    return found


def host_addresses() -> list:
    """The addresses of this host's interfaces (IPv4 from the kernel's local routes, IPv6)."""
    import ipaddress

    found = []
    try:
        with open("/proc/net/fib_trie") as f:
            lines = f.read().splitlines()
        for previous, line in zip(lines, lines[1:]):
            if "/32 host LOCAL" in line:
                candidate = previous.split()[-1]
                if candidate not in found:
                    found.append(candidate)
    except OSError:
        pass
    try:
        with open("/proc/net/if_inet6") as f:
            for line in f:
                text = str(ipaddress.ip_address(bytes.fromhex(line.split()[0])))
                if text not in found:
                    found.append(text)
    except (OSError, ValueError, IndexError):
        pass
    return found[:32]


def node_processes(raylet: int, raylet_args: list, deadline: float) -> tuple[dict, dict, list]:
    """This node's Ray processes: ({pid: role}, {pid: command line}, pids in breadth-first order).

    The raylet and everything below it (workers, the dashboard agent, the runtime env
    agent) and, on the head, the GCS, dashboard, Ray Client server and autoscaler of the
    same session (told apart from another cluster's by the session dir or GCS address).
    The head's services are looked for until `deadline` (time.monotonic()).
    """
    import os
    import time

    flags = _flags(raylet_args)
    children, commands = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            children.setdefault(_parent_of(int(entry)), []).append(int(entry))
    roles = {raylet: "raylet"}
    commands[raylet] = raylet_args
    session, gcs = flags.get("session_dir"), flags.get("gcs_address")
    if "head" in flags and (session or gcs):  # the head's own services of this session
        for pid in (pid for pids in children.values() for pid in pids):
            if time.monotonic() > deadline:
                break
            args = _cmdline(pid)
            role = ray_role(args)
            if role not in HEAD_ROLES:
                continue
            named = _flags(args)
            if (session and session in " ".join(args)) or (
                    gcs and gcs in (named.get("address"), named.get("gcs_address"))):
                roles[pid], commands[pid] = role, args
    order = list(roles)
    for pid in order:  # breadth first: a process's role is its own, or its parent's
        for child in children.get(pid, []):
            if child in roles:
                continue
            args = _cmdline(child)
            own = ray_role(args)
            parent = roles[pid]
            roles[child] = own or ("worker_child" if parent in ("raylet", "worker", "worker_child")
                                   else parent)
            commands[child] = args
            order.append(child)
    return roles, commands, order


def listening_here() -> dict:
    """The TCP ports this node's Ray processes listen on, read from the node's own /proc.

    The node's processes are its raylet and everything below it (workers, the dashboard
    agent, the runtime env agent) and, on the head, the GCS, dashboard, Ray Client server
    and autoscaler of the same session. Nothing is sent anywhere: this reads
    /proc/net/tcp{,6}, which sockets each of those processes holds (/proc/PID/fd), and
    their command lines (kept only as a short name, never their arguments).
    """
    import os
    import time

    started = time.monotonic()
    deadline = started + LISTENING_DEADLINE_S
    out = {"status": "ok", "sockets": [], "host_addresses": host_addresses(),
           "tls": os.environ.get("RAY_USE_TLS", "").lower() in ("1", "true")}
    raylet = _raylet_above(os.getpid())
    if not raylet:
        return {**out, "status": "unavailable",
                "why": "this probe is not a descendant of a raylet on its node"}
    raylet_args = _cmdline(raylet)
    flags = _flags(raylet_args)
    out["node_ip"] = flags.get("node_ip_address")
    try:
        low, high = int(flags.get("min_worker_port", "")), int(flags.get("max_worker_port", ""))
        out["worker_ports"] = [low, high] if low and high else None
    except ValueError:
        out["worker_ports"] = None
    roles, commands, order = node_processes(raylet, raylet_args, deadline)
    listeners = _tcp_listeners()
    owners, unreadable = {}, 0
    for pid in order:
        if pid == os.getpid():  # this probe's own worker port is rldoctor's, not the patient's
            continue
        if time.monotonic() > deadline:
            out["status"] = "partial"
            left = len(order) - order.index(pid)
            out["why"] = f"stopped after {LISTENING_DEADLINE_S:g}s with {left} process(es) left to read"
            break
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            unreadable += 1
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inode = int(link[8:-1])
                if inode in listeners and inode not in owners:
                    owners[inode] = pid
    seen = set()
    for inode, pid in owners.items():
        address, port = listeners[inode]
        if (address, port) in seen:
            continue
        seen.add((address, port))
        out["sockets"].append({"address": address, "port": port, "pid": pid, "role": roles[pid],
                               "process": process_name(commands.get(pid) or [])})
    out["sockets"].sort(key=lambda s: (s["port"], s["address"]))
    if len(out["sockets"]) > MAX_LISTENING:
        out["truncated"] = len(out["sockets"]) - MAX_LISTENING
        out["sockets"] = out["sockets"][:MAX_LISTENING]
    out["processes"] = len(order)
    out["unreadable_processes"] = unreadable
    if unreadable and out["status"] == "ok":
        out["status"] = "partial"
        out["why"] = (f"{unreadable} process(es) of the node would not show their sockets "
                      "(permissions)")
    out["duration_s"] = round(time.monotonic() - started, 3)
    return out


def node_limits_here() -> dict:
    """The disks, open-files limits and Ray's own log lines of this node (RLD305, RLD107,
    RLD106, RLD404): host sections of their own, each never raising."""
    return {"disk": disk_usage_here(), "open_files": open_files_here(), "ray_logs": ray_logs_here()}


def node_facts() -> dict:
    """Everything one probe learns about the node it runs on."""
    import ray

    return {"node_id": ray.get_runtime_context().get_node_id(),
            "versions": versions_here(), "host": {**host_here(), "listening": listening_here(),
                                                  **node_limits_here()}}


PY_SPY_MAX_BYTES = 512 * 1024  # a dump of a process with hundreds of threads stays bounded


def py_spy_path() -> str | None:
    """py-spy beside this worker's Python (it is a dependency of rldoctor), else on PATH."""
    import os
    import shutil
    import sys

    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("py-spy")


def _py_spy_failure(pid: int, stderr: str) -> str:
    """Why py-spy could not dump `pid`, in words an on-call engineer can act on."""
    text = stderr.strip()
    if "Permission denied" in text or "Operation not permitted" in text:
        return (f"permission denied: py-spy may not attach to pid {pid} (run the workers and Ray "
                "as one user, or allow ptrace: kernel.yama.ptrace_scope=0 or CAP_SYS_PTRACE)")
    if "No such process" in text or "Check that the process is running" in text:
        return f"no such process: pid {pid} exited"
    if "Failed to find python version" in text:
        return f"pid {pid} is not a Python process (or has not started Python yet)"
    first = next((line for line in text.splitlines() if line.strip()), "no output")
    return f"py-spy failed: {first[:300]}"


def py_spy_dump(pid: int, timeout_s: float) -> dict:
    """`py-spy dump --pid PID` of a process on this node; never raises.

    {"status": "ok", "text", "duration_s"} or {"status": "failed", "error", "duration_s"}.
    py-spy pauses the process for the few milliseconds of the dump.
    """
    import subprocess
    import sys
    import time

    started = time.perf_counter()

    def failed(why: str) -> dict:
        return {"status": "failed", "error": why,
                "duration_s": round(time.perf_counter() - started, 3)}

    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return failed(f"no such process: {pid!r} is not a pid")
    try:
        with open(f"/proc/{pid}/stat") as f:
            if pid <= 0 or f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return failed(f"no such process: pid {pid} exited")
    except (OSError, IndexError):
        return failed(f"no such process: pid {pid} is not running on this node")
    exe = py_spy_path()
    if not exe:
        return failed(f"py-spy missing on the node (not beside {sys.executable}, not on PATH)")
    try:
        proc = subprocess.run([exe, "dump", "--pid", str(pid), "--full-filenames"],
                              capture_output=True, timeout=max(0.1, float(timeout_s)),
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return failed(f"timed out after {float(timeout_s):g}s (the process may be stopped, "
                      "or stuck in the kernel)")
    except OSError as exc:
        return failed(f"py-spy could not run: {exc.strerror or exc}")
    out = proc.stdout[:PY_SPY_MAX_BYTES].decode("utf-8", errors="replace")
    if proc.returncode != 0 or not out.strip():
        return failed(_py_spy_failure(pid, proc.stderr.decode("utf-8", errors="replace")))
    return {"status": "ok", "text": out, "truncated": len(proc.stdout) > PY_SPY_MAX_BYTES,
            "duration_s": round(time.perf_counter() - started, 3)}


def register() -> None:
    """Pickle this module's functions by value, so nodes need not have rldoctor."""
    import sys

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class NodeProbe:
    """A zero-CPU actor pinned to one node: its facts, round trips, object pulls."""

    def facts(self) -> dict:
        return node_facts()

    def ping(self) -> int:
        return 0

    def make(self, nbytes: int):
        """An object of `nbytes` that lives in this node's object store."""
        return b"\x01" * nbytes

    def pull(self, refs: list) -> float:
        """Seconds to fetch the object behind refs[0] onto this node."""
        import time

        import ray

        started = time.perf_counter()
        ray.get(refs[0])
        return time.perf_counter() - started

    def stack(self, pid: int, timeout_s: float) -> dict:
        """The Python stacks of process `pid` on this node (py-spy dump); never raises."""
        return py_spy_dump(pid, timeout_s)

    def call_here(self, func, *args):
        """Run `func(*args)` on this node: a function of another by-value module of rldoctor
        (the incident bundle reads host facts and Tune result files with it)."""
        return func(*args)
