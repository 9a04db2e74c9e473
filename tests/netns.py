"""Separate hosts on one machine: a network namespace per node, joined by a bridge.

    with Hosts(3) as hosts:
        hosts.ip(1)                      # "10.231.27.11"
        hosts.prefix(1)                  # ["ip", "netns", "exec", "rldnet-<pid>-n1"]
        hosts.block(2, port=1234, sources=[1])   # iptables in host 2: drop SYNs from host 1
        hosts.unblock_all()

Layout (everything is named with the prefix `rldnet-<pid of the test process>-`):
- one namespace per host, `...-n<i>`, with loopback up and an `eth0` holding 10.231.27.(10+i)/24;
- one namespace `...-br` holding the bridge `br0` and the other end of every host's veth pair.
The range exists only inside these namespaces: no address in the root namespace, no route
out, no NAT, so nothing leaves them. Deleting a namespace deletes its links, addresses and
iptables rules with it; `remove()` deletes every namespace it made, and runs from the test's
finalizer and at exit. Namespaces left by a killed earlier run (their pid no longer runs)
are removed when the next Hosts is made.

Rules are Debian's `iptables` (nf_tables backend) run inside one host's namespace, on its
INPUT chain: `block()` drops (or rejects) new TCP connections (SYN packets) to a port, from
some hosts or all. Connections opened before the rule keep working, as they do behind a
cloud security group whose rules change: the cluster stays up and new connections fail.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess

PREFIX = "rldnet-"
SUBNET = "10.231.27"  # a private /24 that exists only inside the namespaces
FIRST_HOST = 10


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if check and proc.returncode:
        raise RuntimeError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def missing_tools() -> str | None:
    """Why this machine cannot build the hosts (None when it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if not shutil.which(tool):
            return f"`{tool}` is not installed (make system-tools installs it)"
    return None


def namespaces() -> list[str]:
    out = _run("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def remove_leftovers() -> list[str]:
    """Delete namespaces of earlier runs whose test process is gone; returns their names."""
    removed = []
    for name in namespaces():
        if not name.startswith(PREFIX):
            continue
        owner = name[len(PREFIX):].split("-")[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            _run("ip", "netns", "del", name, check=False)
            removed.append(name)
    return removed


class Hosts:
    def __init__(self, count: int):
        self.count = count
        self.tag = f"{PREFIX}{os.getpid()}"
        self.bridge_ns = f"{self.tag}-br"
        self._made: list[str] = []
        self._rules: dict[int, list[list[str]]] = {}

    def ns(self, index: int) -> str:
        return f"{self.tag}-n{index}"

    @staticmethod
    def ip(index: int) -> str:
        return f"{SUBNET}.{FIRST_HOST + index}"

    def prefix(self, index: int) -> list[str]:
        """The command prefix that runs a program on host `index`."""
        return ["ip", "netns", "exec", self.ns(index)]

    def in_host(self, index: int, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return _run(*self.prefix(index), *args, check=check)

    # -- lifecycle -------------------------------------------------------------------------
    def create(self) -> "Hosts":
        why = missing_tools()
        if why:
            raise RuntimeError(why)
        remove_leftovers()
        atexit.register(self.remove)
        try:
            self._add_ns(self.bridge_ns)
            br = ["ip", "-n", self.bridge_ns]
            _run(*br, "link", "add", "br0", "type", "bridge")
            _run(*br, "link", "set", "br0", "up")
            for i in range(self.count):
                name = self.ns(i)
                self._add_ns(name)
                _run(*br, "link", "add", f"h{i}", "type", "veth", "peer", "name", "eth0",
                     "netns", name)
                _run(*br, "link", "set", f"h{i}", "master", "br0", "up")
                _run("ip", "-n", name, "addr", "add", f"{self.ip(i)}/24", "dev", "eth0")
                _run("ip", "-n", name, "link", "set", "eth0", "up")
                _run("ip", "-n", name, "link", "set", "lo", "up")
        except BaseException:
            self.remove()
            raise
        return self

    def _add_ns(self, name: str) -> None:
        _run("ip", "netns", "add", name)
        self._made.append(name)

    def remove(self) -> None:
        """Delete every namespace this made (and with them their links, addresses and rules)."""
        for name in reversed(self._made):
            _run("ip", "netns", "del", name, check=False)
        self._made.clear()
        self._rules.clear()

    def __enter__(self) -> "Hosts":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.remove()

    # -- firewall rules ----------------------------------------------------------------------
    def block(self, index: int, port: int | str, sources: list[int] | None = None,
              reject: bool = False) -> None:
        """New TCP connections to `port` (or a range "LOW:HIGH") on host `index` from hosts
        `sources` (all when None) are dropped (time out) or, with `reject`, answered with a
        reset (refused)."""
        target = ["-j", "REJECT", "--reject-with", "tcp-reset"] if reject else ["-j", "DROP"]
        froms = [["-s", self.ip(s)] for s in sources] if sources is not None else [[]]
        for src in froms:
            rule = ["INPUT", *src, "-p", "tcp", "--syn", "--dport", str(port), *target]
            self.in_host(index, "iptables", "-w", "-A", *rule)
            self._rules.setdefault(index, []).append(rule)

    def unblock_all(self) -> None:
        for index, rules in self._rules.items():
            for rule in rules:
                self.in_host(index, "iptables", "-w", "-D", *rule, check=False)
        self._rules.clear()

    def rules(self, index: int) -> str:
        return self.in_host(index, "iptables", "-S", "INPUT").stdout


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["clean"]:
        print("usage: python tests/netns.py clean   (remove namespaces of test runs that are gone)")
        sys.exit(2)
    for name in remove_leftovers():
        print(f"removed leftover namespace {name}")
