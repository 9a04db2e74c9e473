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
are its RLD405 chain's (rldoctor.failure_chains.claimed_workers).
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
# Ray ends a job's workers once the job's driver is gone; the job's end time is its
# supervisor's, which may come a moment after those kills. A worker that died earlier than
# this before the job's end (or before its driver's exit, where Ray recorded one) died while
# the job ran: not of the job's end.
JOB_END_SLACK_MS = 3_000
DRIVER_END_SLACK_MS = 500


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

    DRIVER = "a driver's end (its job's own status says how the job ended)"

    def __init__(self, data: dict):
        actors = (data.get("actors") or {})
        self.actor_by_pid, self.own_jobs = {}, set()
        for a in actors.get("items") or []:  # one pass: a cluster may hold 100,000 actors
            if a.get("pid"):
                self.actor_by_pid.setdefault((a.get("node_id"), a.get("pid")), a)
            if a.get("class_name") in OWN_CLASSES or str(a.get("ray_namespace") or "").startswith(
                    OWN_NAMESPACE_PREFIX):
                self.own_jobs.add(a.get("job_id"))
        self.own_jobs.discard(None)
        self.own_pids = {tuple(p) for p in actors.get("rldoctor_workers") or []}
        # a job's driver exit, where Ray recorded it (a driver that left without ray.shutdown())
        self.driver_end = {driver_job(w.get("worker_id")): _ms(w.get("end_time_ms"))
                           for w in (data.get("workers") or {}).get("dead") or []
                           if driver_job(w.get("worker_id"))}
        self.jobs: dict[str, tuple[str | None, float | None]] = {}
        for job_id, end_ms in (actors.get("ended_jobs") or {}).items():
            self.jobs[job_id] = (None, _ms(end_ms))
        for job in (data.get("jobs") or {}).get("jobs") or []:
            if job.get("job_id"):
                # a driver run by hand is SUCCEEDED however it ended (Ray keeps no exit code
                # for it): its status says nothing of how its workers ended
                status = job.get("status") if job.get("type") != "DRIVER" else None
                self.jobs[job["job_id"]] = (status, _ms(job.get("end_time")))

    def actor_of(self, worker: dict) -> dict | None:
        return self.actor_by_pid.get((worker.get("node_id"), worker.get("pid")))

    def job_of(self, worker: dict) -> str | None:
        return (worker.get("job_id") or driver_job(worker.get("worker_id"))
                or (self.actor_of(worker) or {}).get("job_id"))

    def asked_for(self, worker: dict) -> str | None:
        """Why the worker's end was asked for (a short phrase), or None: a crash."""
        if is_driver(worker):
            return self.DRIVER
        actor = self.actor_of(worker) or {}
        job = self.job_of(worker)
        if (worker.get("node_id"), worker.get("pid")) in self.own_pids or _is_own(actor) \
                or (job and job in self.own_jobs):
            return "one of rldoctor's own workers"
        if worker.get("exit_type") != "SYSTEM_ERROR":
            return None  # memory kills and user errors are never asked for
        status, end_ms = self.jobs.get(job, (None, None)) if job else (None, None)
        with_job = not actor.get("is_detached") and self._after_end(worker, job, end_ms)
        if status in ENDED_WELL and with_job:  # a detached actor outlives its job
            return f"its job {status} and Ray ended the job's workers"
        if _sigterm(worker):
            reason = ((actor.get("death_cause") or {}).get("reason"))
            if reason in ASKED:
                return f"Ray stopped it with SIGTERM: {ASKED[reason]}"
            if end_ms is not None and with_job:
                return "Ray stopped it with SIGTERM as its job ended"
        return None

    def _after_end(self, worker: dict, job: str | None, end_ms: float | None) -> bool:
        """The worker died as its job ended: after its driver's exit, or (none recorded)
        no earlier than a moment before the job's end."""
        died = _ms(worker.get("end_time_ms"))
        if died is None or job is None:
            return False
        if self.driver_end.get(job) is not None:
            return died >= self.driver_end[job] - DRIVER_END_SLACK_MS
        return end_ms is not None and died >= end_ms - JOB_END_SLACK_MS


def _is_own(actor: dict) -> bool:
    return (actor.get("class_name") in OWN_CLASSES
            or str(actor.get("ray_namespace") or "").startswith(OWN_NAMESPACE_PREFIX))


class Lazy:
    """Ends, indexed only when a worker needs more than its own row (most never do)."""

    def __init__(self, data: dict):
        self.data, self.ends = data, None

    def asked_for(self, worker: dict) -> str | None:
        if is_driver(worker):
            return Ends.DRIVER
        if self.ends is None:
            self.ends = Ends(self.data)
        return self.ends.asked_for(worker)
