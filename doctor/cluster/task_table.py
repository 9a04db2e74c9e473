"""Ray's unfinished tasks, read once per snapshot and shared by the sections that need them.

Every task read costs the GCS a scan of all the task events it keeps (up to 100,000 on a
cluster that has run a while), whatever its filters: about 0.6 s each on the 3-node test
cluster after 100,000 tasks, for a read that returns nothing. Three sections want a slice
of the same rows: the dead workers (tasks failed OUT_OF_MEMORY), the runtime_envs (tasks
failed RUNTIME_ENV_SETUP_FAILED) and the trainings (actor calls in flight). One read of
every task that is not FINISHED (the GCS filters on state) serves all three; each takes
its slice with `select`. A shared read that came back full may lack rows a slice needs:
the section then makes its own narrower read, as bounded as before.
Standard library and ray only: this ships to the cluster.
"""

from __future__ import annotations

import threading
from typing import Callable

from rldoctor.cluster import bounded
from rldoctor.cluster.sections import section

TASK_ROWS = 10_000  # the state API server's cap (RAY_MAX_LIMIT_FROM_API_SERVER)
NOT_FINISHED = [("state", "!=", "FINISHED")]


class TaskTable:
    """The unfinished tasks of one cluster, read at most once (`select`)."""

    def __init__(self, address: str, timeout_s: float, list_tasks: Callable | None = None):
        self.address = address
        self.timeout_s = timeout_s
        self._list_tasks = list_tasks  # ray.util.state.list_tasks unless given
        self._lock = threading.Lock()
        self._rows: list | None = None
        self._failed = False
        self._limit = bounded.limit_of(TASK_ROWS)

    def _read_once(self) -> list | None:
        with self._lock:
            if self._rows is None and not self._failed:
                list_tasks = self._list_tasks
                if list_tasks is None:
                    from ray.util.state import list_tasks
                try:
                    self._rows = list_tasks(address=self.address, detail=True, limit=self._limit,
                                            timeout=max(1, int(self.timeout_s)),
                                            raise_on_missing_output=False, filters=NOT_FINISHED)
                except Exception:
                    self._failed = True
        return self._rows

    def select(self, keep: Callable[[object], bool], own_read: Callable[[], list]) -> list:
        """The shared rows `keep` says yes to; `own_read()` (the caller's bounded, filtered
        read) when the shared read failed or came back full (it may lack some of them)."""
        rows = self._read_once()
        if rows is None or len(rows) >= self._limit:
            return own_read()
        return [t for t in rows if keep(t)]


# Tasks in flight are read job by job (the GCS's job index finds one job's tasks without
# scanning the others) for up to this many jobs; past it, in one read of them all.
MAX_JOB_READS = 8


def jobs_with_live_actors(actors: dict | None) -> list[str] | None:
    """The jobs with actors not dead (the actors section), most actors first; None when the
    section is missing or its live actors were cut (any job may then have some)."""
    if not actors or actors.get("live_truncated", True):
        return None
    count: dict[str, int] = {}
    for actor in actors.get("items") or []:
        if actor.get("state") != "DEAD" and actor.get("job_id"):
            count[actor["job_id"]] = count.get(actor["job_id"], 0) + 1
    return sorted(count, key=lambda job: (-count[job], job))


def by_job(job_ids: list[str] | None, read_job: Callable[[str], list],
           read_all: Callable[[], list]) -> list:
    """`read_job(job)` for each of `job_ids` when they are known and few (MAX_JOB_READS),
    else `read_all()`: reads of a few jobs cost the GCS what those jobs hold, one read of
    every task costs a scan of the whole history."""
    if job_ids is not None and len(job_ids) <= MAX_JOB_READS:
        return [t for job in job_ids for t in read_job(job)]
    return read_all()


def failed_with(error_type: str) -> Callable[[object], bool]:
    """Tasks that failed with `error_type` (an ErrorType name such as OUT_OF_MEMORY)."""
    return lambda t: t.state == "FAILED" and t.error_type == error_type


@section("task_table", needs=("cluster",), keep=False)
def task_table_step(ctx) -> "TaskTable":
    """The one task read of the snapshot, made by the first section that asks for it."""
    from rldoctor.cluster.cluster_facts import state_api_address

    return TaskTable(state_api_address(ctx.doc.get("cluster")), ctx.budget.left(10))
