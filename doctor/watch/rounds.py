"""`rldoctor watch`: the checks of `check`, every interval, as Prometheus metrics and a log.

Each round takes a snapshot through a child process that keeps the Ray connection and
one probe per node (rldoctor.watch.gcs_child), then runs the same checks, muting and
report as `check` (rldoctor.engine.pipeline), replaces what /metrics serves
(rldoctor.watch.metrics) and logs each finding that opened or resolved as a JSON line
(rldoctor.watch.transitions). A round that does not reach the cluster sets rldoctor_up
to 0, logs why, and the next round tries again. SIGTERM or Ctrl-C stop the child (it
kills its probes) and end the watch within seconds. This process never imports ray.
Through a dashboard address (http(s)://) each round is one short collectors' job instead,
run by a child of its own (rldoctor.watch.dashboard_rounds), stopped and deleted on SIGTERM.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone

from rldoctor.errors import UsageError

STOP_GRACE_S = 8.0  # the child's time to kill its probes after SIGTERM
ANSWER_MARGIN_S = 20.0  # beyond --timeout, before a silent child is given up on
JOIN_GRACE_S = 2.0  # beyond --timeout from the child's start of a join, before Ray's hold ends it
GCS_LOOK_S = 1.0  # while a round runs, how often the GCS port is tried


# Findings about past events (a worker's crash, a memory kill, the last restart of an actor
# that is up again) keep their warn or fail, and so their ticket or page, while the newest
# event is younger than this window; after it they stay in the report and /metrics at info
# (no alert). `check` uses 24 h (their recent_hours).
PAST_WINDOW_ROUNDS = 10
PAST_WINDOW_MIN_S = 600.0
PAST_EVENT_CHECKS = ("RLD401", "RLD402", "RLD403")


def past_window_s(interval_s: float) -> float:
    """How long a finding about a past event stays open in a watch of this interval."""
    return max(PAST_WINDOW_MIN_S, PAST_WINDOW_ROUNDS * interval_s)


def with_past_window(params: dict, interval_s: float) -> dict:
    """`params` with the watch's window as recent_hours of the checks about past events,
    unless --set gave one."""
    out = {code: dict(values) for code, values in (params or {}).items()}
    for code in PAST_EVENT_CHECKS:
        out.setdefault(code, {}).setdefault("recent_hours", past_window_s(interval_s) / 3600)
    return out


class RoundFailed(Exception):
    """A round that did not reach the cluster; the message says why."""


class CollectorProcess:
    """The child process that joins the cluster and answers `collect` with a snapshot."""

    def __init__(self, address: str | None, timeout_s: float):
        self.address = address
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen | None = None
        self._answers: queue.Queue = queue.Queue()
        self.gcs_address: str | None = None  # host:port the last good round joined
        self._told: dict = {}  # what the child in hand said it does (see _heard)

    def _start(self) -> None:
        self._told = {"gcs": None, "joining_at": None, "joined": False, "files": []}
        args = self._command()
        # Its own session: a Ctrl-C in the terminal reaches the watch, which stops the child.
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, start_new_session=True,
                                     env=child_env(os.environ))
        self._answers = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self._answers), daemon=True,
                         name="rldoctor-watch-answers").start()

    def _command(self) -> list[str]:
        args = [sys.executable, "-m", "rldoctor.watch.gcs_child", "--timeout", str(self.timeout_s)]
        return args + (["--address", self.address] if self.address else [])

    @staticmethod
    def _read(proc: subprocess.Popen, answers: queue.Queue) -> None:
        for line in proc.stdout:
            answers.put(line)
        answers.put(None)  # the child is gone

    def snapshot(self, stop: threading.Event) -> dict:
        """One snapshot, or RoundFailed; gives up when `stop` is set.

        The GCS port the last round reached is tried first and every second while the
        round runs (a TCP connect, a few ms): a head that went away fails the round at
        once, and the child, whose Ray driver would wait a minute for that GCS, is replaced.
        """
        self._check_gcs()
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        try:
            self.proc.stdin.write("collect\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._reap()
            raise RoundFailed("the collector process ended before the round") from None
        wait_s = self.timeout_s + ANSWER_MARGIN_S  # joining and collecting share --timeout
        deadline = time.monotonic() + wait_s
        next_look = time.monotonic() + GCS_LOOK_S
        while True:
            if stop.is_set():
                raise RoundFailed("stopped")
            try:
                line = self._answers.get(timeout=0.2)
                if self._heard(line):
                    continue
                break
            except queue.Empty:
                if time.monotonic() > next_look:  # the head may die while the round runs
                    self._check_gcs()
                    next_look = time.monotonic() + GCS_LOOK_S
                held = self._held(deadline, wait_s)
                if held:
                    self.stop(grace_s=STOP_GRACE_S if self._told.get("joined") else 1.0)
                    raise RoundFailed(f"{held}; the collector was stopped and the next round "
                                      "starts a new one")
        if line is None:
            code = self._reap()
            raise RoundFailed(f"the collector process ended (exit {code}) during the round "
                              "(Ray ends a driver whose GCS is gone); the next round starts a "
                              "new one")
        try:
            answer = json.loads(line)
        except ValueError:
            self.stop()
            raise RoundFailed("the collector process answered something that is not a "
                              "snapshot; it was stopped and the next round starts a new one") from None
        if not answer.get("ok"):
            self._reap()
            raise RoundFailed(answer.get("reason") or "the round failed")
        self.gcs_address = (answer["doc"].get("source") or {}).get("address") or self.gcs_address
        return answer["doc"]

    def _heard(self, line: str | None) -> bool:
        """A line the child tells as it goes (rldoctor.watch.gcs_child: the GCS it joins, a
        temporary file of its own, "settled" once joined), noted; False for an answer."""
        if line is None or not line.startswith('{"tell": '):
            return False
        try:
            said = json.loads(line)
        except ValueError:
            return False
        kind, text = said.get("tell"), said.get("text") or ""
        if kind == "gcs":
            self._told.update(gcs=text, joining_at=time.monotonic())
        elif kind == "file" and text:
            self._told["files"].append(text)
        elif kind == "settled":
            self._told["joined"] = True
        return True

    def _held(self, deadline: float, wait_s: float) -> str | None:
        """Why the round ends now: a join Ray holds past --timeout (the child started joining
        and has not settled), or no answer by the round's deadline; None while in time."""
        from rldoctor import joinwatch

        told, now = self._told, time.monotonic()
        if not told.get("joined") and told.get("joining_at") is not None \
                and now > told["joining_at"] + self.timeout_s + JOIN_GRACE_S:
            return joinwatch.held_join_line(self.timeout_s, told["gcs"], told["gcs"])
        if now <= deadline:
            return None
        if told.get("joined") and told.get("gcs"):
            return joinwatch.held_collection_line(round(wait_s), told["gcs"])
        return f"no snapshot within {wait_s:.0f}s"

    def _check_gcs(self) -> None:
        """RoundFailed, and the child replaced, when the GCS the last round joined is gone."""
        if not self.gcs_address:
            return
        from rldoctor.cluster.connect import reachable
        from rldoctor.errors import Undiagnosable

        try:
            reachable(self.gcs_address, timeout_s=2.0)
        except Undiagnosable as exc:
            self.stop(grace_s=1.0)  # with its GCS gone, its probes cannot be reached anyway
            self.gcs_address = None  # the next round resolves --address again (auto may move)
            raise RoundFailed(str(exc)) from None

    def _reap(self) -> int | None:
        proc, self.proc = self.proc, None
        return reap_child(proc, STOP_GRACE_S)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the child (it kills its probes and leaves), SIGKILL after the grace time;
        then whatever it started (its session's group) and the temporary files it told of."""
        proc, self.proc = self.proc, None
        stop_child(proc, grace_s)
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: pid is the group's id
            except OSError:
                pass
        for path in self._told.get("files") or ():
            try:
                os.unlink(path)
            except OSError:
                pass


# Each round's sections run on threads, and glibc gives new threads malloc arenas of their
# own (up to 8 per core) that it never hands back: the child's RSS grew by 1.5-5 MiB a round
# (200 MiB after 2 rounds, 416 MiB after 125, still growing) with a flat Python heap.
# Two arenas keep it flat (237.6 MiB after 4 rounds, 249.9 MiB after 24).
CHILD_MALLOC_ARENAS = "2"


def child_env(environ) -> dict:
    """The collector child's environment: the watch's own, with at most two malloc arenas
    unless the user chose a number."""
    return {**environ, "MALLOC_ARENA_MAX": environ.get("MALLOC_ARENA_MAX") or CHILD_MALLOC_ARENAS}


def reap_child(proc: subprocess.Popen | None, grace_s: float) -> int | None:
    """The exit code of a child that is ending on its own; killed after `grace_s`."""
    if proc is None:
        return None
    try:
        return proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(5)


def stop_child(proc: subprocess.Popen | None, grace_s: float) -> None:
    """SIGTERM a round's child (it cleans up on the cluster and leaves), SIGKILL after
    `grace_s`: its probes or its job's driver go with it."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
    except ProcessLookupError:
        pass


class Watch:
    """The rounds, the metrics they feed and the log of transitions."""

    def __init__(self, collector, metrics, log, diagnose_round, interval_s: float):
        self.collector = collector
        self.metrics = metrics
        self.log = log
        self.diagnose_round = diagnose_round  # snapshot doc -> Report (checks, muting)
        self.interval_s = interval_s
        self.stop = threading.Event()
        self.open: dict = {}
        self.rounds = 0  # rounds judged
        self.failed = 0  # rounds that failed (no snapshot, or it could not be judged)

    def one_round(self) -> None:
        from rldoctor.watch import transitions

        started = time.time()
        t0 = time.monotonic()
        try:
            doc = self.collector.snapshot(self.stop)
            report = self.diagnose_round(doc)
        except RoundFailed as exc:
            if self.stop.is_set():
                return
            self.failed += 1
            self.metrics.down(started, time.monotonic() - t0)
            self.log.write({"time": _stamp(started), "event": "round_failed", "reason": str(exc)})
            return
        except Exception as exc:  # a bug in one round never ends the watch
            from rldoctor.errors import first_line

            self.failed += 1
            self.metrics.down(started, time.monotonic() - t0)
            self.log.write({"time": _stamp(started), "event": "round_failed",
                            "reason": f"rldoctor could not judge the round: {first_line(exc)}"})
            return
        names = {r.code: r.name for r in report.results}
        now = transitions.current(report, names, self.open)
        for event in transitions.changes(self.open, now, datetime.fromtimestamp(started, timezone.utc)):
            self.log.write(event)
        self.open = now
        self.rounds += 1
        self.metrics.update(report, now, started, time.monotonic() - t0,
                            probes=(doc.get("timing") or {}).get("probes_kept"))

    def run(self, max_rounds: int | None = None) -> None:
        while not self.stop.is_set():
            t0 = time.monotonic()
            self.one_round()
            if max_rounds is not None and self.rounds >= max_rounds:
                break
            self.stop.wait(max(0.0, self.interval_s - (time.monotonic() - t0)))


def _stamp(when: float) -> str:
    return datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="seconds")


def run_watch(address, interval, metrics_port, metrics_host, log_path, diagnosis, timeout,
              max_rounds=None) -> int:
    """`rldoctor watch`; returns the exit code (0 after SIGTERM or Ctrl-C). `diagnosis`
    (rldoctor.engine.pipeline.Diagnosis) holds the selection, settings and mutes."""
    from rldoctor import snapshot as snapshots
    from rldoctor.cluster.connect import resolve
    from rldoctor.watch.metrics import WatchMetrics, serve
    from rldoctor.watch.transitions import TransitionLog
    from dataclasses import replace

    diagnosis = replace(diagnosis, params=with_past_window(diagnosis.params, interval))
    from rldoctor.dashboard import is_dashboard_address
    from rldoctor.acquire import chosen_address

    through_dashboard = is_dashboard_address(chosen_address(address))
    if through_dashboard:  # one short job per round (rldoctor.watch.dashboard_rounds)
        from rldoctor.dashboard.http import base_url

        base_url(chosen_address(address))  # a malformed URL is one line now
    elif address and address not in ("auto", "local"):
        resolve(address)  # a malformed address is one line now, not a round that fails forever

    def diagnose_round(doc: dict):
        snap = snapshots.validate(doc, "live cluster")
        return diagnosis.run(snap, dict(snap.get("source") or {}))

    metrics = WatchMetrics()
    try:
        server, _ = serve(metrics, metrics_port, metrics_host)
    except OSError as exc:
        raise UsageError(f"--metrics-port {metrics_port}: cannot serve on {metrics_host}:"
                         f"{metrics_port}: {exc.strerror or exc}") from None
    log = TransitionLog(log_path)
    if through_dashboard:
        from rldoctor.watch.dashboard_rounds import DashboardRounds

        collector = DashboardRounds(chosen_address(address), timeout)
    else:
        collector = CollectorProcess(address, timeout)
    watch = Watch(collector, metrics, log, diagnose_round, interval)

    def on_signal(signum, frame):
        watch.stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"rldoctor watch: serving http://{metrics_host}:{server.server_port}/metrics, a round every "
          f"{interval:g}s; stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)
    try:
        watch.run(max_rounds)
    finally:
        collector.stop()
        server.shutdown()
        log.close()
    print(f"rldoctor watch: stopped after {watch.rounds + watch.failed} round(s)"
          + (f", {watch.failed} of them failed (see the round_failed lines)" if watch.failed else "")
          + "; probes removed", file=sys.stderr, flush=True)
    return 0

