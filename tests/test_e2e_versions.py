"""End to end: a cluster whose Ray differs from rldoctor's, which Ray refuses as a driver.

Ray records the head's Ray and Python versions in the GCS when `ray start --head` runs
(`_write_cluster_info_to_kv`, from `ray._private.utils.compute_version_info`) and
refuses any driver or node whose own differ (`check_version_info`). A sitecustomize on
the nodes' PYTHONPATH makes every process of the cluster compute Ray "2.59.0": the head
records it, the worker node and every worker pass the comparison, and so does a user's
driver started with the same PYTHONPATH. rldoctor, with the real 2.60.0, is refused as a
driver, finds the dashboard in the GCS and runs the collectors inside the cluster (the
job inherits the nodes' PYTHONPATH, so it plays 2.59.0 too): the report is complete, says
which path examined the cluster, and has no RLD102 about the machine rldoctor runs on.
Without a dashboard it is one line, exit 3 (tests/test_e2e_gcs_without_dashboard.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import run_rldoctor
from faults import CRASH_THREE_TIMES, PIN_BY_LABEL
from localcluster import LocalCluster, NodeSpec

pytestmark = pytest.mark.cluster

CLUSTER_RAY = "2.59.0"
OTHER_RAY = """
import os
import sys

_version = os.environ.get("RLDOCTOR_TEST_RAY_VERSION")
if _version:  # this process plays a Ray of another version (see tests/test_e2e_versions.py)
    import ray._private.utils as _utils

    _real = _utils.compute_version_info
    _utils.compute_version_info = lambda: (_version, _real()[1])
"""
INFEASIBLE = """
@ray.remote(num_gpus=1)
class NeedsAccelerator:
    pass
NeedsAccelerator.options(name="wants-gpu", lifetime="detached", namespace="e2e").remote()
print("=> ok")
"""


@pytest.fixture(scope="module")
def other_ray(tmp_path_factory):
    site = tmp_path_factory.mktemp("other-ray-site")
    (site / "sitecustomize.py").write_text(OTHER_RAY)
    env = {"PYTHONPATH": str(site), "RLDOCTOR_TEST_RAY_VERSION": CLUSTER_RAY}
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}, env=dict(env))
             for _ in range(2)]
    with LocalCluster(specs, log_monitor=False) as cluster:
        cluster.other_ray_env = env
        worker = cluster.nodes[1].node_id
        user_driver(cluster, f"NODE = {worker!r}\n" + PIN_BY_LABEL + CRASH_THREE_TIMES + INFEASIBLE)
        yield cluster


def user_driver(cluster: LocalCluster, code: str) -> str:
    """A driver of the cluster's own (fake) Ray version, which Ray lets in."""
    prologue = ("import ray, logging\n"
                f"ray.init(address={cluster.address!r}, namespace='drivers', "
                "logging_level=logging.ERROR, log_to_driver=False)\n")
    proc = subprocess.run([sys.executable, "-c", prologue + code], capture_output=True, text=True,
                          timeout=120, env=cluster.client_env(**cluster.other_ray_env))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_refused_driver_goes_through_the_dashboard_and_diagnoses_everything(other_ray):
    """Ray refuses rldoctor's 2.60 as a driver; rldoctor finds the dashboard in the GCS and
    runs the collectors inside the cluster, where the job's driver has the cluster's own
    (here: played) Ray. No RLD102 about the machine rldoctor runs on: the nodes agree."""
    result = run_rldoctor("check", "--address", other_ray.address, "--format", "json",
                          env=other_ray.client_env())
    assert result.code == 1, result  # the crash loop, the infeasible actor
    assert "Traceback" not in result.stderr
    assert result.seconds < 30, result
    report = result.json()
    assert report["source"]["path"] == "dashboard", report["source"]
    assert any("Ray refuses a driver whose versions differ" in n and "went through the cluster's dashboard" in n
               for n in report["notes"]), report["notes"]
    assert result.findings("RLD102") == [], result
    status = {c["code"]: c for c in report["checks"]}
    [infeasible] = result.findings("RLD103")
    assert "NeedsAccelerator 'wants-gpu'" in infeasible["message"], result
    [restarts] = [f for f in result.findings("RLD401") if "EnvSimulator" in f["message"]]
    assert restarts["evidence"]["node_id"] == other_ray.nodes[1].node_id, restarts
    # what used to need a driver on this machine is measured from inside now
    for code in ("RLD101", "RLD201", "RLD202", "RLD301", "RLD303", "RLD304"):
        assert status[code]["status"] == "ok", status[code]


def test_snapshot_through_the_dashboard_has_every_section(other_ray, tmp_path):
    path = tmp_path / "snap.json"
    done = run_rldoctor("collect", "--address", other_ray.address, "--output", str(path),
                        env=other_ray.client_env())
    assert done.code == 0, done
    assert "not collected: " not in done.stdout, done
    snap = json.loads(path.read_text())
    collectors = snap["collectors"]
    for section in ("versions", "cluster", "nodes", "demands", "actors", "workers", "hosts",
                    "network", "object_store", "training", "control_plane"):
        assert collectors[section]["status"] == "ok", (section, collectors[section])
    assert {n["node_id"] for n in snap["nodes"]} == {n.node_id for n in other_ray.nodes}
    assert snap["source"]["path"] == "dashboard"
    assert snap["source"]["requested_address"] == other_ray.address
