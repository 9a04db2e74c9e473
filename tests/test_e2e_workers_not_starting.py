"""End to end: a node whose worker processes hang at start (RLD106).

Worker node 2 has a sitecustomize.py on its PYTHONPATH that sleeps in Ray's worker
processes only (ray start, the raylet and the agents start normally), and
RAY_worker_register_timeout_seconds=5 so its raylet says so within seconds instead of a
minute. A task is pinned to it with a custom resource and never starts. rldoctor's probe
cannot start there either: the check must still finish in its normal time, name that node
with Ray's own line, and call no node dead.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import check_json
from localcluster import LocalCluster, NodeSpec
from node_faults import hang_site, wait_for_workers_not_registered

pytestmark = pytest.mark.cluster

PINNED_TASK = """
import time
@ray.remote(num_cpus=0, resources={"hung_node": 0.1})
def never_runs():
    return 1
ref = never_runs.remote()
print("=> submitted", flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def hung_cluster(tmp_path_factory):
    site = hang_site(tmp_path_factory.mktemp("hang-site"))
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    specs[2].env.update({"PYTHONPATH": site, "RAY_worker_register_timeout_seconds": "5"})
    specs[2].resources = {"hung_node": 1}
    with LocalCluster(specs) as cluster:
        prologue = ("import ray, logging\n"
                    f"ray.init(address={cluster.address!r}, logging_level=logging.ERROR, "
                    "log_to_driver=False)\n")
        driver = subprocess.Popen([sys.executable, "-u", "-c", prologue + PINNED_TASK],
                                  env=cluster.client_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            assert "submitted" in driver.stdout.readline()
            wait_for_workers_not_registered(cluster, 2, timeout_s=30)  # its 5 s timeout, once
            yield cluster
        finally:
            driver.kill()
            driver.wait()


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_a_node_whose_workers_hang_at_start_is_rld106_in_normal_time(hung_cluster):
    hung = hung_cluster.nodes[2].node_id
    result = check_json(hung_cluster)
    assert result.code == 1, result
    assert result.seconds < 12, result
    found = {f["subject"]: f for f in result.findings("RLD106")}
    assert set(found) == {f"node:{hung}"}, result
    finding = found[f"node:{hung}"]
    assert finding["severity"] == "fail"
    assert "have not registered within the timeout" in finding["message"]
    assert "is alive (its raylet answers)" in finding["message"]
    signal = finding["evidence"]["raylet_log"]["workers_not_registered"]
    assert signal["count"] >= 1 and f'{signal["count"]}x' in finding["message"]
    # three nodes share one log folder: the line is from the hung node's own raylet files
    own = hung_cluster.log_suffix(2)
    assert own and signal["file"] in (f"raylet{own}.err", f"raylet{own}.out"), signal
    # Not held for the probe's full 8 s: stragglers get 2.5x what their peers took (>= 4 s).
    waited = int(re.search(r"no answer within (\d+)s", finding["evidence"]["probe_error"]).group(1))
    assert waited < 8, finding["evidence"]
    assert "RAY_worker_register_timeout_seconds" in finding["fix"]
    assert "python-core-worker" in finding["fix"] and "raylet.out" in finding["fix"]
    # Alive, not dead: no RLD101 for it (nor for anyone).
    assert result.findings("RLD101") == [], result


def test_the_bundle_holds_the_hung_nodes_raylet_lines(hung_cluster, tmp_path):
    import tarfile

    from conftest import run_rldoctor

    hung = hung_cluster.nodes[2].node_id
    path = tmp_path / "incident.tar.gz"
    done = run_rldoctor("collect", "--bundle", str(path), "--address", hung_cluster.address,
                        env=hung_cluster.client_env(), timeout=180)
    assert done.code == 0, done
    with tarfile.open(path) as tar:
        logs = {m.name: tar.extractfile(m).read() for m in tar
                if m.isfile() and f"/nodes/{hung}/logs/raylet" in m.name}
    assert any(b"have not registered within the timeout" in data for data in logs.values()), \
        sorted(logs)

