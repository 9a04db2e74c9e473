"""`rldoctor watch --address http(s)://...`: each round's snapshot through the dashboard.

One short collectors' job per round (rldoctor.dashboard.remote.collect_through_dashboard),
each in a child process of the watch (`python -m rldoctor.watch.dashboard_rounds`) that
prints one JSON line, `{"ok": true, "doc": ...}` or `{"ok": false, "reason": "..."}`, and
ends. A child is the unit that can be stopped at any moment: on SIGTERM it stops and
deletes its job (the job's probes go with it) before it leaves, so the watch's SIGTERM or
Ctrl-C never leaves a job on the cluster. Nothing is kept between rounds on the cluster
side; the package is uploaded once (its hash says it is there). Neither process imports ray.
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

STOP_GRACE_S = 30.0  # the child's time to stop and delete its job after SIGTERM
ANSWER_MARGIN_S = 60.0  # beyond --timeout: identify, upload, the job's start and its cleanup


class DashboardRounds:
    """What rldoctor.watch.rounds.Watch asks for a snapshot each round, through the dashboard."""

    def __init__(self, address: str, timeout_s: float):
        self.address = address
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen | None = None

    def snapshot(self, stop: threading.Event) -> dict:
        from rldoctor.watch.rounds import RoundFailed

        args = [sys.executable, "-m", "rldoctor.watch.dashboard_rounds", "--address",
                self.address, "--timeout", str(self.timeout_s)]
        # Its own session: a Ctrl-C in the terminal reaches the watch, which stops the child.
        self.proc = proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL, text=True,
                                            start_new_session=True)
        answers: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: answers.put(proc.stdout.readline()), daemon=True,
                         name="rldoctor-watch-dashboard").start()
        wait_s = self.timeout_s + ANSWER_MARGIN_S
        deadline = time.monotonic() + wait_s
        while True:
            if stop.is_set():
                raise RoundFailed("stopped")
            try:
                line = answers.get(timeout=0.2)
                break
            except queue.Empty:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RoundFailed(f"no snapshot through the dashboard within {wait_s:.0f}s; "
                                      "the round's job was stopped and deleted")
        self._reap()
        try:
            answer = json.loads(line)
        except ValueError:
            raise RoundFailed("the round through the dashboard ended without an answer") from None
        if not answer.get("ok"):
            raise RoundFailed(answer.get("reason") or "the round failed")
        return answer["doc"]

    def _reap(self) -> None:
        from rldoctor.watch.rounds import reap_child

        proc, self.proc = self.proc, None
        reap_child(proc, STOP_GRACE_S)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the round in flight (it stops and deletes its job), SIGKILL after the grace."""
        from rldoctor.watch.rounds import stop_child

        proc, self.proc = self.proc, None
        stop_child(proc, grace_s)


class _Stop(BaseException):
    """SIGTERM or SIGINT: leave now; the job's context manager stops and deletes it."""


def _on_signal(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the cleanup is not interrupted
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise _Stop()


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="rldoctor-watch-round")
    parser.add_argument("--address", required=True)
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    answers = os.fdopen(os.dup(1), "w")
    code = 0
    try:
        from rldoctor.dashboard.remote import collect_through_dashboard
        from rldoctor.errors import RldoctorError, first_line

        try:
            answer = {"ok": True, "doc": collect_through_dashboard(args.address, args.timeout)}
        except RldoctorError as exc:
            answer, code = {"ok": False, "reason": str(exc)}, 3
        except Exception as exc:  # never a traceback: the watch logs the reason
            answer, code = {"ok": False, "reason": first_line(exc)}, 1
        answers.write(json.dumps(answer, default=str) + "\n")  # one line: JSON escapes newlines
        answers.flush()
    except _Stop:
        code = 130
    return code


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main(sys.argv[1:]))
