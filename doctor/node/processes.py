"""This node's Ray processes, told apart by their command lines: the raylet a probe descends
from, its flags, the processes below it (and on the head the GCS and its services), and the
files a process holds open. The shared reader of the node-side facts (rldoctor.node.facts);
standard library only, read from /proc.
"""

from __future__ import annotations


def raylet_pid() -> int:
    """This node's raylet (a probe's parent), or this process when it runs elsewhere."""
    import os

    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            first = f.read().split(b"\0")[0]
    except OSError:
        return os.getpid()
    return os.getppid() if first.endswith(b"raylet") else os.getpid()


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
