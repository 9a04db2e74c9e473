"""One catalogue for both sides (issue 47): a live node's probe reads its Ray logs with the
catalogue `check --from` reads a dead cluster's logs with, so the same files give the same
hits (hence the same findings) either way.

The node-side reader (rldoctor.node.fact_ray_logs.read_logs, what the probe runs over the
tails of its node's logs) is run over every node's files of the recorded corpora in
fixtures/ (users' logs and sessions that real clusters wrote) and compared, hit for hit, with
`check --from` reading that node's session directory; and the counts the live checks read
(`ray_logs.signals`: RLD106, RLD107, RLD305) are the catalogue's entries that name one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rldoctor.errors import Undiagnosable
from rldoctor.inputs.logdir import files as F
from rldoctor.inputs.logdir import read_logs
from rldoctor.node.fact_ray_logs import read_logs as read_on_the_node
from rldoctor.raylog import catalogue as C

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(p for corpus in ("userlogs", "sessions") for p in (FIXTURES / corpus).iterdir()
               if p.is_dir())
# What a hit says; `names` without the node's id and IP, which the probe knows from its own
# raylet and `--from` from the session's join.
SAID = ("entry", "code", "kind", "severity", "cause", "fix", "line", "count", "time",
        "exception", "frame", "releases", "file_kind", "consequence", "death_kind")


def _said(hit: dict) -> tuple:
    names = tuple(sorted((k, v) for k, v in hit["names"].items() if k not in ("node_id", "ip")))
    return tuple(hit.get(k) for k in SAID) + (os.path.basename(hit["file"]), names)


def _nodes(case: Path) -> list:
    top = case / "logs" if (case / "logs").is_dir() else case
    try:
        return F.find_sessions(str(top))
    except Undiagnosable:
        return []  # a tarball, standard input: no files a node holds


# The cases whose nodes' files hold no line of the catalogue (outside the GCS's events): a
# healthy session reads clean on both sides.
NO_LINES = {"healthy-ray240", "healthy-ray255", "healthy-ray260", "ray240-env-raises",
            "event-gcs-node-removed-240"}


@pytest.mark.parametrize("case", [c for c in CASES if _nodes(c)], ids=lambda c: c.name)
def test_a_nodes_logs_give_the_probe_the_hits_check_from_gives(case):
    hits = 0
    for session in _nodes(case):
        from_logs = [h for h in read_logs(session.root)["log_lines"]["items"]
                     if h["file_kind"] != "events"]  # the GCS's event files: --from only
        on_node = read_on_the_node([(None, f.path) for f in session.files if f.kind != "events"])
        assert sorted(map(_said, on_node["log_lines"]["items"])) == \
            sorted(map(_said, from_logs)), session.root
        said = {C.BY_ID[h["entry"]].signal for h in from_logs if h["entry"] in C.BY_ID}
        assert set(on_node["signals"]) == said - {""}, session.root
        hits += len(from_logs)
    assert bool(hits) != (case.name in NO_LINES)


@pytest.mark.parametrize("key, line", [
    ("workers_not_registered", "[2026-12-02 06:55:29,962 E 21496 21496] (raylet) worker_pool.cc:660: "
     "Some workers of the worker process(21717) have not registered within the timeout. The "
     "process is still alive, probably it's hanging during start."),
    ("no_available_ports", "[2026-12-02 06:55:29,962 E 21496 21496] worker_pool.cc:1: No available "
     "ports. Please specify a wider port range using --min-worker-port and --max-worker-port."),
])
def test_the_live_signals_are_catalogue_entries_and_give_hits_too(tmp_path, key, line):
    """RLD106's signals are entries of the catalogue like any other: counted for the live
    check, and a hit (code RLD106) in the live and the --from readings alike."""
    log = tmp_path / "raylet.out"
    log.write_text(line + "\n")
    read = read_on_the_node([("raylet", str(log))], node_id="ab" * 28, ip="10.0.0.7")
    assert read["signals"][key]["count"] == 1 and read["signals"][key]["file"] == "raylet.out"
    [hit] = read["log_lines"]["items"]
    assert hit["code"] == "RLD106" and hit["names"]["node_id"] == "ab" * 28
    assert hit["names"]["ip"] == "10.0.0.7"


def test_the_live_section_gathers_every_nodes_hits_but_what_a_live_check_tells():
    """The live `log_lines` section: each node's hits, in the logs' time; a runtime_env failure
    the node's probe also read from its agent's log (RLD404 names each actor, task and job from
    it) is not told twice."""
    from rldoctor.cluster.log_lines import gathered

    case = FIXTURES / "userlogs" / "runtime-env-agent-log"
    [session] = _nodes(case)
    read = read_on_the_node([(None, f.path) for f in session.files])
    assert {h["kind"] for h in read["log_lines"]["items"]} >= {"runtime-env"}
    disk = read_on_the_node([(None, str(FIXTURES / "userlogs" / "disk-full-raylet" / "logs" /
                                          "raylet.out"))], node_id="cd" * 28)
    facts = {"ab" * 28: {"host": {"ray_logs": read}}, "cd" * 28: {"host": {"ray_logs": disk}}}
    section = gathered(facts)
    assert sorted(h["code"] for h in section["items"]) == sorted(
        ["RLD305"] + [h["code"] for h in read["log_lines"]["items"]])
    times = [h["time"] for h in section["items"]]
    assert times == sorted(times) and section["files"] == 2
    read["runtime_env_failures"] = [{"what": {"pip": ["x"]}}]  # what the agent's log says
    assert [h["code"] for h in gathered(facts)["items"]] == ["RLD305"]
