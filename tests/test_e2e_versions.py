"""End to end: a cluster whose Ray differs from rldoctor's, which Ray refuses as a driver.

Ray records the head's Ray and Python versions in the GCS when `ray start --head` runs
(`_write_cluster_info_to_kv`, from `ray._private.utils.compute_version_info`) and
refuses any driver or node whose own differ (`check_version_info`). A sitecustomize on
the nodes' PYTHONPATH makes every process of the cluster compute Ray "2.59.0": the head
records it, the worker node and every worker pass the comparison, and so does a user's
driver started with the same PYTHONPATH. rldoctor, with the real 2.60.0, is refused:
the check must still report RLD102 with both versions, read everything that needs no
driver (nodes and demands from the GCS, actors from the state API, the raylets' object
stores) and say which sections could not run and why.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import ray

from conftest import run_rldoctor
from faults import CRASH_THREE_TIMES
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
    with LocalCluster(specs) as cluster:
        cluster.other_ray_env = env
        worker = cluster.nodes[1].node_id
        user_driver(cluster, f"NODE = {worker!r}\n" + CRASH_THREE_TIMES + INFEASIBLE)
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


def test_refused_driver_still_reports_rld102_and_what_needs_no_driver(other_ray):
    result = run_rldoctor("check", "--address", other_ray.address, "--format", "json",
                          env=other_ray.client_env())
    assert result.code == 1, result  # a fail finding, not "nothing could be diagnosed"
    assert "Traceback" not in result.stderr
    assert result.seconds < 20, result
    report = result.json()
    [mismatch] = result.findings("RLD102")
    assert mismatch["severity"] == "fail" and mismatch["subject"] == "cluster"
    assert mismatch["evidence"]["cluster"]["ray"] == CLUSTER_RAY
    assert mismatch["evidence"]["driver"]["ray"] == ray.__version__
    assert mismatch["evidence"]["differs"] == ["ray"]
    assert f"Ray {CLUSTER_RAY}" in mismatch["message"]
    assert f"Ray {ray.__version__}" in mismatch["message"]
    assert f'ray[rllib]=={CLUSTER_RAY}' in mismatch["fix"]
    # nodes (GCS) and pending demands (GCS), named by the state API
    status = {c["code"]: c for c in report["checks"]}
    assert status["RLD101"]["status"] == "ok" and status["RLD203"]["status"] == "ok"
    [infeasible] = result.findings("RLD103")
    assert "NeedsAccelerator 'wants-gpu'" in infeasible["message"], result
    # actors from the state API: the restarting actor on the worker node
    [restarts] = [f for f in result.findings("RLD401") if "EnvSimulator" in f["message"]]
    assert restarts["evidence"]["node_id"] == other_ray.nodes[1].node_id, restarts
    assert status["RLD301"]["status"] == "ok"  # the raylets' object stores
    # what needs a driver is skipped, and says why
    for code in ("RLD201", "RLD202", "RLD303", "RLD304"):
        assert status[code]["status"] == "skipped", status[code]
        assert "need rldoctor to join as a driver" in status[code]["detail"]
        assert "RLD102" in status[code]["detail"]
    assert any("not collected: probes, hosts, network" in note for note in report["notes"])


def test_snapshot_records_which_sections_ran_without_a_driver(other_ray, tmp_path):
    path = tmp_path / "snap.json"
    done = run_rldoctor("collect", "--address", other_ray.address, "--output", str(path),
                        env=other_ray.client_env())
    assert done.code == 0, done
    assert "not collected: " in done.stdout and "probes" in done.stdout
    snap = json.loads(path.read_text())
    collectors = snap["collectors"]
    for section in ("versions", "cluster", "nodes", "demands", "actors", "workers",
                    "object_store", "training", "control_plane"):
        assert collectors[section]["status"] == "ok", (section, collectors[section])
    for section in ("probes", "hosts", "network"):
        assert collectors[section]["status"] == "unavailable"
        assert "Ray refused the driver" in collectors[section]["reason"]
    assert {n["node_id"] for n in snap["nodes"]} == {n.node_id for n in other_ray.nodes}
    assert set(snap["object_store"]["nodes"]) == {n.node_id for n in other_ray.nodes}
    assert snap["versions"]["cluster"] == {"ray": CLUSTER_RAY,
                                           "python": snap["versions"]["driver"]["python"]}
    assert snap["cluster"]["ray_version"] == CLUSTER_RAY
    assert snap["cluster"]["driver"]["joined"] is False
    assert set(snap["control_plane"]["raylets"]) == {n.node_id for n in other_ray.nodes}
