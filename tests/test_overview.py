"""The cluster overview on recorded fixtures and edits of them: figures, gaps, folding.

Also the run without a cluster (only --target / --run): the checks that need one are one
line in the table and Markdown reports, every entry still in JSON.
"""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor.engine.pipeline import Diagnosis
from rldoctor.report.overview import SHOWN_ROWS, build, shown_rows
from rldoctor.engine.registry import load_registry
from rldoctor.report.render import RENDERERS
from rldoctor.snapshot import Snapshot, load

HEALTHY = FIXTURES / "healthy-3node.json"
MiB = 2**20


def _doc(name: str = "healthy-3node") -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def _report(doc: dict):
    return Diagnosis.every_check(load_registry(include_plugins=False)).run(
        Snapshot(doc), {"kind": "snapshot", "file": "edited"})


def test_rows_carry_the_snapshot_figures():
    doc = _doc()
    ov = build(Snapshot(doc))
    assert ov["nodes"] == 3 and ov["states"] == {"ALIVE": 3} and ov["zones"] == {"zone-a": 3}
    head = ov["rows"][0]
    node_id = doc["nodes"][0]["node_id"]
    assert head["node_id"] == node_id and head["is_head"] and head["short_id"] == node_id[:12]
    assert (head["cpus_used"], head["cpus_total"]) == (0.0, 1.0)
    assert head["store_total_bytes"] == 100 * MiB and head["store_used_fraction"] == 0.0
    host = doc["hosts"][node_id]
    used = 1 - host["mem_available_bytes"] / host["mem_total_bytes"]
    assert head["memory_used_fraction"] == pytest.approx(used, abs=1e-4)
    assert head["memory_source"] == "MemTotal"
    assert head["rtt_p50_ms"] == doc["network"]["nodes"][node_id]["p50_ms"]
    assert head["bandwidth_mib_s"] == doc["network"]["nodes"][node_id]["bandwidth_mib_s"]
    assert ov["cpus_total"] == 3.0 and ov["store_total_bytes"] == 300 * MiB
    assert ov["versions_differ"] == [] and "versions" not in head
    assert ov["not_collected"] == {}


def test_table_and_markdown_open_with_the_overview_before_the_checks():
    report = _report(_doc())
    table = RENDERERS["table"](report)
    assert table.index("Cluster: 3 node(s) (3 ALIVE)") < table.index("code    check")
    assert "0/1" in table and "0.0/100.0 MiB" in table and "1.43 ms" in table
    markdown = RENDERERS["markdown"](report)
    assert markdown.index("### Cluster") < markdown.index("| code | check |")
    assert "| node | ip | head |" in markdown
    doc = json.loads(RENDERERS["json"](report))
    assert doc["cluster"]["nodes"] == 3 and len(doc["cluster"]["rows"]) == 3
    assert {"summary", "checks", "findings", "notes"} <= set(doc)  # report v1 as it was


def test_a_section_not_collected_shows_a_dash_and_why():
    doc = _doc()
    for section in ("network", "hosts", "object_store"):
        del doc[section]
        doc["collectors"][section] = {"status": "error", "error": f"TimeoutError: {section} slow"}
    report = _report(doc)
    row = report.cluster["rows"][1]
    assert row["rtt_p50_ms"] is None and row["memory_used_fraction"] is None
    assert row["store_used_bytes"] is None and row["cpus_total"] == 1.0
    assert report.cluster["not_collected"]["network"] == "TimeoutError: network slow"
    table = RENDERERS["table"](report)
    assert "not collected (shown as -): hosts: TimeoutError: hosts slow" in table
    line = next(l for l in table.splitlines() if row["short_id"] in l)
    assert line.split()[-4:] == ["-", "-", "-", "-"]  # spilled, mem %, rtt p50, MiB/s
    RENDERERS["markdown"](report)


def test_no_node_list_at_all_never_crashes():
    doc = _doc()
    del doc["nodes"]
    doc["collectors"]["nodes"] = {"status": "error", "error": "GCS unreachable"}
    report = _report(doc)
    assert report.cluster["rows"] == [] and report.cluster["not_collected"]["nodes"] == "GCS unreachable"
    assert "Cluster: 0 node(s)" in RENDERERS["table"](report)


def test_memory_is_judged_against_the_limit_that_applies():
    doc = _doc()
    node_id = doc["nodes"][1]["node_id"]
    doc["hosts"][node_id]["memory_limit"] = {"bytes": 4 * 2**30, "used_bytes": 3 * 2**30,
                                             "source": "cgroup v1 at /sys/fs/cgroup/memory/x"}
    report = _report(doc)
    row = report.cluster["rows"][1]
    assert row["memory_used_fraction"] == 0.75 and row["memory_limit_bytes"] == 4 * 2**30
    assert row["memory_source"].startswith("cgroup v1")
    assert report.cluster["memory_sources"] == ["MemTotal", "cgroup v1 at /sys/fs/cgroup/memory/x"]
    table = RENDERERS["table"](report)
    assert "75% of cgroup v1" in table and "8% of MemTotal" in table


def test_versions_are_shown_only_when_they_differ():
    report = _report(_doc("version-mismatch"))
    assert report.cluster["versions_differ"] == ["gymnasium"]
    table = RENDERERS["table"](report)
    assert "gymnasium 1.0.0" in table and "gymnasium 1.2.2" in table
    assert "versions" not in RENDERERS["table"](_report(_doc()))


def test_dead_and_silent_nodes_are_named_in_the_state_column():
    report = _report(_doc("node-dead"))
    dead = [r for r in report.cluster["rows"] if r["state"] == "DEAD"]
    assert len(dead) == 1 and dead[0]["findings"] == ["RLD101"]
    assert dead[0]["state_reason"] == "UNEXPECTED_TERMINATION"
    doc = _doc()
    silent = doc["nodes"][2]["node_id"]
    doc["versions"]["failed"] = {silent: {"kind": "timeout", "error": "no answer within 8s"}}
    row = _report(doc).cluster["rows"][2]
    assert row["state"] == "NOT ANSWERING" and row["state_reason"] == "no answer within 8s"


def _big(count: int) -> dict:
    """The healthy fixture grown to `count` nodes: copies of worker 1, every one measured."""
    doc = _doc()
    template = doc["nodes"][1]
    tid = template["node_id"]
    for i in range(count - 3):
        node_id = f"{i:04x}" + tid[4:]
        node = copy.deepcopy(template)
        node.update(node_id=node_id, ip=f"10.0.{i // 250}.{i % 250}")
        doc["nodes"].append(node)
        for section in ("hosts",):
            doc[section][node_id] = copy.deepcopy(doc[section][tid])
        doc["object_store"]["nodes"][node_id] = copy.deepcopy(doc["object_store"]["nodes"][tid])
        doc["network"]["nodes"][node_id] = copy.deepcopy(doc["network"]["nodes"][tid])
        doc["versions"]["nodes"][node_id] = copy.deepcopy(doc["versions"]["nodes"][tid])
    return doc


def test_hundreds_of_nodes_show_the_worst_rows_and_say_how_many_were_folded():
    doc = _big(300)
    dead, full, slow = doc["nodes"][150], doc["nodes"][200]["node_id"], doc["nodes"][250]["node_id"]
    dead.update(alive=False, state="DEAD", death_reason="UNEXPECTED_TERMINATION")
    doc["object_store"]["nodes"][full]["store"]["object_store_bytes_used"] = 95 * MiB
    doc["network"]["nodes"][slow]["p50_ms"] = 40.0
    report = _report(doc)
    ov = report.cluster
    assert len(ov["rows"]) == 300  # JSON keeps every node
    shown, folded = shown_rows(ov)
    assert len(shown) == SHOWN_ROWS and folded == 300 - SHOWN_ROWS
    assert shown[0]["is_head"]
    assert shown[1]["node_id"] == dead["node_id"]  # dead first, then the fullest store
    assert shown[2]["node_id"] == full
    assert slow in {r["node_id"] for r in shown}
    table = RENDERERS["table"](report)
    assert f"{folded} more node(s) folded (the least wrong): {folded} ALIVE" in table
    overview = table[table.index("Cluster:"):table.index("code    check")]
    every_id = {r["short_id"] for r in ov["rows"]}
    ids = [line.split()[0] for line in overview.splitlines()
           if line.split() and line.split()[0] in every_id]
    assert ids == [r["short_id"] for r in shown]
    markdown = RENDERERS["markdown"](report)
    assert f"{folded} more node(s) folded" in markdown


@pytest.mark.parametrize("path", sorted(p for p in FIXTURES.glob("*.json")
                                        if not p.name.endswith(".expected.json")), ids=lambda p: p.stem)
def test_every_fixture_gets_an_overview_in_every_format(path):
    report = Diagnosis.every_check(load_registry(include_plugins=False)).run(
        load(path), {"kind": "snapshot", "file": str(path)})
    assert report.cluster is not None and len(report.cluster["rows"]) == len(load(path).nodes)
    for render in RENDERERS.values():
        assert render(report)


def test_a_run_without_a_cluster_folds_the_checks_that_need_one():
    target = "tests/targets/lock_env.py:env_creator"
    table = run_rldoctor("check", "--target", target)
    assert table.code == 1, table
    assert "SKIPPED" not in table.stdout and "Cluster:" not in table.stdout
    line = next(l for l in table.stdout.splitlines() if "need a cluster" in l)
    count = int(line.split()[0])
    assert line.startswith(f"{count} check(s) need a cluster: give --address or --from (RLD101")
    assert "RLD501  not-serializable  FAIL" in table.stdout
    markdown = run_rldoctor("check", "--target", target, "--format", "markdown").stdout
    assert "| skipped |" not in markdown and f"{count} check(s) need a cluster" in markdown
    report = run_rldoctor("check", "--target", target, "--format", "json").json()
    skipped = [c for c in report["checks"] if c["status"] == "skipped"]
    assert len(skipped) >= count and "cluster" not in report  # every entry kept in JSON
    runs = run_rldoctor("check", "--run", str(FIXTURES / "runs" / "healthy"))
    assert "check(s) need a cluster" in runs.stdout and "SKIPPED" not in runs.stdout, runs
