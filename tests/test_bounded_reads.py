"""Every read of Ray's state the collectors make is bounded, and a read that was cut says so.

The scan is of the source (no timing): every call that names one of Ray's list functions
(`ray.util.state.list_*`, a `JobSubmissionClient().list_jobs`, the GCS's `get_all_*_info`),
called directly or handed to a helper or a thread pool, carries `limit=`; every state-API
route the dashboard code asks for by URL carries `limit=` in its query.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from rldoctor.cluster import bounded
from rldoctor.cluster.sections import Context, Section, run
from rldoctor.engine.registry import Check
from rldoctor.engine.runner import run_check
from rldoctor.model import Finding, Severity
from rldoctor.snapshot import Snapshot

ROOT = Path(__file__).resolve().parent.parent / "doctor"
FOLDERS = ("cluster", "job", "dashboard")
READS = {"list_actors", "list_workers", "list_tasks", "list_jobs", "list_objects", "list_nodes",
         "list_placement_groups", "list_runtime_envs", "list_cluster_events",
         "get_all_job_info", "get_all_actor_info", "get_all_node_info", "get_all_worker_info",
         "get_all_placement_group_info"}
# summaries are counted by Ray's server over at most its own data-source cap (10,000 rows)
UNBOUNDED_BY_DESIGN = {"summarize_actors", "summarize_tasks", "summarize_objects"}
ROUTE = re.compile(r"/api/v0/(actors|tasks|workers|jobs|objects|nodes|placement_groups|"
                   r"runtime_envs|cluster_events)\b")


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _modules():
    for folder in FOLDERS:
        yield from sorted((ROOT / folder).rglob("*.py"))


def unbounded_reads(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in READS:
                    aliases[alias.asname or alias.name] = alias.name
    names = READS | set(aliases)
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        named = [n for n in [node.func, *node.args] if _name(n) in names]
        if named and not any(k.arg == "limit" for k in node.keywords):
            bad.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {_name(named[0])}")
    return bad


def unbounded_routes(path: Path) -> list[str]:
    bad, tree = [], ast.parse(path.read_text(), str(path))
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in parts:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if ROUTE.search(text) and "limit=" not in text:
            bad.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {text[:60]!r}")
    return bad


def test_every_state_read_of_the_collectors_carries_a_limit():
    modules = list(_modules())
    assert len(modules) > 20  # the scan sees the collectors
    bad = [b for path in modules for b in unbounded_reads(path) + unbounded_routes(path)]
    assert not bad, "reads without limit=:\n" + "\n".join(bad)


def test_the_scan_finds_an_unbounded_read(tmp_path):
    source = tmp_path / "collector.py"
    source.write_text(
        "from ray.util.state import list_tasks as lt, list_actors\n"
        "def f(pool, address):\n"
        "    lt(address=address, filters=[])\n"
        "    pool.submit(list_actors, address=address)\n"
        "    list_actors(address=address, limit=10)\n"
        "    url = f'/api/v0/tasks?detail=1&filter_keys=x'\n"
        "    ok = '/api/v0/actors?limit=10'\n")
    old = globals()["ROOT"]
    globals()["ROOT"] = tmp_path.parent
    try:
        reads = unbounded_reads(source)
        routes = unbounded_routes(source)
    finally:
        globals()["ROOT"] = old
    assert [r.split()[-1] for r in reads] == ["lt", "list_actors"]
    assert [r.split(":")[1].split()[0] for r in reads] == ["3", "4"]
    assert len(routes) == 1 and "tasks" in routes[0]


def _collect(doc: dict, name: str, func) -> None:
    """One section run by the collection's scheduler, as a live snapshot runs it."""
    run(Context(None, None, None, doc), {name: Section(name, lambda ctx: func())})


def _rows(limit, n, filters=None, address=None):
    return list(range(min(limit, n)))


def test_a_read_that_fills_its_limit_is_recorded_in_its_section():
    def section():
        bounded.listed("actors", _rows, limit=5, n=9, filters=[("state", "=", "DEAD")])
        bounded.listed("actors", _rows, limit=5, n=3)  # not full: not cut
        return {"items": []}

    doc = {"collectors": {}}
    _collect(doc, "actors", section)
    assert doc["collectors"]["actors"]["truncated"] == [
        {"read": "_rows", "limit": 5, "returned": 5, "filters": ["state = DEAD"]}]
    assert doc["actors"] == {"items": []}
    _collect(doc, "workers", lambda: {"dead": []})
    assert "truncated" not in doc["collectors"]["workers"]


def test_the_cap_lowers_every_limit_and_a_failed_section_keeps_its_cut(monkeypatch):
    monkeypatch.setattr(bounded, "CAP", 2)

    def section():
        assert bounded.listed("workers", _rows, limit=1000, n=9) == [0, 1]
        raise RuntimeError("later step broke")

    doc = {"collectors": {}}
    _collect(doc, "workers", section)
    record = doc["collectors"]["workers"]
    assert record["status"] == "error" and record["truncated"][0]["limit"] == 2
    assert bounded.take("workers") == []


def test_a_check_on_a_cut_section_says_so_in_its_notes():
    def look(snap, params):
        yield Finding(code="", severity=Severity.WARN, subject="a", message="m")

    check = Check(code="RLD999", name="t", area="workers", requires=("actors|workers",),
                  func=look)
    cut = {"read": "list_actors", "limit": 1000, "returned": 1000, "filters": ["state = DEAD"]}
    snap = Snapshot({"collectors": {"workers": {"status": "ok", "truncated": [cut]}},
                     "workers": {"dead": []}})
    result = run_check(check, snap)
    assert len(result.findings) == 1
    assert [n.subject for n in result.notes] == ["snapshot.workers"]
    assert "list_actors (state = DEAD) returned its limit of 1000 rows" in result.notes[0].message
    assert "workers read cut" in result.detail
    clean = run_check(check, Snapshot({"collectors": {"workers": {"status": "ok"}},
                                       "workers": {"dead": []}}))
    assert clean.notes == []


# -- task reads: each scans the GCS's whole task history, so there are as few as can be --------

class _Task:
    def __init__(self, state, error_type=None, type="NORMAL_TASK"):
        self.state, self.error_type, self.type = state, error_type, type


def test_the_task_table_is_read_once_and_sliced_and_a_full_one_gives_way_to_the_own_read():
    from rldoctor.cluster.task_table import TaskTable, failed_with

    calls = []

    def list_tasks(**kwargs):
        calls.append(kwargs)
        return [_Task("FAILED", "OUT_OF_MEMORY"), _Task("FAILED", "RUNTIME_ENV_SETUP_FAILED"),
                _Task("RUNNING", type="ACTOR_TASK")]

    table = TaskTable("http://dashboard", 5, list_tasks)
    oom = table.select(failed_with("OUT_OF_MEMORY"), own_read=lambda: pytest.fail("not needed"))
    env = table.select(failed_with("RUNTIME_ENV_SETUP_FAILED"), own_read=lambda: [])
    assert [t.error_type for t in oom + env] == ["OUT_OF_MEMORY", "RUNTIME_ENV_SETUP_FAILED"]
    assert len(calls) == 1 and calls[0]["filters"] == [("state", "!=", "FINISHED")]
    assert calls[0]["limit"] == 10_000

    full = TaskTable("http://dashboard", 5, lambda **kw: [_Task("FAILED")] * kw["limit"])
    assert full.select(failed_with("OUT_OF_MEMORY"), own_read=lambda: ["own"]) == ["own"]
    broken = TaskTable("http://dashboard", 5, lambda **kw: 1 / 0)
    assert broken.select(failed_with("OUT_OF_MEMORY"), own_read=lambda: ["own"]) == ["own"]


def test_calls_in_flight_are_read_for_the_jobs_of_live_actors_only():
    from rldoctor.cluster.task_table import jobs_with_live_actors

    actors = {"live_truncated": False, "items": [
        {"state": "ALIVE", "job_id": "02000000"}, {"state": "ALIVE", "job_id": "03000000"},
        {"state": "RESTARTING", "job_id": "03000000"}, {"state": "DEAD", "job_id": "01000000"}]}
    assert jobs_with_live_actors(actors) == ["03000000", "02000000"]
    assert jobs_with_live_actors({"live_truncated": False, "items": [
        {"state": "DEAD", "job_id": "01000000"}]}) == []  # a history, nothing live: no read
    assert jobs_with_live_actors({**actors, "live_truncated": True}) is None  # all tasks, then
    assert jobs_with_live_actors(None) is None


def test_a_few_jobs_are_read_one_by_one_and_many_or_unknown_ones_in_one_read():
    from rldoctor.cluster.task_table import MAX_JOB_READS, by_job

    def read_job(job):
        return [f"{job}-task"]

    def read_all():
        return ["every task"]

    assert by_job(["a", "b"], read_job, read_all) == ["a-task", "b-task"]
    assert by_job([], read_job, read_all) == []  # nothing can run: no read at all
    many = [str(i) for i in range(MAX_JOB_READS + 1)]
    assert by_job(many, read_job, read_all) == ["every task"]
    assert by_job(None, read_job, read_all) == ["every task"]


def test_the_bundle_reads_running_calls_of_running_jobs_and_jobs_with_live_actors(monkeypatch):
    from concurrent.futures import Future

    from rldoctor.cluster.gather import _jobs_running_calls, _list_running

    jobs = Future()
    jobs.set_result([{"job_id": "01000000", "status": "SUCCEEDED"},
                     {"job_id": "04000000", "status": "RUNNING"},
                     {"job_id": None, "status": "PENDING"}])
    actors = {"live_truncated": False, "items": [
        {"state": "ALIVE", "job_id": "02000000"}, {"state": "DEAD", "job_id": "01000000"}]}
    assert _jobs_running_calls(jobs, actors) == ["02000000", "04000000"]
    assert _jobs_running_calls(jobs, {**actors, "live_truncated": True}) is None
    broken = Future()
    broken.set_exception(TimeoutError("no answer"))
    assert _jobs_running_calls(broken, actors) is None

    import ray.util.state

    seen = []

    def list_tasks(**kwargs):
        seen.append(kwargs["filters"])
        assert kwargs["limit"] == 10_000
        return []

    monkeypatch.setattr(ray.util.state, "list_tasks", list_tasks)
    assert _list_running("http://dashboard", "04000000", ["02000000", "04000000"]) == []
    assert seen == [[("job_id", "=", "02000000"), ("state", "=", "RUNNING")]]  # not its own
    seen.clear()
    _list_running("http://dashboard", "04000000", None)
    assert seen == [[("state", "=", "RUNNING")]]


def test_failed_tasks_are_read_for_runtime_envs_only_when_an_agent_logged_a_failure():
    from types import SimpleNamespace

    from rldoctor.cluster.runtime_envs import agents_logged_a_failure

    def fleet(*logs):
        return SimpleNamespace(facts={f"n{i}": {"host": {"ray_logs": log}}
                                      for i, log in enumerate(logs)})

    quiet = {"status": "ok", "runtime_env_failures": []}
    assert not agents_logged_a_failure(fleet(quiet, quiet), ["n0", "n1"])
    failed = {"status": "ok", "runtime_env_failures": [{"line": "Failed to create runtime env"}]}
    assert agents_logged_a_failure(fleet(quiet, failed), ["n0", "n1"])
    assert agents_logged_a_failure(fleet(quiet), ["n0", "n1"])  # n1's probe did not answer
    unread = {"status": "unavailable"}
    assert agents_logged_a_failure(fleet(unread), ["n0"])
