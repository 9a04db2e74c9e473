"""After the fact, from logs: a real cluster whose nodes each keep their own --temp-dir runs a
PPO job (fault tolerance off) while one worker node is killed with SIGKILL; the nodes' session
directories are gathered into one folder (as a log volume collected from every pod holds them)
and the cluster is stopped. `check --from FOLDER` names the failed job and the dead node;
`collect --bundle OUT --from FOLDER` makes a redacted bundle that `check --from OUT` reads back.
"""

from __future__ import annotations

import tarfile

import pytest

from conftest import run_rldoctor
from record_sessions import gather, make_cluster, node_killed

pytestmark = pytest.mark.cluster

SUBMISSION = "pm-e2e-node-killed"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    into = tmp_path_factory.mktemp("volume") / "ray-logs"
    with make_cluster() as cluster:
        node_killed(cluster, SUBMISSION, after_iterations=1)
        dead_node = cluster.nodes[2].node_id
        healthy = {n.node_id for n in cluster.nodes[:2]}
        gather(cluster, into)
        dead_ip = cluster.node_ip(2)
    return into, dead_node, healthy, dead_ip


def test_check_from_the_gathered_folder_names_the_job_and_the_dead_node(folder):
    into, dead_node, healthy, dead_ip = folder
    assert sorted(p.name for p in into.iterdir()) == ["node0", "node1", "node2"]
    out = run_rldoctor("check", "--from", str(into), "--format", "json")
    assert out.code == 1, out
    report = out.json()
    assert report["source"]["kind"] == "logs"
    assert [f["subject"] for f in out.findings("RLD101")] == [f"node:{dead_node}"]
    jobs = out.findings("RLD405")
    assert [f["subject"] for f in jobs] == [f"job:{SUBMISSION}"], out
    assert f"node {dead_node[:12]} ({dead_ip}) died" in jobs[0]["message"]
    assert jobs[0]["evidence"]["node"]["node_id"] == dead_node
    named = " ".join(f["subject"] + f["message"] for f in report["findings"])
    assert not any(node in named for node in healthy), report["findings"]
    skipped = {c["code"]: c for c in report["checks"] if c["status"] == "skipped"}
    assert "not in a cluster's logs" in skipped["RLD201"]["detail"]


def test_a_bundle_made_from_the_logs_reads_back_with_the_same_findings(folder, tmp_path):
    into, dead_node, _, _ = folder
    bundle = tmp_path / "incident.tar.gz"
    made = run_rldoctor("collect", "--bundle", str(bundle), "--from", str(into))
    assert made.code == 0, made
    assert "from the logs in" in made.stdout
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
    assert any(n.endswith(f"/logs/job-driver-{SUBMISSION}.log") for n in names), names
    assert any(f"/nodes/{dead_node}/logs/workers/worker-" in n for n in names), names
    back = run_rldoctor("check", "--from", str(bundle), "--format", "json")
    assert back.code == 1, back
    assert sorted((f["code"], f["subject"]) for f in back.findings()) == sorted(
        [("RLD101", f"node:{dead_node}"), ("RLD405", f"job:{SUBMISSION}")])
