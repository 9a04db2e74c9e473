"""One reader per cluster fact: the job table and the node table are each read in one module.

The jobs section, the runtime_envs section, the actors' ended jobs, the trainings and the
bundle's gatherer take their jobs from rldoctor.cluster.job_table (one read per snapshot,
shared); every node address, port, label, resource and start or end time comes from
rldoctor.cluster.nodes (the one caller of `ray.nodes()` and of the state API's `list_nodes`).
The scan is of the source: a call that names one of Ray's readers of a table, in any module
of doctor/ or checks/ but its one reader, fails here. Then the job table's sharing and its rows, on Ray's own JobState.
"""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import pytest

from rldoctor.cluster import bounded
from rldoctor.cluster.job_table import JOB_ROWS, JobTable, row

ROOT = Path(__file__).resolve().parent.parent
# the fact: (the names that read it, the one module that may)
READERS = {
    "jobs": ({"list_jobs", "get_all_job_info", "job_table"}, "doctor/cluster/job_table.py"),
    "nodes": ({"nodes", "node_table_without_driver", "get_all_node_info", "node_table",
               "list_nodes"},
              "doctor/cluster/nodes.py"),
}
# where a reader is defined, not called: Ray's private call wrapped for the nodes module
DEFINED_HERE = {"doctor/cluster/private.py": {"node_table"}}


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        # `ray.nodes()` is the node table; `snap.nodes()` and `self.nodes()` are not
        if func.attr == "nodes" and not (isinstance(func.value, ast.Name) and func.value.id == "ray"):
            return None
        return func.attr
    if isinstance(func, ast.Name):
        return None if func.id == "nodes" else func.id
    return None


def readers_outside(root: Path) -> dict[str, list[str]]:
    """{fact: ["path:line name", ...]} of calls to a table's readers outside its module."""
    found: dict[str, list[str]] = {}
    paths = sorted((root / "doctor").rglob("*.py")) + sorted((root / "checks").rglob("*.py"))
    for path in paths:
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(), rel)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            # a reader handed on (`pool.submit(list_jobs, ...)`); variables named `nodes` are not
            named = [_called_name(node)] + [n for a in node.args for n in [
                a.id if isinstance(a, ast.Name) else a.attr if isinstance(a, ast.Attribute) else None]
                if n not in ("nodes", "node_table", "job_table")]
            for fact, (names, home) in READERS.items():
                hits = [n for n in named if n in names and n not in DEFINED_HERE.get(rel, ())]
                if hits and rel != home:
                    found.setdefault(fact, []).append(f"{rel}:{node.lineno} {hits[0]}")
    return found


def test_each_table_has_one_reader():
    assert readers_outside(ROOT) == {}


def test_the_scan_finds_a_second_reader(tmp_path):
    files = {
        "doctor/cluster/job_table.py": "def f():\n    return list_jobs(limit=1)\n",
        "doctor/cluster/nodes.py": "import ray\n\ndef f():\n    return ray.nodes()\n",
        "doctor/cluster/other.py": ("import ray\nfrom ray.util.state import list_jobs\n\n"
                                    "def f(pool, snap):\n    pool.submit(list_jobs, limit=3)\n"
                                    "    snap.nodes()\n    return [n for n in ray.nodes()]\n"),
        "checks/x.py": "def g(state):\n    return state.node_table()\n",
        # the state API's node list is the node table too (a dead node's start and end times)
        "doctor/cluster/jobs.py": ("from ray.util.state import list_nodes\n\n"
                                   "def times(read):\n    return read('jobs', list_nodes, limit=9)\n"),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert readers_outside(tmp_path) == {
        "jobs": ["doctor/cluster/other.py:5 list_jobs"],
        "nodes": ["doctor/cluster/jobs.py:4 list_nodes", "doctor/cluster/other.py:7 nodes",
                  "checks/x.py:2 node_table"]}


def _job_state(**fields):
    from ray.util.state.common import JobState

    base = {"job_id": "02000000", "submission_id": "raysubmit_1", "type": "SUBMISSION",
            "status": "FAILED", "entrypoint": "python train.py", "message": "boom",
            "error_type": None, "start_time": 1000, "end_time": 2000, "metadata": {},
            "runtime_env": {}, "driver_info": None, "driver_agent_http_address": None,
            "driver_node_id": "ab" * 28, "driver_exit_code": 1}
    base.update(fields)
    known = set(getattr(JobState, "model_fields", None) or JobState.__dataclass_fields__)
    return JobState(**{k: v for k, v in base.items() if k in known})


def test_a_row_is_the_same_plain_dict_from_rays_job_state_or_a_dict():
    from ray.job_submission import JobStatus
    from ray.dashboard.modules.job.pydantic_models import DriverInfo

    state = _job_state(status=JobStatus.FAILED,
                       driver_info=DriverInfo(id="02000000", node_ip_address="10.0.0.7", pid="4242"))
    plain = row(state)
    assert plain["status"] == "FAILED" and plain["job_id"] == "02000000"
    assert plain["driver_info"] == {"id": "02000000", "node_ip_address": "10.0.0.7", "pid": "4242"}
    assert plain["driver_exit_code"] == 1 and plain["driver_node_id"] == "ab" * 28
    as_dict = row({**plain, "driver_info": dict(plain["driver_info"])})
    assert as_dict == plain
    assert row({"job_id": "03000000"})["driver_info"] == {}


class _CountedTable(JobTable):
    """The sharing under test: `_read` (Ray's list_jobs) replaced by rows counted here."""

    def __init__(self, rows, delay_s=0.0):
        super().__init__("http://127.0.0.1:1", 5)
        self.reads, self._given, self._delay = 0, rows, delay_s

    def _read(self):
        self.reads += 1
        time.sleep(self._delay)
        return [row(r) for r in self._given]


def test_the_sections_reading_side_by_side_share_one_read():
    table = _CountedTable([{"job_id": "01000000", "status": "RUNNING"}], delay_s=0.2)
    got = []
    threads = [threading.Thread(target=lambda s=s: got.append(table.rows(s)))
               for s in ("jobs", "runtime_envs", "actors", "training")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert table.reads == 1 and len(got) == 4 and all(g is got[0] for g in got)


def test_a_full_table_is_cut_for_every_section_that_read_it(monkeypatch):
    monkeypatch.setattr(bounded, "CAP", 3)
    table = _CountedTable([{"job_id": f"0{i}000000"} for i in range(3)])
    for section in ("jobs", "training"):
        bounded.take(section)
        table.rows(section)
        [cut] = bounded.take(section)
        assert cut == {"read": "list_jobs", "limit": 3, "returned": 3, "filters": []}
    table.rows(None)  # the bundle's reader: nothing recorded for a section
    assert JOB_ROWS == 10_000


def test_a_failed_read_fails_every_caller_without_reading_again():
    class Broken(_CountedTable):
        def _read(self):
            self.reads += 1
            raise TimeoutError("no answer")

    table = Broken([])
    for section in ("jobs", "actors"):
        with pytest.raises(TimeoutError):
            table.rows(section)
    assert table.reads == 1
