"""End to end on Ray 2.40: the failed training whose env raises, diagnosed after the fact.

A 3-node cluster started from a venv of Ray 2.40.0 (tests/ray_venvs.py), the head without CPUs,
runs the user's PPO job (tests/ppo_job.py with the venv's own RLlib, restarts off) submitted
with `ray job submit`; env runner 1's env raises RuntimeError("warehouse sensor 7 returned
garbage: ...") in step(). Ray 2.40's RLlib does not end that runner: it re-raises the error in
the driver as `RayTaskError(RuntimeError): ray::SingleAgentEnvRunner.apply() (pid=..., ip=...)`
with the runner's traceback after it. RLD405 must quote the user's exception and the user's
innermost frame (ppo_job.py, read_the_sensor), not that header nor the driver's own frame,
through the cluster's dashboard address (rldoctor's side is the pinned Ray: the collectors run
inside the cluster) and from the head's session directory once the cluster is gone.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from conftest import run_rldoctor
from ray_venvs import ray_venv
from record_sessions import env_raises, gather, make_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SID = "pm-env-raises"
EXCEPTION = "RuntimeError: warehouse sensor 7 returned garbage: b'\\xff\\x00' at step"


def _runners(cluster) -> list[dict]:
    """The job's env runners as the cluster's own state API lists them (pid, node)."""
    url = (f"{cluster.dashboard_url}/api/v0/actors?limit=1000&detail=1"
           "&filter_keys=class_name&filter_predicates=%3D&filter_values=SingleAgentEnvRunner")
    with urllib.request.urlopen(url, timeout=30) as reply:
        doc = json.load(reply)
    rows = doc["data"]["result"]["result"]
    return [{"pid": r.get("pid"), "node_id": r.get("node_id"), "actor_id": r.get("actor_id")}
            for r in rows]


@pytest.fixture(scope="module")
def failed(tmp_path_factory):
    cluster = make_cluster(bin_dir=ray_venv("2.40.0"), own_temp_dirs=False, nodes=3,
                           token_auth=False)
    volume = tmp_path_factory.mktemp("volume") / "ray-logs"
    with cluster:
        env_raises(cluster)
        runners = _runners(cluster)
        live = run_rldoctor("check", "--address", cluster.dashboard_url, "--format", "json",
                            env=cluster.client_env(), timeout=240)
        head = cluster.nodes[0].node_id
        gather(cluster, volume)
    return {"live": live, "runners": runners, "head": head, "volume": volume}


def _assert_root_cause(result, runners: list[dict], head: str) -> dict:
    found = [f for f in result.findings("RLD405") if f["subject"] == f"job:{SID}"]
    assert len(found) == 1, result
    f = found[0]
    message, ev = f["message"], f["evidence"]
    assert f["severity"] == "fail"
    assert EXCEPTION in message, message
    assert "ppo_job.py:" in message and "in read_the_sensor" in message, message
    for wrong in ("ray::", "^^^", "in main"):  # the RayTaskError header, Python's carets, the driver's frame
        assert wrong not in message, (wrong, message)
    assert ev["root_cause"] == "user_error" and ev["submission_id"] == SID
    assert ev["exception"]["type"] == "RuntimeError"
    assert ev["exception"]["frame"]["func"] == "read_the_sensor"
    assert ev["exception"]["frame"]["file"].endswith("ppo_job.py")
    worker = ev["worker"]
    assert worker["class_name"] == "SingleAgentEnvRunner"
    assert worker["pid"] in {r["pid"] for r in runners}, (worker, runners)
    assert worker["node_id"] != head and head[:12] not in message
    assert "read_the_sensor" in f["fix"]
    return f


def test_ray_240_failed_job_through_its_dashboard_address(failed):
    result = failed["live"]
    assert result.code == 1, result
    assert result.json()["source"]["kind"] != "logs"
    _assert_root_cause(result, failed["runners"], failed["head"])


def test_ray_240_session_directory_read_offline_gives_the_same_root_cause(failed):
    out = run_rldoctor("check", "--from", str(failed["volume"]), "--format", "json")
    assert out.code == 1, out
    assert out.json()["source"]["kind"] == "logs"
    offline = _assert_root_cause(out, failed["runners"], failed["head"])
    live = [f for f in failed["live"].findings("RLD405") if f["subject"] == f"job:{SID}"][0]
    same = ("type", "message", "frame")
    assert ({k: offline["evidence"]["exception"][k] for k in same}
            == {k: live["evidence"]["exception"][k] for k in same})
    assert offline["evidence"]["worker"]["pid"] == live["evidence"]["worker"]["pid"]
