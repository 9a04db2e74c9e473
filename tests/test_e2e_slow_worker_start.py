"""End to end: every node starts its worker processes slowly, and none is broken.

Both nodes of a 2-node cluster have a sitecustomize.py on their PYTHONPATH that holds Ray's
worker processes for 10 s at start (as a loaded host, a slow shared file system or 20 nodes
on two cores do: Ray's own start of one bare worker per node took 11 s there). Every probe
answers after about 10 s, past the 8 s a probe used to be given, and none before its peers:
the check waits for them, measures the nodes as usual and reports no node whose workers do
not start.
"""

from __future__ import annotations

import pytest

from conftest import check_json
from localcluster import LocalCluster, NodeSpec
from node_faults import hang_site

pytestmark = [pytest.mark.cluster,
              pytest.mark.serial]  # measures times (tests/suite_plan.py)
# Started before the module takes the lock: a cluster's start needs no quiet host
# (tests/suite_plan.py, serial_module_alone).
BEFORE_THE_LOCK = ("slow_cluster",)

SLOW_START_S = 10


@pytest.fixture(scope="module")
def slow_cluster(tmp_path_factory):
    site = hang_site(tmp_path_factory.mktemp("slow-site"), seconds=SLOW_START_S)
    # No CPUs: Ray starts no worker ahead for the first driver (a raylet makes the first
    # driver wait for those, and keeps one idle that a probe would then start on at once)
    specs = [NodeSpec(num_cpus=0, labels={"ray.io/availability-zone": "zone-a"},
                      env={"PYTHONPATH": site}) for _ in range(2)]
    with LocalCluster(specs, log_monitor=False) as cluster:
        yield cluster


def test_probes_that_all_start_slowly_are_waited_for_and_no_node_is_reported(slow_cluster):
    result = check_json(slow_cluster)
    assert result.code == 0, result
    assert result.findings("RLD101") == [] and result.findings("RLD106") == [], result
    report = result.json()
    checks = {c["code"]: c["status"] for c in report["checks"]}
    for code in ("RLD101", "RLD201", "RLD202", "RLD204", "RLD301"):
        assert checks[code] == "ok", (code, checks[code])
    assert SLOW_START_S < result.seconds < 25, result
