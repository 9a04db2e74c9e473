"""The dashboard path's job driver and its own log file: nothing of it stays on the head.

Ray writes a job driver's stdout to `job-driver-<submission id>.log` in the head's logs
folder and keeps that file after the job is deleted. rldoctor's job prints its output there
(framed, redacted first), so the driver deletes the file itself:

- `wipe_on_stop()`, at the start: a stop (SIGTERM, SIGINT) that comes while it still
  collects deletes the file and ends the driver at once (its probe actors go with it);
- `linger_then_wipe(s)`, after printing: the driver waits for the client's stop (the client
  stops the job as soon as it has read the output), then deletes the file; a client that
  never stops it costs `s` seconds, then the same deletion.

Standard library only (shipped as part of the job's package).
"""

from __future__ import annotations

import os
import signal
import time

_OWN_LOG_PREFIX = "job-driver-rldoctor-"
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def own_log_file() -> str | None:
    """The job's log file this driver writes to (its stdout), when it is rldoctor's job's."""
    try:
        path = os.readlink("/proc/self/fd/1")
    except OSError:
        return None
    return path if os.path.basename(path).startswith(_OWN_LOG_PREFIX) else None


def wipe_own_log() -> None:
    path = own_log_file()
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass


def _wipe_and_leave(signum, frame):
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    wipe_own_log()
    os._exit(128 + signum)


def wipe_on_stop() -> None:
    """From now until the linger: a stop deletes the log file and ends the driver."""
    for sig in _STOP_SIGNALS:
        signal.signal(sig, _wipe_and_leave)


class _Stopped(Exception):
    pass


def _on_stop(signum, frame):
    raise _Stopped()


def linger_then_wipe(linger_s: float) -> None:
    """Wait for the client's stop (SIGTERM or SIGINT) up to `linger_s`, then delete the log."""
    for sig in _STOP_SIGNALS:
        signal.signal(sig, _on_stop)
    try:
        deadline = time.monotonic() + max(0.0, linger_s)
        while time.monotonic() < deadline:
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    except _Stopped:
        pass
    finally:
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        wipe_own_log()
