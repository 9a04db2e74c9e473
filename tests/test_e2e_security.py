"""End to end: a real cluster with token authentication off and its dashboard on 0.0.0.0.

Two nodes on this machine (head 127.0.0.10, worker 127.0.0.11, or their lane's) share one network
namespace with every other test cluster running here, so the socket table each probe
reads holds other clusters' ports too: the findings must name only this cluster's
processes, and the head's GCS and dashboard only on the head. (The token cluster on
loopback, which gets neither finding, is `cluster3` in test_e2e_cluster.py.)
"""

from __future__ import annotations

import json

import pytest

from conftest import run_rldoctor
from localcluster import LocalCluster, NodeSpec

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def exposed():
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(2)]
    with LocalCluster(specs, token_auth=False, dashboard_host="0.0.0.0",
                      log_monitor=False) as cluster:
        yield cluster


def _cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode(errors="replace")


def test_auth_off_head_with_dashboard_on_every_interface_fails_701_and_702(exposed, tmp_path):
    snap_path = tmp_path / "snap.json"
    collected = run_rldoctor("collect", "--address", exposed.address, "--output", str(snap_path),
                             env=exposed.client_env())
    assert collected.code == 0, collected
    result = run_rldoctor("check", "--from", str(snap_path), "--format", "json")
    assert result.code == 1, result
    head, worker = (n.node_id for n in exposed.nodes)

    [auth] = result.findings("RLD701")
    assert auth["severity"] == "fail" and auth["subject"] == "cluster"
    assert any("answered rldoctor's call without a token" in h for h in auth["evidence"]["how_known"])
    assert f"dashboard 0.0.0.0:{exposed.dashboard_port} on node {head[:12]}" in auth["message"]

    found = {f["subject"]: f for f in result.findings("RLD702")}
    assert set(found) == {f"node:{head}", f"node:{worker}"}, result
    on_head = found[f"node:{head}"]
    assert on_head["severity"] == "fail"
    assert f"dashboard 0.0.0.0:{exposed.dashboard_port} (python dashboard.py" in on_head["message"]
    assert f"GCS [::]:{exposed.gcs_port} (gcs_server" in on_head["message"]
    assert "node " + head[:12] + f" ({exposed.node_ip(0)}, head)" in on_head["message"]
    on_worker = found[f"node:{worker}"]
    assert on_worker["severity"] == "fail" and f"({exposed.node_ip(1)})" in on_worker["message"]
    assert not {e["kind"] for e in on_worker["evidence"]["endpoints"]} & {"dashboard", "gcs"}

    # Every port named belongs to a process this cluster started, found by its own pid.
    ours = set(exposed.processes())
    endpoints = [e for f in found.values() for e in f["evidence"]["endpoints"]]
    assert endpoints and {e["pid"] for e in endpoints} <= ours
    by_kind = {e["kind"]: e for e in on_head["evidence"]["endpoints"]}
    assert "dashboard.py" in _cmdline(by_kind["dashboard"]["pid"])
    assert "gcs_server" in _cmdline(by_kind["gcs"]["pid"])

    # The ports are the ones Ray itself reports for each node.
    snap = json.loads(snap_path.read_text())
    nodes = json.loads(exposed.run_driver(
        "import json\nprint('=>', json.dumps({n['NodeID']: [n['NodeManagerPort'], "
        "n['ObjectManagerPort']] for n in ray.nodes()}))"))
    for subject, finding in found.items():
        node_id = subject.split(":", 1)[1]
        named = {e["kind"]: e["port"] for e in finding["evidence"]["endpoints"]}
        assert [named["node_manager"], named["object_manager"]] == nodes[node_id]
        table = snap["hosts"][node_id]["listening"]
        assert table["status"] == "ok" and table["duration_s"] < 2.0, table
