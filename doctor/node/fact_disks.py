"""The node-side fact `disk` (RLD305): the file systems under the node's Ray directories, how
full each is, and (near full) what fills them; and where the raylet keeps its object store
and spills. Standard library only.
"""

from __future__ import annotations

from rldoctor.node.facts import fact
from rldoctor.node.processes import _cmdline, _flags, raylet_pid


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


@fact("disk")
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
