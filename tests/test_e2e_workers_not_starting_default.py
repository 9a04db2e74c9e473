"""End to end, as a user meets it (issue 37): a node whose worker processes hang at start,
with Ray's default 60 s worker register timeout, and `check` once the raylet
has written that the workers did not register (about 60 s after a task pinned there).

The node's sitecustomize.py (on its PYTHONPATH only) sleeps in Ray's worker processes; a
zero-CPU task needs its custom resource. Past the timeout the raylet says "Some workers of
the worker process(<pid>) have not registered within the timeout" (again each minute, as it
starts another worker): RLD106 quotes it and names the node, RLD101 calls no node busy.
The cluster is its own and nothing else runs on it (the test waits about 60 s).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import check_json
from localcluster import LocalCluster, NodeSpec
from node_faults import hang_site, wait_for_workers_not_registered
from test_e2e_workers_not_starting import PINNED_TASK

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_at_rays_own_register_timeout_rld106_quotes_the_raylet_and_rld101_says_no_busy(
        tmp_path_factory):
    """Issue 37, as a user meets it: Ray's default 60 s register timeout (not the 5 s
    of test_e2e_workers_not_starting.py), the hung node alone with the head, `check` once the raylet said so. RLD106
    names the node with the raylet's own line; RLD101 does not call the node busy."""
    site = hang_site(tmp_path_factory.mktemp("hang-site-default"))
    specs = [NodeSpec(), NodeSpec(env={"PYTHONPATH": site}, resources={"hung_node": 1})]
    with LocalCluster(specs, log_monitor=False) as cluster:
        prologue = ("import ray, logging\n"
                    f"ray.init(address={cluster.address!r}, logging_level=logging.ERROR, "
                    "log_to_driver=False)\n")
        driver = subprocess.Popen([sys.executable, "-u", "-c", prologue + PINNED_TASK],
                                  env=cluster.client_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            assert "submitted" in driver.stdout.readline()
            # Past Ray's 60 s worker_register_timeout_seconds the raylet writes its line:
            # wait for it (at most 120 s), not a fixed 75 s.
            wait_for_workers_not_registered(cluster, 1, timeout_s=120)
            hung = cluster.nodes[1].node_id
            result = check_json(cluster)
        finally:
            driver.kill()
            driver.wait()
    found = {f["subject"]: f for f in result.findings("RLD106")}
    assert set(found) == {f"node:{hung}"}, result
    finding = found[f"node:{hung}"]
    assert finding["severity"] == "fail"
    assert "Some workers of the worker process(" in finding["message"]
    assert "have not registered within the timeout" in finding["message"], finding
    # the hung node's own raylet files (raylet.1.*: it shares the head's log folder)
    assert finding["evidence"]["raylet_log"]["workers_not_registered"]["file"] in (
        "raylet.1.err", "raylet.1.out"), finding["evidence"]
    assert all("busy" not in f["message"] for f in result.findings("RLD101")), result
    assert result.findings("RLD101") == [], result
