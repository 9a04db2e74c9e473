"""One node state for every reader: the overview row, RLD101, RLD104 and the bundle manifest
agree on the same snapshot, for healthy, dead, frozen (silent), gone, probe-less and late
nodes. Edits of the recorded healthy fixture, one node changed per case."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from rldoctor import node_state
from rldoctor.bundle.manifest import node_rows
from rldoctor.engine.pipeline import Diagnosis
from rldoctor.engine.registry import load_registry
from rldoctor.snapshot import Snapshot


def _doc() -> dict:
    doc = json.loads((FIXTURES / "healthy-3node.json").read_text())
    doc["control_plane"] = {"raylets": {n["node_id"]: {"ms": 1.2, "rpc": "GetSystemConfig"}
                                        for n in doc["nodes"]}}
    doc["collectors"]["control_plane"] = {"status": "ok"}
    return doc


def _dead(doc, node_id):
    node = next(n for n in doc["nodes"] if n["node_id"] == node_id)
    node.update(alive=False, death_reason="UNEXPECTED_TERMINATION",
                death_message="health check failed")
    doc["control_plane"]["raylets"].pop(node_id)


def _frozen(doc, node_id):
    doc["versions"]["failed"][node_id] = {"kind": "silent", "error": "not waited for"}
    doc["control_plane"]["raylets"][node_id] = {"error": "deadline", "waited_s": 2.0,
                                                "rpc": "GetSystemConfig"}


def _late(doc, node_id):
    doc["versions"]["failed"][node_id] = {"kind": "silent", "error": "not waited for"}
    doc["control_plane"]["raylets"][node_id] = {"ms": 2600.0, "rpc": "GetSystemConfig"}


def _gone(doc, node_id):
    doc["versions"]["failed"][node_id] = {"kind": "timeout", "error": "no answer within 8s"}
    doc["object_store"]["failed"] = {node_id: "failed to connect to all addresses"}


def _no_probe(doc, node_id):
    doc["versions"]["failed"][node_id] = {"kind": "timeout", "error": "no answer within 8s"}


CASES = {  # edit: (overview state, RLD101 severity or None, RLD104 finding on the node)
    "healthy": (lambda doc, node_id: None, "ALIVE", None, False),
    "dead": (_dead, "DEAD", "fail", False),
    "frozen": (_frozen, "NOT ANSWERING", "fail", False),
    "gone": (_gone, "NOT ANSWERING", "fail", False),
    "no_probe": (_no_probe, "NOT ANSWERING", "warn", False),
    "late": (_late, "ALIVE", None, True),  # 2.6 s: over RLD104's bar
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_overview_rld101_rld104_and_manifest_agree_on_a_node(case):
    edit, state, rld101, rld104 = CASES[case]
    doc = _doc()
    node_id = doc["nodes"][2]["node_id"]
    edit(doc, node_id)
    report = Diagnosis.every_check(load_registry(include_plugins=False)).run(
        Snapshot(doc), {"kind": "snapshot", "file": "edited"})
    rows = {r["node_id"]: r for r in report.cluster["rows"]}
    mine = [f for f in report.findings if f.subject == f"node:{node_id}"]

    assert rows[node_id]["state"] == state
    assert [f.severity.label for f in mine if f.code == "RLD101"] == ([rld101] if rld101 else [])
    assert any(f.code == "RLD104" for f in mine) == rld104
    manifest = {r["node_id"]: r for r in node_rows(doc, [], doc.get("hosts") or {})}
    assert manifest[node_id]["state"] == state
    # the other nodes are untouched by one node's trouble
    assert {r["state"] for n, r in rows.items() if n != node_id} == {"ALIVE"}
    # a node in any state but ALIVE is named by RLD101 (a late one by RLD104 only)
    assert (state == "ALIVE") == (not [f for f in mine if f.code == "RLD101"])


def test_the_late_raylet_is_one_thing_in_the_whole_report():
    """The old contradiction: NOT ANSWERING in the overview while RLD101 skipped it."""
    doc = _doc()
    node_id = doc["nodes"][1]["node_id"]
    _late(doc, node_id)
    decided = node_state.of_id(doc, node_id)
    assert (decided.state, decided.kind) == ("ALIVE", "late") and "2600 ms" in decided.why
    report = Diagnosis.every_check(load_registry(include_plugins=False)).run(
        Snapshot(doc), {"kind": "snapshot", "file": "edited"})
    row = next(r for r in report.cluster["rows"] if r["node_id"] == node_id)
    assert row["state"] == "ALIVE" and row["findings"] == ["RLD104"]
    [slow] = [f for f in report.findings if f.code == "RLD104"]
    assert "2600 ms" in slow.message and "figures, which were not waited for" in slow.message
    assert not [f for f in report.findings if f.code == "RLD101"]


def test_a_probe_that_answered_with_an_error_leaves_the_node_alive():
    doc = _doc()
    node_id = doc["nodes"][1]["node_id"]
    doc["versions"]["failed"][node_id] = {"kind": "error", "error": "MemoryError: killed"}
    assert node_state.of_id(doc, node_id).state == "ALIVE"
    doc["versions"]["failed"][node_id]["error"] = "ray.exceptions.ActorDiedError: gone"
    assert node_state.of_id(doc, node_id).state == "NOT ANSWERING"


def test_a_nodes_row_names_its_raylets_socket_the_stem_of_its_raylet_logs():
    """Nodes sharing one log folder write raylet.out, raylet.1.out, ... named like their
    raylet's socket: the row keeps that name, so a node's own raylet lines are read (RLD106)."""
    from rldoctor.cluster.nodes import rows

    table = [{"NodeID": "ab" * 28, "Alive": True, "NodeManagerAddress": "10.0.0.2",
              "RayletSocketName": "/tmp/ray/session_x/sockets/raylet.2", "Resources": {}},
             {"NodeID": "cd" * 28, "Alive": True, "NodeManagerAddress": "10.0.0.3",
              "Resources": {}}]
    found = {r["node_id"]: r["raylet_socket"] for r in rows(table, {})}
    assert found == {"ab" * 28: "raylet.2", "cd" * 28: None}
