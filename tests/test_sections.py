"""The collector contract (rldoctor.cluster.sections): a section declares its name and what it
needs, is found in the modules of rldoctor.cluster, and runs once what it needs is over.

The scheduler's tests run plain functions (no cluster): the order, the parallelism, what a
failed section costs. The live collection runs it on real clusters in every e2e test."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import pytest

from rldoctor.cluster import sections
from rldoctor.cluster.sections import Context, Section, Unavailable, ordered, run
from rldoctor.engine.registry import LINT_AREA, PREFLIGHT_AREA, builtin_checks
from rldoctor.snapshot_document import NOT_FROM_A_LIVE_CLUSTER

CLUSTER = Path(__file__).resolve().parent.parent / "doctor" / "cluster"


class _Clock:
    def __init__(self):
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 3)


def _ctx() -> Context:
    return Context(None, _Clock(), None, {"collectors": {}})


def test_every_section_a_live_check_reads_is_declared_by_a_collector():
    declared = {name for name, s in sections.found().items() if s.keep}
    for check in builtin_checks():
        if check.area == LINT_AREA:
            continue
        for requirement in check.requires:
            if check.area == PREFLIGHT_AREA and requirement == PREFLIGHT_AREA:
                continue  # what `rldoctor preflight` asked the nodes (commands/preflight.py)
            alternatives = set(requirement.split("|"))
            assert alternatives & (declared | set(NOT_FROM_A_LIVE_CLUSTER)), (check.code, requirement)


def test_every_need_is_declared_and_nothing_waits_on_itself():
    found = sections.found()
    assert list(ordered(found)) == list(found)
    position = {name: i for i, name in enumerate(found)}
    for s in found.values():
        assert all(position[n] < position[s.name] for n in s.after), s


def test_the_session_wires_no_section_by_hand():
    """session.py runs what is found: a section named there, other than read back from the
    document (`doc.get("actors")`), would be wired by hand."""
    names = set(sections.found())
    tree = ast.parse((CLUSTER / "session.py").read_text())
    read_back = {id(call.args[0]) for call in ast.walk(tree)
                 if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                 and call.func.attr == "get" and call.args}
    named = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
             and isinstance(node.value, str) and id(node) not in read_back} & names
    # the phase times name the fleet's sections to say when probing was over
    assert named <= {"probes", "reach", "network", "probe_followup"}, named


def test_a_section_declared_twice_is_refused(tmp_path, monkeypatch):
    pkg = tmp_path / "twice"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for module in ("a", "b"):
        (pkg / f"{module}.py").write_text(
            "from rldoctor.cluster.sections import section\n"
            "@section('nodes')\ndef f(ctx):\n    return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="'nodes' is declared twice"):
        sections.found("twice")


def test_an_unknown_need_and_a_cycle_are_named():
    def nothing(ctx):
        return None

    with pytest.raises(ValueError, match="needs 'nodez', which no section declares"):
        ordered({"a": Section("a", nothing, needs=("nodez",))})
    with pytest.raises(ValueError, match="need each other: a, b"):
        ordered({"a": Section("a", nothing, needs=("b",)), "b": Section("b", nothing, needs=("a",)),
                 "c": Section("c", nothing)})


def test_sections_start_once_their_needs_are_over_and_run_side_by_side():
    log, lock = [], threading.Lock()

    def step(name, seconds):
        def collect(ctx):
            with lock:
                log.append(("start", name, time.monotonic()))
            time.sleep(seconds)
            with lock:
                log.append(("end", name, time.monotonic()))
            return {"from": name, "saw": sorted(k for k in ctx.doc if k != "collectors")}
        return collect

    found = {"a": Section("a", step("a", 0.4)), "b": Section("b", step("b", 0.4)),
             "c": Section("c", step("c", 0.0), needs=("a", "b"))}
    ctx = _ctx()
    run(ctx, found)
    at = {(kind, name): t for kind, name, t in log}
    # a and b side by side, not one after the other: each started before the other ended
    assert at[("start", "a")] < at[("end", "b")] and at[("start", "b")] < at[("end", "a")], log
    assert at[("start", "c")] >= max(at[("end", "a")], at[("end", "b")])
    assert ctx.doc["c"] == {"from": "c", "saw": ["a", "b"]}
    assert set(ctx.timing["sections_ended_s"]) == {"a", "b", "c"}


def test_a_failed_section_costs_its_own_entry_and_what_requires_it_says_why():
    def broken(ctx):
        raise ConnectionError("GCS went away\nsecond line")

    def gone(ctx):
        raise Unavailable("no dashboard")

    ran = []
    found = {
        "probes": Section("probes", broken, keep=False),
        "reach": Section("reach", lambda ctx: ran.append("reach"), requires=("probes",)),
        "after": Section("after", lambda ctx: ran.append("after") or {"ok": 1}, needs=("probes",)),
        "dash": Section("dash", gone),
    }
    ctx = _ctx()
    run(ctx, found)
    collectors = ctx.doc["collectors"]
    assert "probes" not in collectors and "probes" not in ctx.doc  # a step is not in the snapshot
    assert ctx.record("probes")["status"] == "error"
    assert ctx.record("probes")["error"] == "ConnectionError: GCS went away"
    assert collectors["reach"]["status"] == "unavailable" and "reach" not in ran
    assert collectors["reach"]["reason"] == \
        "needs 'probes', which did not come back (ConnectionError: GCS went away)"
    assert ctx.doc["after"] == {"ok": 1} and collectors["after"]["status"] == "ok"
    assert collectors["dash"] == {"status": "unavailable", "reason": "no dashboard",
                                  "duration_s": collectors["dash"]["duration_s"]}


def test_sections_filled_by_one_round_share_its_record():
    def probes(ctx):
        ctx.record("probes")  # the round's record exists once it is over
        return None

    def round_and_note(ctx):
        ctx.record("probes").setdefault("note", "second look: 1 node")

    found = {"probes": Section("probes", probes, keep=False),
             "followup": Section("followup", round_and_note, requires=("probes",), keep=False),
             "versions": Section("versions", lambda ctx: {"v": 1}, needs=("followup",),
                                 record_of="probes")}
    ctx = _ctx()
    run(ctx, found)
    assert ctx.doc["versions"] == {"v": 1}
    assert ctx.doc["collectors"]["versions"]["status"] == "ok"
    assert ctx.doc["collectors"]["versions"]["note"] == "second look: 1 node"

    failed = dict(found, probes=Section("probes", lambda ctx: 1 / 0, keep=False))
    ctx = _ctx()
    run(ctx, failed)
    assert "versions" not in ctx.doc
    assert ctx.doc["collectors"]["versions"]["error"].startswith("ZeroDivisionError")


def test_a_section_that_runs_alone_starts_first_and_nothing_runs_beside_it():
    """The probes' start runs alone: the sections that become ready with it wait until it is
    over, and the ones that started before it are not held back."""
    spans: dict[str, tuple[float, float]] = {}

    def timed(name, seconds):
        def collect(ctx):
            started = time.monotonic()
            time.sleep(seconds)
            spans[name] = (started, time.monotonic())
        return collect

    found = {"nodes": Section("nodes", timed("nodes", 0.05)),
             "early": Section("early", timed("early", 0.4)),
             "pings": Section("pings", timed("pings", 0.05), needs=("nodes",)),
             "fleet": Section("fleet", timed("fleet", 0.2), needs=("nodes",), alone=True),
             "facts": Section("facts", timed("facts", 0.05), needs=("nodes",))}
    run(_ctx(), found)
    fleet_start, fleet_end = spans["fleet"]
    assert spans["pings"][0] >= fleet_end and spans["facts"][0] >= fleet_end
    assert spans["early"][0] < fleet_start < spans["early"][1]  # already running: not held back
    assert spans["fleet"][0] - spans["nodes"][1] < 0.1


def test_a_snapshot_of_fewer_sections_runs_what_they_need_and_what_follows_only_if_there():
    order = []

    def step(name):
        def collect(ctx):
            order.append(name)
            return name
        return collect

    found = ordered({"a": Section("a", step("a")), "slow": Section("slow", step("slow"), needs=("a",)),
                     "b": Section("b", step("b"), needs=("a",), follows=("slow",)),
                     "other": Section("other", step("other"))})
    everything = _ctx()
    run(everything, found)
    assert order.index("slow") < order.index("b")  # all collected: b waits for slow
    order.clear()
    fewer = _ctx()
    run(fewer, sections.needed_for(found, ["b"]))
    assert order == ["a", "b"] and set(fewer.doc) == {"collectors", "a", "b"}
    with pytest.raises(ValueError, match="no section 'nope'"):
        sections.needed_for(found, ["nope"])


def test_the_preflight_snapshot_leaves_out_the_round_trips_jobs_and_actors():
    from rldoctor.cluster.preflight import Preflight

    chosen = sections.needed_for(sections.found(), Preflight.sections)
    assert {"nodes", "hosts", "versions", "autoscaler", "probes"} <= set(chosen)
    assert not {"network", "reach", "jobs", "actors", "workers", "training"} & set(chosen), chosen
