"""The node-side fact `listening` (RLD204, RLD501): the TCP ports the node's Ray processes
listen on, from the node's own socket table. Standard library only, read from /proc.
"""

from __future__ import annotations

from rldoctor.node.facts import fact
from rldoctor.node.processes import (_cmdline, _flags, _raylet_above, node_processes,
                                     process_name)

# What listens on a node: its own socket table, limited to the node's Ray processes.
LISTENING_DEADLINE_S = 2.0
MAX_LISTENING = 256  # sockets kept per node; a node with more says how many were left out


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


@fact("listening")
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
