"""`rldoctor smoke-train` for real: RLlib PPO on a real 3-node cluster, and on a local Ray it starts.

Kept short: a lower target return on the cluster, a one-minute budget for the run
that cannot learn.
"""

from __future__ import annotations

import json
import shutil
import tempfile

import pytest

from conftest import _clean_env, run_rldoctor
from localcluster import three_nodes


@pytest.mark.cluster
@pytest.mark.slow
def test_smoke_train_learns_across_three_nodes(tmp_path):
    plot, record = tmp_path / "curve.png", tmp_path / "run.json"
    with three_nodes() as cluster:
        result = run_rldoctor("smoke-train", "--address", cluster.address, "--format", "json",
                              "--target-return", "100", "--time-budget", "150",
                              "--plot", str(plot), "--record", str(record),
                              env=cluster.client_env(), timeout=300)
        node_ids = {n.node_id for n in cluster.nodes}
        node_ips = {cluster.node_ip(i) for i in range(len(cluster.nodes))}
    assert result.code == 0, result
    report = result.json()
    assert report["schema"] == "rldoctor.report/v1"
    assert report["summary"]["status"] in ("ok", "info"), result
    assert not [f for f in report["findings"] if f["severity"] == "fail"], result
    assert {c["code"] for c in report["checks"]} == {"RLD601", "RLD602", "RLD603", "RLD604"}
    fig = report["figures"]
    assert fig["outcome"] == "reached" and fig["reached_target"] is True
    assert fig["best_return"] >= 100
    assert fig["num_env_runners"] == 3 and fig["alive_nodes"] == 3
    # env runners really ran on more than one node, and on this cluster's nodes
    assert fig["env_runner_nodes"] >= 2, fig["env_runners"]
    assert {r["node_id"] for r in fig["env_runners"]} <= node_ids
    assert all(r["node_ip"] in node_ips for r in fig["env_runners"])
    # figures present and sane
    assert 0 < fig["startup_s"] < fig["seconds_to_target"] < 150
    assert 0 < fig["iteration_s_mean"] <= fig["iteration_s_p95"] + 1e-9
    assert fig["iteration_s_p95"] < 60
    assert 50 < fig["env_steps_per_s"] < 100_000
    assert fig["steps_to_target"] == fig["env_steps_sampled"] > 0
    assert fig["iterations"] == len(fig["curve"]) >= 1
    assert 0 < fig["learner_update_s_mean"] < fig["iteration_s_p95"] + 1
    assert 0 <= fig["weight_sync_s_mean"] < 5
    assert not fig["started_local_ray"]
    elapsed = [p["elapsed_s"] for p in fig["curve"]]
    assert elapsed == sorted(elapsed)
    # the checkpoint round trip: saved, restored in a fresh Algorithm, acted with
    ckpt = fig["checkpoint"]
    assert ckpt["status"] == "ok", ckpt
    assert len(ckpt["returns"]) == 5 and ckpt["mean_return"] >= 50
    # live progress on stderr, clean JSON on stdout
    assert "iter   1" in result.stderr and "env runners on" in result.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the recording is a snapshot that `check --from` diagnoses the same way
    recorded = json.loads(record.read_text())
    assert recorded["schema"] == "rldoctor.snapshot/v1" and recorded["smoke"]["curve"]
    again = run_rldoctor("check", "--from", str(record), "--only", "RLD601,RLD602,RLD603",
                         "--format", "json")
    assert again.code == 0, again
    assert [c["status"] for c in again.json()["checks"]] == ["ok", "ok", "ok"]


@pytest.mark.slow
def test_lr_zero_on_a_local_ray_fails_with_rld603_and_rld601(tmp_path):
    """No cluster runs (private RAY_TMPDIR, no RAY_ADDRESS): rldoctor starts a local Ray and says so."""
    env = _clean_env()
    ray_tmp = tempfile.mkdtemp(prefix="rls-", dir="/tmp")  # Ray's socket paths must stay short
    env["RAY_TMPDIR"] = ray_tmp
    try:
        result = run_rldoctor("smoke-train", "--lr", "0", "--time-budget", "60", "--format", "json",
                              env=env, timeout=240)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert result.code == 1, result
    assert "started a local Ray instance" in result.stderr
    report = result.json()
    assert report["figures"]["started_local_ray"] is True
    assert report["figures"]["outcome"] == "missed"
    codes = {(f["code"], f["severity"]) for f in report["findings"]}
    assert ("RLD603", "fail") in codes, result
    assert any(code == "RLD601" for code, _ in codes), result
    rld603 = next(f for f in report["findings"] if f["code"] == "RLD603")
    assert "RLD601" in rld603["evidence"]["likely_cause"]
    assert report["figures"]["best_return"] < 100
