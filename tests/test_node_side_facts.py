"""The bundle's host.json and the snapshot read the node with the same code: the memory
limit that applies to the raylet's processes (its cgroup, else MemTotal) and the disks.
Run here, on this machine's own /proc and cgroup files, both ways."""

from __future__ import annotations

import tempfile

from rldoctor.node import onnode
from rldoctor.node import fact_disks
from rldoctor.node import fact_memory

_STABLE = ("bytes", "source", "kind", "pid", "cgroup_version", "cgroup_path", "limit_path")


def test_host_json_states_the_memory_limit_of_the_snapshot():
    snapshot = fact_memory.host_here()
    bundle = onnode.host_details(None)["cgroup"]["memory"]
    assert bundle["mem_total_bytes"] == snapshot["mem_total_bytes"] > 0
    assert {k: bundle["memory_limit"].get(k) for k in _STABLE} == \
        {k: snapshot["memory_limit"].get(k) for k in _STABLE}
    assert bundle["memory_limit"]["source"]  # a cgroup path, or the host's MemTotal


def test_disks_are_measured_by_the_probes_reader():
    here = tempfile.gettempdir()
    disk = onnode.host_details(here + "/session_x")["disks"]["system_temp_dir"]
    assert (disk["total_bytes"], disk["path"]) == (fact_disks.disk_of(here)[0], here)
    assert onnode._disk("/no/such/dir") == {"path": "/no/such/dir", "error": "not found"}
