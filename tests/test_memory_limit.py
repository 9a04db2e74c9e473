"""RLD303 against the memory a node may really use: its raylet's cgroup limit, when it has one.

The check's judgement is tested on edits of the recorded memory-pressure snapshot (which,
like every older snapshot, has no `memory_limit`); the probe's cgroup reader on real
memory-limited cgroups of this machine and real processes in them (skipped where this
process may not create a cgroup).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time

import pytest

import cgroups
from conftest import FIXTURES
from rldoctor.checks.memory.pressure import node_memory_pressure
from rldoctor.node.fact_memory import memory_limit_of
from rldoctor.model import Severity
from rldoctor.snapshot import Snapshot

MiB, GiB = 2**20, 2**30
SNAP = json.loads((FIXTURES / "memory-pressure.json").read_text())
BY_IP = {n["ip"]: n["node_id"] for n in SNAP["nodes"]}
HEAD, NEAR, OTHER = BY_IP["127.0.0.10"], BY_IP["127.0.0.11"], BY_IP["127.0.0.12"]
GROUP = "/sys/fs/cgroup/memory/kubepods/pod1/ray-worker"


def run(data, **params):
    return list(node_memory_pressure(Snapshot(data), {**node_memory_pressure.params, **params}))


def in_cgroup(used: float, limit: int = 4 * GiB, node: str = OTHER, sees: bool = True) -> dict:
    """The fixture with `node` in a cgroup of `limit` bytes, `used` of it in use."""
    data = copy.deepcopy(SNAP)
    data["hosts"][node]["memory_limit"] = {
        "bytes": limit, "used_bytes": int(limit * used), "kind": "cgroup", "cgroup_version": 1,
        "source": f"cgroup v1 memory.limit_in_bytes at {GROUP}", "limit_path": GROUP,
        "ray_monitor_reads": "/sys/fs/cgroup/memory", "ray_monitor_sees_limit": sees}
    return data


def test_old_snapshots_and_hosts_without_a_limit_are_judged_on_host_memory():
    [finding] = run(SNAP)  # node 1 runs with a kill threshold of 0.15
    assert finding.subject == f"node:{NEAR}" and finding.evidence["judged_against"] == "host"
    assert finding.evidence["limit_source"] == "host MemTotal"
    data = copy.deepcopy(SNAP)
    for host in data["hosts"].values():  # what a probe now reports for a host without a limit
        host["memory_limit"] = {"bytes": host["mem_total_bytes"], "kind": "host",
                                "used_bytes": host["mem_total_bytes"] - host["mem_available_bytes"],
                                "source": "host MemTotal"}
    assert [(f.subject, f.message) for f in run(data)] == [(finding.subject, finding.message)]


@pytest.mark.parametrize("used,expected", [
    (0.50, None), (0.84, None), (0.86, Severity.WARN), (0.93, Severity.FAIL), (1.0, Severity.FAIL),
])
def test_a_cgroup_limit_near_its_use_is_reported_while_the_host_has_plenty(used, expected):
    findings = {f.subject: f for f in run(in_cgroup(used))}
    assert set(findings) - {f"node:{NEAR}"} == ({f"node:{OTHER}"} if expected else set())
    if expected is None:
        return
    finding = findings[f"node:{OTHER}"]
    assert finding.severity is expected
    assert finding.evidence["judged_against"] == "cgroup"
    assert finding.evidence["limit_source"] == f"cgroup v1 memory.limit_in_bytes at {GROUP}"
    assert finding.evidence["used_fraction"] == pytest.approx(used, abs=1e-3)
    assert finding.evidence["host_used_fraction"] < 0.2
    assert f"memory limit of its raylet's cgroup: cgroup v1 memory.limit_in_bytes at {GROUP}" \
        in finding.message and "4.0 GiB" in finding.message
    assert "--memory" in finding.fix and "resources.limits.memory" in finding.fix


def test_ray_monitor_blind_to_the_cgroup_means_the_kernel_kills_first():
    [blind] = [f for f in run(in_cgroup(0.9, sees=False)) if f.subject == f"node:{OTHER}"]
    assert "Ray's memory monitor reads /sys/fs/cgroup/memory, not this cgroup" in blind.message
    assert "SIGKILL (RLD403)" in blind.message
    [seen] = [f for f in run(in_cgroup(0.9, sees=True)) if f.subject == f"node:{OTHER}"]
    assert "kernel" not in seen.message


def test_the_tighter_of_host_and_cgroup_is_judged():
    data = in_cgroup(0.05, node=NEAR)  # plenty in its cgroup, but its host is past 0.15
    [finding] = run(data)
    assert finding.subject == f"node:{NEAR}" and finding.evidence["judged_against"] == "host"
    data = in_cgroup(0.90, node=NEAR)  # tighter in its cgroup: that is what is reported
    [finding] = run(data)
    assert finding.evidence["judged_against"] == "cgroup"
    assert finding.evidence["kill_threshold"] == pytest.approx(0.15)
    assert "above the kill threshold 15.0%" in finding.message


# -- the probe's reader, on real cgroups ------------------------------------------------

needs_cgroup = pytest.mark.skipif(cgroups.unavailable() is not None,
                                  reason=f"{cgroups.unavailable()}")

HOLDER = ("import mmap, sys, time\n"
          "block = mmap.mmap(-1, int(sys.argv[1]))\n"
          "for offset in range(0, len(block), mmap.PAGESIZE): block[offset] = 1\n"
          "print('ready', flush=True)\n"
          "time.sleep(120)\n")


def _hold(group: cgroups.MemoryCgroup, nbytes: int) -> subprocess.Popen:
    proc = subprocess.Popen(group.wrap([sys.executable, "-c", HOLDER, str(nbytes)]),
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _meminfo() -> tuple[int, int]:
    info = dict(line.split(":", 1) for line in open("/proc/meminfo"))
    return int(info["MemTotal"].split()[0]) * 1024, int(info["MemAvailable"].split()[0]) * 1024


@needs_cgroup
def test_reader_finds_the_limit_and_use_of_a_process_in_a_cgroup():
    with cgroups.MemoryCgroup(512 * MiB) as group:
        proc = _hold(group, 200 * MiB)
        try:
            found = memory_limit_of(proc.pid, *_meminfo())
            kernel_used = group.used_bytes()
        finally:
            proc.kill()
            proc.wait()
    assert found["kind"] == "cgroup" and found["bytes"] == 512 * MiB
    assert found["cgroup_version"] == group.version and found["limit_path"] == group.path
    assert found["source"] == f"cgroup v{group.version} {group.files[0]} at {group.path}"
    assert 200 * MiB <= found["used_bytes"] <= 260 * MiB
    assert abs(found["used_bytes"] - kernel_used) < 16 * MiB
    assert found["ray_monitor_sees_limit"] is False  # Ray reads the mount root, not this group


@needs_cgroup
def test_reader_walks_up_to_the_group_that_sets_the_limit():
    """A limit set on the parent (a pod) binds a child without one (its container)."""
    with cgroups.MemoryCgroup(384 * MiB) as pod:
        child = f"{pod.path}/container"
        import os

        os.mkdir(child)
        try:
            proc = subprocess.Popen(["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"',
                                     child, sys.executable, "-c", HOLDER, str(64 * MiB)],
                                    stdout=subprocess.PIPE, text=True)
            assert proc.stdout.readline().strip() == "ready"
            found = memory_limit_of(proc.pid, *_meminfo())
            proc.kill()
            proc.wait()
        finally:
            deadline = time.monotonic() + 10
            while os.path.isdir(child):
                try:
                    os.rmdir(child)
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
    assert found["cgroup_path"] == child and found["limit_path"] == pod.path
    assert found["bytes"] == 384 * MiB and found["used_bytes"] >= 64 * MiB


def test_reader_without_a_limit_reports_the_host():
    total, available = _meminfo()
    found = memory_limit_of(2**22 + 12345, total, available)  # no such process: no cgroup
    assert found == {"bytes": total, "used_bytes": total - available, "source": "host MemTotal",
                     "kind": "host", "pid": 2**22 + 12345}
