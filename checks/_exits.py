"""Why a dead worker ended: a crash of its own, or an end someone asked for.

Ray records many ends that nobody needs to act on with the same exit types as crashes
(Ray 2.60, `ray list workers --detail`):
- a driver that exits, `ray job submit`'s or a script's, rldoctor's own `check` among them:
  worker type DRIVER, its worker id the job id followed by `ff...f`; SYSTEM_ERROR "connection
  error code 2. End of file" when it leaves without `ray.shutdown()` (a session directory's
  gcs_server.out does not say DRIVER: the id does);
- the workers of a job that ended (SUCCEEDED, or STOPPED by `ray job stop`), which Ray ends
  with SIGTERM ("The process receives a SIGTERM", SYSTEM_ERROR) and, past a grace period,
  SIGKILL;
- a worker whose actor was ended by `ray.kill`, went out of scope or lost its owner: Ray
  sends it a SIGTERM too;
- rldoctor's own probes (NodeProbe, in namespace `rldoctor-*`), and every worker of one of
  rldoctor's own runs.
(`ray.kill`, `exit_actor()` and idle workers that Ray reaps exit INTENDED_SYSTEM_EXIT or
INTENDED_USER_EXIT, never collected as bad exits.) The one reading for every source (a live
cluster, a snapshot, a bundle, a session directory): RLD402 and RLD403 report crashes only, and
the timeline tells the ends asked for, with why. The workers of a failed job that died with it
are its RLD405 chain's (rldoctor.checks._chains.claimed_workers).
"""

from __future__ import annotations

import re
from datetime import datetime

DRIVER_ID = re.compile(r"^[0-9a-f]{8}f{48}$")
OWN_CLASSES = ("NodeProbe",)  # rldoctor's probe actor (rldoctor.node.probes)
OWN_NAMESPACE_PREFIX = "rldoctor-"
ENDED_WELL = ("SUCCEEDED", "STOPPED")
# Ray's actor death reasons that are an end asked for (by a person, by the program, by Ray
# because the actor's owner or every reference to it went away)
ASKED = {"RAY_KILL": "it was ended with `ray.kill`", "OUT_OF_SCOPE": "its actor went out of scope",
         "REF_DELETED": "every reference to its actor was removed",
         "OWNER_DIED": "its actor's owner died first"}
# A job's end is recorded by its supervisor, after Ray began to end its workers.
JOB_END_SLACK_MS = 30_000


def is_driver(worker: dict) -> bool:
    return worker.get("worker_type") == "DRIVER" or bool(DRIVER_ID.match(str(worker.get("worker_id") or "")))


def driver_job(worker_id: str | None) -> str | None:
    """The job id (8 hex) of a driver's worker id, None for any other worker."""
    text = str(worker_id or "")
    return text[:8] if DRIVER_ID.match(text) else None


def _sigterm(worker: dict) -> bool:
    return "SIGTERM" in str(worker.get("exit_detail") or "")


def _ms(value) -> float | None:
    """Epoch milliseconds of an epoch in s or ms, or of an ISO time."""
    if value in (None, ""):
        return None
    if isinstance(value, (int, float)):
        return float(value) * (1000 if value < 1e11 else 1)
    try:
        return datetime.fromisoformat(str(value)).timestamp() * 1000
    except ValueError:
        return None


class Ends:
    """The snapshot's facts that tell a requested end from a crash, indexed once."""

    def __init__(self, data: dict):
        actors = (data.get("actors") or {})
        items = list(actors.get("items") or [])
        self.actor_by_pid = {}
        for a in items:
            if a.get("pid"):
                self.actor_by_pid.setdefault((a.get("node_id"), a.get("pid")), a)
        self.own_jobs = {a.get("job_id") for a in items if a.get("job_id") and _is_own(a)}
        self.own_pids = {tuple(p) for p in actors.get("rldoctor_workers") or []}
        self.jobs: dict[str, tuple[str | None, float | None]] = {}
        for job_id, end_ms in (actors.get("ended_jobs") or {}).items():
            self.jobs[job_id] = (None, _ms(end_ms))
        for job in (data.get("jobs") or {}).get("jobs") or []:
            if job.get("job_id"):
                self.jobs[job["job_id"]] = (job.get("status"), _ms(job.get("end_time")))

    def actor_of(self, worker: dict) -> dict | None:
        return self.actor_by_pid.get((worker.get("node_id"), worker.get("pid")))

    def job_of(self, worker: dict) -> str | None:
        return (worker.get("job_id") or driver_job(worker.get("worker_id"))
                or (self.actor_of(worker) or {}).get("job_id"))

    def asked_for(self, worker: dict) -> str | None:
        """Why the worker's end was asked for (a short phrase), or None: a crash."""
        if is_driver(worker):
            return "a driver's end (its job's own status says how the job ended)"
        actor = self.actor_of(worker) or {}
        job = self.job_of(worker)
        if (worker.get("node_id"), worker.get("pid")) in self.own_pids or _is_own(actor) \
                or (job and job in self.own_jobs):
            return "one of rldoctor's own workers"
        if worker.get("exit_type") != "SYSTEM_ERROR":
            return None  # memory kills and user errors are never asked for
        status, end_ms = self.jobs.get(job, (None, None)) if job else (None, None)
        died = _ms(worker.get("end_time_ms"))
        if status in ENDED_WELL and (end_ms is None or died is None or died >= end_ms - JOB_END_SLACK_MS):
            return f"its job {status} and Ray ended the job's workers"
        if _sigterm(worker):
            reason = ((actor.get("death_cause") or {}).get("reason"))
            if reason in ASKED:
                return f"Ray stopped it with SIGTERM: {ASKED[reason]}"
            if end_ms is not None and died is not None and died >= end_ms - JOB_END_SLACK_MS:
                return "Ray stopped it with SIGTERM as its job ended"
        return None


def _is_own(actor: dict) -> bool:
    return (actor.get("class_name") in OWN_CLASSES
            or str(actor.get("ray_namespace") or "").startswith(OWN_NAMESPACE_PREFIX))
