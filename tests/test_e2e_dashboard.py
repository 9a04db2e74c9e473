"""End to end: a cluster reached only through one forwarded dashboard port.

A 3-node Ray cluster (the pinned Ray) lives in a network namespace of its own; the test,
like a laptop with `kubectl port-forward svc/<cluster>-head-svc 8265`, reaches it through
one forwarded port and nothing else (tests/portforward.py). `rldoctor check --address
http://127.0.0.1:<port>` must diagnose it as the GCS path does from inside the namespace,
a crash-looping actor included, without importing ray on the client, and leave no job and
no actor behind. Token authentication is on: no token and a wrong token are one line each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import pytest

from conftest import check_json, run_rldoctor
from faults import actor_that_crashes_three_times
from localcluster import LocalCluster, NodeSpec
from netns import Hosts, missing_tools
from portforward import PortForward
from test_e2e_reliability import wait_clean

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def hosts():
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    assert missing_tools() is None, missing_tools()
    with Hosts(1) as made:
        yield made


@pytest.fixture(scope="module")
def cluster(hosts):
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"},
                      command_prefix=hosts.prefix(0)) for _ in range(3)]
    with LocalCluster(specs) as made:
        yield made


@pytest.fixture(scope="module")
def forwarded(cluster, hosts):
    with PortForward(hosts.prefix(0), "127.0.0.1", cluster.dashboard_port) as fwd:
        yield fwd


@pytest.fixture(scope="module")
def crash_loop(cluster):
    return actor_that_crashes_three_times(cluster, cluster.nodes[2].node_id)


def laptop_env(cluster, **extra) -> dict:
    """The test's own namespace, with only the token file of the cluster."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(cluster.home)
    env["RAY_AUTH_TOKEN_PATH"] = str(cluster.token_path)
    env.update(extra)
    return env


def check_through_dashboard(cluster, url: str, out) -> tuple[int, dict, list[str]]:
    """The real CLI, in a Python that reports afterwards whether ray was ever imported."""
    code = ("import sys\nfrom rldoctor.cli import main\n"
            f"try:\n    main(['check', '--address', {url!r}, '--format', 'json', "
            f"'--output', {str(out)!r}])\nexcept SystemExit as exc:\n"
            "    print('EXIT', exc.code, 'RAY', 'ray' in sys.modules, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=180, env=laptop_env(cluster))
    last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    assert last.startswith("EXIT"), proc.stderr[-3000:]
    _, exit_code, _, ray_imported = last.split()
    assert ray_imported == "False", "the client of the dashboard path imported ray"
    return int(exit_code), json.loads(out.read_text()), proc.stderr.splitlines()[:-1]


def rldoctor_jobs(cluster, url: str) -> list[dict]:
    req = urllib.request.Request(url + "/api/jobs/", headers={
        "Authorization": f"Bearer {cluster.token}", "User-Agent": "rldoctor-tests"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        jobs = json.load(resp)
    return [j for j in jobs if (j.get("submission_id") or "").startswith("rldoctor-")]


def warn_fail(report: dict) -> set[tuple[str, str]]:
    return {(f["code"], f["subject"]) for f in report["findings"] if f["severity"] in ("warn", "fail")}


def test_the_dashboard_port_alone_diagnoses_like_the_gcs_path(cluster, forwarded, crash_loop,
                                                              tmp_path):
    inside = check_json(cluster)  # the GCS path, run inside the cluster's namespace
    code, report, _ = check_through_dashboard(cluster, forwarded.url, tmp_path / "r.json")
    assert code == inside.code, (code, inside)
    # every node, each with its own row
    ids = {n.node_id for n in cluster.nodes}
    rows = report["cluster"]["rows"]
    assert {row["node_id"] for row in rows} == ids, report["cluster"]
    # measured from inside the cluster: round trips and transfers, as on the GCS path
    assert all(row["rtt_p50_ms"] is not None and row["bandwidth_mib_s"] for row in rows), rows
    assert report["cluster"]["ray_version"] == "2.60.0"
    # the fault, on the right actor
    restarts = [f for f in report["findings"] if f["code"] == "RLD401"]
    assert restarts and any(crash_loop in f["subject"] for f in restarts), report["findings"]
    # the same warn/fail codes as the GCS path
    assert warn_fail(report) == warn_fail(inside.json()), (report["findings"], inside)
    # the report says which path examined the cluster and with which Ray
    assert report["source"]["path"] == "dashboard"
    assert report["source"]["cluster_ray_version"] == "2.60.0"
    assert any("examined through the dashboard" in n for n in report["notes"])
    # nothing left behind: no job, no probe actor
    assert rldoctor_jobs(cluster, forwarded.url) == []
    assert not any(wait_clean(cluster).values())


def test_the_second_run_skips_the_upload(cluster, forwarded, tmp_path):
    _, report, _ = check_through_dashboard(cluster, forwarded.url, tmp_path / "r.json")
    assert any("already on the cluster" in n for n in report["notes"]), report["notes"]
    assert rldoctor_jobs(cluster, forwarded.url) == []


def test_collect_output_through_the_dashboard(cluster, forwarded, tmp_path):
    out = tmp_path / "snap.json"
    result = run_rldoctor("collect", "--address", forwarded.url, "--output", str(out),
                          env=laptop_env(cluster))
    assert result.code == 0, result
    doc = json.loads(out.read_text())
    assert doc["schema"] == "rldoctor.snapshot/v1" and len(doc["nodes"]) == 3
    assert doc["collectors"]["hosts"]["status"] == "ok" and len(doc["hosts"]) == 3
    assert cluster.token not in out.read_text() + result.stdout + result.stderr
    assert rldoctor_jobs(cluster, forwarded.url) == []


@pytest.mark.parametrize("token", [None, "not-this-clusters-token-42"])
def test_token_auth_no_token_or_wrong_token(cluster, forwarded, token):
    env = laptop_env(cluster)
    env.pop("RAY_AUTH_TOKEN_PATH")
    if token:
        env["RAY_AUTH_TOKEN"] = token
    result = run_rldoctor("check", "--address", forwarded.url, env=env)
    lines = result.stderr.strip().splitlines()
    assert result.code == 3 and len(lines) == 1, result
    assert ("found no token" in lines[0]) if token is None else ("refused the token" in lines[0])
    assert cluster.token not in result.stdout + result.stderr
    if token:
        assert token not in result.stdout + result.stderr
    assert rldoctor_jobs(cluster, forwarded.url) == []
