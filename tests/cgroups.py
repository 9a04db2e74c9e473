"""Memory-limited cgroups for tests: a node that runs inside a container-like memory limit.

`MemoryCgroup(limit)` creates a child of this process's own memory cgroup (cgroup v1, the
memory controller; or v2, when this process's group may have children with the memory
controller), writes the limit, and removes the group afterwards even when a test fails.
A group can only be removed once it is empty, so the processes still in it (this test's
alone: nothing else was ever put there) are killed first.

`NodeSpec(cgroup=group.path)` starts a node inside it (tests/localcluster.py): every
process of that node (raylet, agents, workers) inherits the group. `FillTo(group, 0.9)`
keeps the group's memory use near a fraction of its limit with a helper process that
takes or gives back anonymous memory as the node's own use moves, so the figure the
check reads does not depend on how much a worker happens to take while it starts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

FILES = {1: ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file",
             "total_active_file"),
         2: ("memory.max", "memory.current", "inactive_file", "active_file")}


def _own_group() -> tuple[int, Path] | None:
    """(version, directory) of this process's memory cgroup, where a child can be made."""
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    v1 = next((line.split(":", 2)[2] for line in lines
               if "memory" in line.split(":", 2)[1].split(",")), None)
    if v1 is not None and Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists():
        return 1, Path("/sys/fs/cgroup/memory" + v1.rstrip("/"))
    v2 = next((line.split(":", 2)[2] for line in lines if line.startswith("0::")), None)
    controllers = Path("/sys/fs/cgroup/cgroup.controllers")
    if v2 is not None and controllers.exists() and "memory" in controllers.read_text().split():
        return 2, Path("/sys/fs/cgroup" + v2.rstrip("/"))
    return None


def unavailable() -> str | None:
    """Why no memory-limited group can be made here, or None."""
    if os.geteuid() != 0:
        return "creating a memory cgroup needs root"
    try:
        found = _own_group()
    except OSError as exc:
        return f"cannot read this process's cgroup: {exc}"
    if found is None:
        return "no cgroup memory controller (v1 or v2) is mounted here"
    version, parent = found
    if not os.access(parent, os.W_OK):
        return f"cannot create a child of {parent}"
    if version == 2 and "memory" not in (parent / "cgroup.subtree_control").read_text().split():
        return (f"the memory controller is not enabled for children of {parent} (cgroup v2 "
                "allows that only in a group without processes of its own)")
    return None


def _keyed(path: Path) -> dict[str, int]:
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[key] = int(value)
    return out


class MemoryCgroup:
    def __init__(self, limit_bytes: int):
        self.limit_bytes = limit_bytes
        found = _own_group()
        if found is None:
            raise RuntimeError(unavailable() or "no memory cgroup here")
        self.version, parent = found
        self.path = str(parent / f"rldoctor-test-{uuid.uuid4().hex[:10]}")

    @property
    def files(self) -> tuple[str, str, str, str]:
        return FILES[self.version]

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in Path(self.path, "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def used_bytes(self) -> int:
        """Usage minus page cache: the figure Ray's memory monitor (and rldoctor) reads."""
        _, usage, inactive, active = self.files
        stat = _keyed(Path(self.path, "memory.stat"))
        return int(Path(self.path, usage).read_text()) - stat.get(inactive, 0) - stat.get(active, 0)

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` run inside this group (a shell moves itself in, then execs it)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self.path, *argv]

    def __enter__(self) -> "MemoryCgroup":
        os.mkdir(self.path)
        try:
            Path(self.path, self.files[0]).write_text(str(self.limit_bytes))
        except BaseException:
            self.remove()
            raise
        return self

    def remove(self) -> None:
        deadline = time.monotonic() + 15
        while os.path.isdir(self.path):
            for pid in self.pids():  # only this test's processes were ever put here
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                os.rmdir(self.path)
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"cgroup {self.path} could not be removed; still in it: "
                                       f"{self.pids()}") from None
                time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        self.remove()


_FILLER = r"""
import mmap, sys, time
path, target, version = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
limit_f, usage_f, inactive, active = {files!r}[version]
limit = int(open(f"{{path}}/{{limit_f}}").read())
CHUNK = 8 * 2**20
held, ready = [], False

def used():
    stat = dict(line.split() for line in open(f"{{path}}/memory.stat"))
    usage = int(open(f"{{path}}/{{usage_f}}").read())
    return usage - int(stat.get(inactive, 0)) - int(stat.get(active, 0))

while True:
    gap = target * limit - used()
    if gap > CHUNK:
        block = mmap.mmap(-1, CHUNK)
        for offset in range(0, CHUNK, mmap.PAGESIZE):
            block[offset] = 1
        held.append(block)
        continue
    if gap < -CHUNK and held:
        held.pop().close()
        continue
    if not ready:
        print("ready", flush=True)
        ready = True
    time.sleep(0.02)
"""


class FillTo:
    """A process in `group` that keeps the group's used memory near `fraction` of its limit."""

    def __init__(self, group: MemoryCgroup, fraction: float):
        self.group, self.fraction = group, fraction

    def __enter__(self) -> "FillTo":
        code = _FILLER.format(files=FILES)
        self.proc = subprocess.Popen(
            self.group.wrap([sys.executable, "-c", code, self.group.path, str(self.fraction),
                             str(self.group.version)]),
            stdout=subprocess.PIPE, text=True, start_new_session=True)
        import select

        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline() if ready else ""
        if line.strip() != "ready":
            self.__exit__()
            raise RuntimeError(f"the memory filler did not start (exit {self.proc.poll()})")
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
