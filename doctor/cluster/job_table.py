"""Ray's job table, read once per snapshot and shared by every section that needs it.

The jobs section (RLD405, the timeline), the runtime_envs section (jobs whose runtime_env
could not be built), the actors section (which jobs have ended), the trainings (a
training's job and driver) and the bundle's gatherer all read the same table. One
`JobTable` per collection reads it once, on the first call, under a lock (the sections
read side by side in threads), and hands each caller the same rows as plain dicts:
`row(job)` is the one place that turns Ray's JobState (or the dict of an older Ray) into
them. The read is bounded (JOB_ROWS, the state API server's own cap); a table that came back
full is recorded as cut for every section that read it (rldoctor.cluster.bounded).
Standard library and ray only: this ships to the cluster.
"""

from __future__ import annotations

import threading

from rldoctor.cluster import bounded
from rldoctor.cluster.sections import section

JOB_ROWS = 10_000  # the state API server's cap (RAY_MAX_LIMIT_FROM_API_SERVER)
_FIELDS = ("job_id", "submission_id", "type", "status", "error_type", "entrypoint", "message",
           "start_time", "end_time", "driver_exit_code", "driver_node_id", "runtime_env",
           "metadata")


def _plain(value):
    return getattr(value, "value", value)  # an enum member (JobStatus.FAILED) as its value


def row(job) -> dict:
    """One job as a plain dict of Ray's field names; `driver_info` as {id, node_ip_address, pid}."""
    get = job.get if isinstance(job, dict) else (lambda key: getattr(job, key, None))
    out = {key: _plain(get(key)) for key in _FIELDS}
    driver = get("driver_info")
    if driver is not None and not isinstance(driver, dict):
        driver = {key: getattr(driver, key, None) for key in ("id", "node_ip_address", "pid")}
    out["driver_info"] = driver or {}
    return out


class JobTable:
    """The job table of one cluster, read at most once (`rows`)."""

    def __init__(self, address: str, timeout_s: float):
        self.address = address
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._rows: list[dict] | None = None
        self._error: BaseException | None = None
        self._limit = bounded.limit_of(JOB_ROWS)

    def rows(self, section: str | None) -> list[dict]:
        """Every job Ray keeps (at most JOB_ROWS), read on the first call; a read that failed
        raises again for every caller. A full table is recorded as cut for `section` (the
        snapshot section that read it; None for a reader outside the snapshot, the bundle's)."""
        with self._lock:
            if self._rows is None and self._error is None:
                try:
                    self._rows = self._read()
                except Exception as exc:
                    self._error = exc
        if self._error is not None:
            raise self._error
        if section and len(self._rows) >= self._limit:
            bounded.record(section, "list_jobs", self._limit, len(self._rows))
        return self._rows

    def _read(self) -> list[dict]:
        from ray.util.state import list_jobs

        return [row(job) for job in list_jobs(
            address=self.address, detail=True, limit=self._limit,
            timeout=max(1, int(self.timeout_s)), raise_on_missing_output=False)]


@section("job_table", needs=("cluster",), keep=False)
def job_table_step(ctx) -> "JobTable":
    """The one job table of the snapshot, read by the first section that asks for it."""
    from rldoctor.cluster.cluster_facts import state_api_address

    return JobTable(state_api_address(ctx.doc.get("cluster")), ctx.budget.left(10))
