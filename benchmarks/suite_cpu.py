"""Where a command's CPU time goes, by kind of process (issue 46: `make test` is CPU-bound).

    sudo python benchmarks/suite_cpu.py [--top 30] [--json FILE] -- make test

Runs the command with the kernel's process accounting on (acct(2): one record with the CPU
time of every process at its exit, however short it lived; root only), while a thread reads
/proc every 0.2 s to learn each new process's command line (Ray renames its workers to
`ray::Class`, so the last name seen is kept too) and whether it descends from the command
(this process is made the subreaper of its tree, so the daemons `ray start` leaves behind
stay in it). At the end it prints the wall time, how idle the host was, the command's CPU
seconds in all, and those of each kind of process: Ray's own (per node: raylet, dashboard
agent, runtime-env agent, log monitor; per head: GCS, dashboard and its module processes,
autoscaler monitor), Ray workers by class (rldoctor's NodeProbe among them), rldoctor's CLI,
`ray start`, pytest, and the rest by program. A process that lived under 0.2 s may be seen
by its 16-letter name only. Accounting covers the whole host: only the command's tree is
counted.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time

PR_SET_CHILD_SUBREAPER = 36
RECORD = struct.Struct("<BBHIIIIIIfHHHHHHHH16s")  # struct acct_v3 (64 bytes)

# Ray's processes are told apart by rldoctor's own reader of them (rldoctor.node.processes);
# these are its roles as this report names them, and what that reader leaves to others.
ROLE_KINDS = {"gcs": "GCS", "dashboard_agent": "dashboard agent",
              "runtime_env_agent": "runtime-env agent", "client_server": "client server",
              "log_monitor": "log monitor", "autoscaler": "autoscaler monitor"}
OTHER_KINDS = (  # (text in the first command line seen, kind), most specific first
    ("multiprocessing.forkserver", "head: dashboard modules"), ("bin/ray start", "ray start (CLI)"),
    ("bin/rldoctor", "rldoctor (CLI)"), ("-m rldoctor", "rldoctor (CLI)"),
    ("plan_reader", "rldoctor (plan reader)"), ("exec(eval(sys.stdin.readline()))", "pytest (xdist worker)"),
    ("-m pytest", "pytest"),
)


def _comp_t(value: int) -> float:
    """acct's 16-bit comp_t (3-bit base-8 exponent, 13-bit mantissa), in clock ticks."""
    return float((value & 0x1FFF) << (3 * (value >> 13)))


def kind_of(names: list[list[str]], comm: str) -> str:
    """The kind of a process from the command lines seen (first, and last once Ray renamed it)."""
    from rldoctor.node.processes import HEAD_ROLES, process_name, ray_role

    if not names:
        return f"unseen: {comm}"
    first, last = names[0], names[-1]
    title = last[0].split()[0] if last[0].startswith("ray::") else ""
    role = ray_role(last if title else first)
    if role == "worker":
        return f"Ray worker: {re.sub(r'[.:].*$', '', title[5:]) or '(not named yet)'}"
    if role:
        return f"{'head' if role in HEAD_ROLES else 'node'}: {ROLE_KINDS.get(role, role)}"
    program = os.path.basename(first[0].split(" ")[0])
    if not program.startswith(("python", "rldoctor", "ray")):  # a shell's script is not its kind
        return process_name(first)
    line = " ".join(first)
    for text, kind in OTHER_KINDS:
        if text in line:
            return kind
    if "-c" in first[1:3]:  # a driver or helper given as code: its first statement names it
        code = (first[first.index("-c") + 1:] or [""])[0]
        return "python -c: " + (code.strip().splitlines() or [""])[0].split(";")[0][:40]
    return process_name(first)


class Tree:
    """The command's processes, as /proc shows them: pid -> command lines seen (first, last)."""

    def __init__(self, root: int):
        self.ours = {root, os.getpid()}  # an orphan is reparented to us, the subreaper
        self.names: dict[int, list[list[str]]] = {}
        self._stop = threading.Event()

    def _read(self, pid: int) -> tuple[int, list[str]] | None:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = [a.decode(errors="replace") for a in f.read(4096).split(b"\0") if a]
        except (OSError, ValueError, IndexError):
            return None
        return ppid, cmd

    def sample(self) -> None:
        seen = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                read = self._read(int(entry))
                if read:
                    seen[int(entry)] = read
        changed = True
        while changed:  # parents before children, whatever order /proc lists them in
            changed = False
            for pid, (ppid, _) in seen.items():
                if pid not in self.ours and ppid in self.ours:
                    self.ours.add(pid)
                    changed = True
        for pid, (_, cmd) in seen.items():
            if pid in self.ours and cmd:
                names = self.names.setdefault(pid, [])
                if not names or names[-1] != cmd:
                    names[:] = [names[0], cmd] if names else [cmd]

    def reap(self, root: int) -> None:
        """Reap the orphans that became ours (not the command itself, which Popen waits for):
        a zombie left unreaped would still look like a running process to the suite."""
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or info.si_pid == root:
                return
            os.waitpid(info.si_pid, 0)

    def run(self, root: int) -> None:
        while not self._stop.wait(0.2):
            self.sample()
            self.reap(root)

    def stop(self) -> None:
        self._stop.set()


def _busy_idle() -> tuple[int, int]:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, idle


def account(records: bytes, tree: Tree, tick: float) -> tuple[collections.Counter, collections.Counter]:
    cpu, count = collections.Counter(), collections.Counter()
    for offset in range(0, len(records) - RECORD.size + 1, RECORD.size):
        fields = RECORD.unpack_from(records, offset)
        version, pid, utime, stime, comm = fields[1], fields[6], fields[10], fields[11], fields[-1]
        if version & 0x0F != 3 or pid not in tree.ours or pid == os.getpid():
            continue
        kind = kind_of(tree.names.get(pid, []), comm.split(b"\0")[0].decode(errors="replace"))
        cpu[kind] += (_comp_t(utime) + _comp_t(stime)) / tick
        count[kind] += 1
    return cpu, count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command (put it after --)")
    if os.geteuid() != 0:
        print("suite_cpu: process accounting needs root", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as scratch:
        path = os.path.join(scratch, "acct")
        open(path, "wb").close()
        if libc.acct(path.encode()) != 0:
            print(f"suite_cpu: acct(2) failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
            return 2
        busy0, idle0 = _busy_idle()
        started = time.monotonic()
        try:
            proc = subprocess.Popen(command)
            tree = Tree(proc.pid)
            sampler = threading.Thread(target=tree.run, args=(proc.pid,), daemon=True)
            sampler.start()
            code = proc.wait()
            tree.stop()
            sampler.join()
            tree.reap(-1)  # what exited last; one still running is not counted (it has not exited)
        finally:
            wall = time.monotonic() - started
            busy1, idle1 = _busy_idle()
            libc.acct(None)
        with open(path, "rb") as f:
            records = f.read()
    cpu, count = account(records, tree, os.sysconf("SC_CLK_TCK"))
    total = sum(cpu.values())
    idle = (idle1 - idle0) / max(1, (busy1 - busy0) + (idle1 - idle0))
    print(f"exit {code}; wall {wall:.0f} s; host idle {idle:.0%} of {os.cpu_count()} cores; "
          f"the command's processes: {total:.0f} CPU-s in {sum(count.values())} processes")
    print(f"{'CPU-s':>8} {'share':>6} {'procs':>6} {'each':>6}  kind")
    for kind, seconds in cpu.most_common(args.top):
        print(f"{seconds:8.1f} {seconds / total:6.1%} {count[kind]:6d} {seconds / count[kind]:6.2f}  {kind}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"exit": code, "wall_s": round(wall, 1), "host_idle": round(idle, 3),
                       "cpu_s": round(total, 1),
                       "kinds": {k: {"cpu_s": round(v, 1), "processes": count[k]}
                                 for k, v in cpu.most_common()}}, f, indent=1)
    return code


if __name__ == "__main__":
    sys.exit(main())
