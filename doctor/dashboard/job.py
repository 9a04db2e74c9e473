"""The collectors' short Ray job: upload the package, submit, read its output, stop, delete.

The job is tagged (a `rldoctor-` submission id and `metadata`), asks for no CPU
(`entrypoint_num_cpus=0`: it starts while a training holds every CPU), and is stopped and
deleted at the end whatever happens: a finished run, a timeout, a client error, Ctrl-C.
Its probe actors belong to its driver and die with it. The driver does not end by itself
after printing: the client reads the job's log while it runs until the output is complete,
then stops it, and on that stop the driver deletes its own log file (Ray keeps a job's log
after the job is deleted; rldoctor.job.log).
"""

from __future__ import annotations

import time
import urllib.parse
import uuid
from contextlib import contextmanager

from rldoctor import __version__
from rldoctor.job import END, FAILED, unframe
from rldoctor.dashboard.http import Dashboard
from rldoctor.dashboard.package import Package
from rldoctor.errors import Undiagnosable

TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
POLL_S = 0.1
LOG_POLL_S = 0.15  # reads of the job's log while it runs, until its output is complete
LINGER_S = 90.0  # the driver's wait for our stop before it deletes its log on its own
MONITOR_PERIOD_S = 1.2  # Ray's JobManager.JOB_MONITOR_LOOP_PERIOD_S is 1, plus a margin
# The monitor finds a dead supervisor within two of its periods (it pings every other one).
MONITOR_LIMIT_S = 4.0
EVENTS_LOG = "events/event_JOBS.log"  # relative to the head's logs folder
EVENTS_TAIL_LINES = 200  # each job writes two lines: room for many jobs ending together
EVENTS_POLL_S = 0.1
# The job's driver must run on the cluster's own Python, which need not be `python` on
# the head's PATH (a venv that was never activated). The shell's parent is Ray's job
# supervisor, a worker of exactly that Python: its memory map names the site-packages its
# ray came from. A venv's own bin/python is used when there is one (pyvenv.cfg), else the
# supervisor's interpreter with that site-packages after the package on PYTHONPATH, else
# python3 from PATH.
ENTRYPOINT = (
    'S=$(grep -m 1 -o "/.*/ray/_raylet[^/]*[.]so" /proc/$PPID/maps 2>/dev/null); '
    'S=${{S%/ray/_raylet*}}; P=; '
    'if [ -n "$S" ] && [ -f "$S/../../../pyvenv.cfg" ] && [ -x "$S/../../../bin/python" ]; '
    'then P="$S/../../../bin/python"; '
    'elif [ -n "$S" ] && P=$(readlink /proc/$PPID/exe); '
    'then export PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}$S"; '
    'else P=python3; fi; '
    'exec "$P" -m rldoctor.job.main --timeout {timeout:g} --linger {linger:g}')


def ensure_package(dash: Dashboard, package: Package) -> bool:
    """Upload the package unless the cluster holds it already; True when it was uploaded."""
    path = f"/api/packages/gcs/{package.name}"
    status, _ = dash.request("GET", path, ok=())
    if status == 200:
        return False
    if status != 404:
        raise Undiagnosable(f"the dashboard at {dash.url} answered {status} to GET {path}; "
                            "it does not take job packages")
    status, body = dash.request("PUT", path, body=package.data,
                                content_type="application/octet-stream", ok=())
    if status != 200:
        raise Undiagnosable(f"the dashboard at {dash.url} refused rldoctor's package ({status}: "
                            f"{body.decode('utf-8', 'replace').strip()[:200]})")
    return True


class CollectorJob:
    """One submitted job; use as a context manager so it is always stopped and deleted."""

    def __init__(self, dash: Dashboard, package: Package, timeout_s: float):
        self.dash = dash
        self.package = package
        self.timeout_s = timeout_s
        self.submission_id = f"rldoctor-{uuid.uuid4().hex[:12]}"
        self.submitted = False
        self.deleted = False
        self.delete_refused: str | None = None
        self.status: str | None = None
        self.message: str | None = None
        self.timing: dict[str, float] = {}
        self.extra_args = ""  # more options of job_main (the bundle's: rldoctor.dashboard.bundle)
        self.head_node_id: str | None = None  # where Ray's job monitor logs the job's end

    def submit(self) -> None:
        payload = {
            "entrypoint": ENTRYPOINT.format(timeout=self.timeout_s, linger=LINGER_S)
            + self.extra_args,
            "submission_id": self.submission_id,
            "runtime_env": {"py_modules": [self.package.uri]},
            "metadata": {"rldoctor": __version__,
                         "purpose": "rldoctor check: read-only diagnosis, deleted when done"},
            "entrypoint_num_cpus": 0,
        }
        status, body = self.dash.send_json("POST", "/api/jobs/", payload)
        if status != 200:
            text = body if isinstance(body, str) else str(body)
            raise Undiagnosable(f"the dashboard at {self.dash.url} refused rldoctor's job "
                                f"({status}: {text.strip()[:200]})")
        self.submitted = True

    def poll(self) -> str:
        status, body = self.dash.get_json(f"/api/jobs/{self.submission_id}")
        if status == 200 and isinstance(body, dict):
            self.status = body.get("status")
            self.message = body.get("message")
        return self.status or "UNKNOWN"

    def output(self, complete=(END,), extra_s: float = 0.0) -> str:
        """The job's logs once they hold one of the `complete` markers or the job's failure
        line (the driver then waits for our stop), or once the job ended. A job that cannot
        start within the timeout, or runs past it (plus `extra_s`), is one clear line."""
        started = time.monotonic()
        start_by, end_by = started + self.timeout_s, None
        while True:
            state = self.poll()
            now = time.monotonic()
            if state in TERMINAL:
                logs = self.logs()
                break
            if state == "PENDING" and now > start_by:
                raise Undiagnosable(
                    f"rldoctor's job {self.submission_id} could not start on the cluster within "
                    f"{self.timeout_s:g}s (status PENDING: {(self.message or 'no message').strip()[:200]}); "
                    "it was stopped. The head may be overloaded: try again, or raise --timeout")
            if state == "RUNNING":
                if end_by is None:
                    self.timing["started_s"] = round(now - started, 3)
                    end_by = now + self.timeout_s + extra_s + 30.0
                logs = self.logs()
                if FAILED in logs or any(marker in logs for marker in complete):
                    break
                if now > end_by:
                    raise Undiagnosable(
                        f"rldoctor's job {self.submission_id} ran longer than "
                        f"{end_by - started:.0f}s on the cluster; it was stopped")
            time.sleep(LOG_POLL_S if state == "RUNNING" else POLL_S)
        self.timing["job_s"] = round(time.monotonic() - started, 3)
        return logs

    def logs(self) -> str:
        path = f"/api/jobs/{self.submission_id}/logs"
        try:
            status, body = self.dash.get_json(path)
        except Undiagnosable:  # a head too busy to answer in time: once more, then say so
            status, body = self.dash.get_json(path)
        if status != 200 or not isinstance(body, dict):
            raise Undiagnosable(f"could not read the logs of rldoctor's job {self.submission_id} "
                                f"({status})")
        return body.get("logs") or ""

    def snapshot(self, logs: str) -> dict:
        """The snapshot in the job's output; a job without one is one clear line."""
        doc = unframe(logs)
        if doc is not None:
            self.head_node_id = next((n.get("node_id") for n in doc.get("nodes") or []
                                      if n.get("is_head") and n.get("alive")), None)
            return doc
        ended = "failed" if FAILED in logs else (self.status or "ended").lower()
        raise Undiagnosable(
            f"rldoctor's job {self.submission_id} {ended} on the cluster "
            f"without a snapshot: {last_error_line(logs, self.message)}")

    def cleanup(self) -> None:
        """Stop (if still running) and delete the job; never raises."""
        if not self.submitted:
            return
        started = time.monotonic()
        try:
            if self.status not in TERMINAL:
                self.dash.request("POST", f"/api/jobs/{self.submission_id}/stop", ok=(),
                                  timeout_s=5)
                deadline = time.monotonic() + 10
                while self.poll() not in TERMINAL and time.monotonic() < deadline:
                    time.sleep(POLL_S)
        except BaseException:  # Ctrl-C twice, or the cluster went away: still try to delete
            pass
        try:
            let_go = self._wait_for_the_monitor_to_let_go()
        except BaseException:
            let_go = False
        self.timing["monitor_let_go"] = let_go
        if let_go and self._delete_once():
            self.timing["cleanup_s"] = round(time.monotonic() - started, 3)
            return
        self._wait_for_the_supervisor_to_end()
        self._delete_until_gone()
        self.timing["cleanup_s"] = round(time.monotonic() - started, 3)

    def _wait_for_the_monitor_to_let_go(self, limit_s: float = MONITOR_LIMIT_S) -> bool:
        """True once Ray's job monitor has logged the job's end; False when it cannot be seen.

        Ray's JobManager watches each job's supervisor actor (a ping a second) until it finds
        it gone; only then does its watch end, and a record deleted before then is written
        back as FAILED. Its last act is the event "Completed a ray job <id> with a status
        ..." in the head's `events/event_JOBS.log` (2.40 through 2.60), after which it never
        writes the record again: the delete is safe from that line on. Read through the
        dashboard's log API as plain text; a cluster that keeps no such file costs one try.
        """
        head = self.head_node_id or self._find_head_node_id()
        if not head:
            return False
        wanted = f"Completed a ray job {self.submission_id} with a status".encode()
        query = urllib.parse.urlencode({"node_id": head, "filename": EVENTS_LOG,
                                        "lines": EVENTS_TAIL_LINES, "format": "text"})
        deadline = time.monotonic() + limit_s
        while True:
            status, body = self.dash.request("GET", f"/api/v0/logs/file?{query}", ok=(),
                                             timeout_s=5)
            if status != 200:
                return False
            if wanted in body:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(EVENTS_POLL_S)

    def _find_head_node_id(self) -> str | None:
        path = ("/api/v0/nodes?detail=false&limit=10&filter_keys=is_head_node"
                "&filter_predicates=%3D&filter_values=True")
        try:
            status, body = self.dash.get_json(path, timeout_s=5)
        except BaseException:
            return None
        rows = (((body or {}).get("data") or {}).get("result") or {}).get("result") \
            if status == 200 and isinstance(body, dict) else None
        alive = [row.get("node_id") for row in rows or []
                 if row.get("is_head_node") and row.get("state", "ALIVE") == "ALIVE"]
        return alive[0] if alive else None

    def _delete_once(self) -> bool:
        """One DELETE once the monitor let go; True when the job is gone."""
        try:
            status, body = self.dash.request("DELETE", f"/api/jobs/{self.submission_id}",
                                             ok=(), timeout_s=5)
        except BaseException:
            return False
        if status in (200, 404):
            self.deleted = True
            return True
        self.delete_refused = f"{status}: {body[:200].decode('utf-8', 'replace')}"
        return False

    def _delete_until_gone(self) -> None:
        """Without the monitor's word: delete, wait out one monitor period, look again."""
        deadline, failures = time.monotonic() + 20, 0
        while time.monotonic() < deadline and failures < 3:  # a busy head may refuse at first
            try:
                status, body = self.dash.request("DELETE", f"/api/jobs/{self.submission_id}",
                                                 ok=(), timeout_s=max(1.0, deadline - time.monotonic()))
            except BaseException:  # gone, or Ctrl-C again
                failures += 1
                continue
            if status in (200, 404):
                # Ray's job monitor polls the supervisor once a second; one that finds the
                # supervisor gone and the record deleted writes the job back as FAILED. Look
                # again after that second, and delete again until the job stays gone.
                time.sleep(MONITOR_PERIOD_S)
                check, _ = self.dash.request("GET", f"/api/jobs/{self.submission_id}", ok=(),
                                             timeout_s=5)
                if check == 404:
                    self.deleted = True
                    return
                continue
            self.delete_refused = f"{status}: {body[:200].decode('utf-8', 'replace')}"
            time.sleep(0.5)

    def _wait_for_the_supervisor_to_end(self, limit_s: float = 10.0) -> None:
        """Until Ray's job supervisor actor for this job is dead, and Ray's job monitor had
        its second to see it: deleting the job before then makes the monitor write it back
        as FAILED. Through the state API (`_ray_internal_job_actor_<id>`, in every release
        from 2.40); a cluster that cannot tell costs the limit at most, never an error."""
        path = ("/api/v0/actors?detail=false&limit=10&filter_keys=name&filter_predicates=%3D"
                f"&filter_values=_ray_internal_job_actor_{self.submission_id}")
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            try:
                status, body = self.dash.get_json(path, timeout_s=5)
            except BaseException:
                return
            rows = (((body or {}).get("data") or {}).get("result") or {}).get("result") \
                if status == 200 and isinstance(body, dict) else None
            if rows is None:
                return  # no state API answer: rely on deleting again below
            if all(row.get("state") == "DEAD" for row in rows):
                time.sleep(MONITOR_PERIOD_S)
                return
            time.sleep(POLL_S)

    def __enter__(self) -> "CollectorJob":
        return self

    def __exit__(self, *exc) -> None:
        with _interrupt_after():
            self.cleanup()


@contextmanager
def _interrupt_after():
    """A Ctrl-C while the job is stopped and deleted lets the deletion finish, then interrupts
    (exit 130, no report): the user is obeyed and nothing is left on the cluster either way.
    Where Ctrl-C is already ignored (watch's child during its cleanup), it stays ignored."""
    import signal

    pressed: list = []
    previous = signal.getsignal(signal.SIGINT)
    try:
        if previous is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, lambda *_: pressed.append(True))
    except ValueError:  # not the main thread: Ctrl-C never reaches it anyway
        previous = signal.SIG_IGN
    if previous is signal.SIG_IGN:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        raise KeyboardInterrupt


def last_error_line(logs: str, message: str | None) -> str:
    """The job's own failure line, else the last line of a Python traceback, else Ray's message."""
    lines = [line.strip() for line in (logs or "").splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(FAILED):
            return line[len(FAILED):][:300]
    for line in reversed(lines):
        if "Error" in line or "Exception" in line:
            return line[:300]
    return (message or (lines[-1] if lines else "no output")).strip().splitlines()[-1][:300]
