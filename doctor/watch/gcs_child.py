"""The collecting half of `rldoctor watch`: a child process that holds the Ray connection.

`rldoctor watch` itself never imports ray. It runs this module as a child process
(`python -m rldoctor.watch.gcs_child --address ADDR --timeout S`) that joins the cluster
once, keeps its probe fleet (rldoctor.cluster.session.LiveSession) and answers each `collect`
line on its stdin with one JSON line on its stdout: `{"ok": true, "doc": <snapshot>}` or
`{"ok": false, "reason": "..."}`. After a failed join it exits, so the next round starts
clean. Ray may end a driver whose GCS is gone for good; that costs this child, not the
watch, which starts another one for the next round.

Before its answers it tells the watch what it does, each as one line `{"tell": KIND, "text":
...}`: the GCS it joins ("gcs"), a temporary file of its own ("file"), "settled" once joined;
so the watch ends a join that Ray holds past --timeout (as rldoctor.joinwatch does for
`check`), names the node, and removes the file.

Ending: EOF on stdin, a `stop` line, SIGTERM or SIGINT kill every probe and leave.
"""

from __future__ import annotations

import json
import os
import signal
import sys


class _Stop(BaseException):
    """SIGTERM or SIGINT: leave now (a BaseException, so no collector swallows it)."""


def _on_signal(signum, frame):
    raise _Stop()


def serve(address: str | None, timeout_s: float, answers) -> int:
    from rldoctor.cluster.session import LiveSession, quiet_ray
    from rldoctor.errors import RldoctorError, first_line

    session = None
    with quiet_ray() as ray_log:  # what Ray prints goes to a log, never into the answers
        try:
            for line in sys.stdin:
                if line.strip() != "collect":
                    break
                try:
                    if session is None:
                        session = LiveSession(address, ray_log)
                    doc = session.snapshot(timeout_s)
                except RldoctorError as exc:
                    _answer(answers, {"ok": False, "reason": str(exc)})
                    return 3
                except Exception as exc:  # never a traceback: the watch logs the reason
                    _answer(answers, {"ok": False, "reason": first_line(exc)})
                    return 1
                doc.setdefault("timing", {})["probes_kept"] = session.fleet.probe_count
                _answer(answers, {"ok": True, "doc": doc})
                del doc
                give_back_free_memory()
        except _Stop:
            pass
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # cleanup is not interrupted twice
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if session is not None:
                session.close(leave=False)
    return 0


def give_back_free_memory() -> bool:
    """Hand the memory glibc keeps free after a round back to the system (malloc_trim).

    Measured over 90 rounds at --interval 1 (benchmarks/watch_child_memory.py): the Python
    heap and the bytes in use stay flat, while the free bytes glibc keeps in its two arenas
    (rldoctor.watch.rounds.CHILD_MALLOC_ARENAS) grew from 20 to 52 MiB by round 20. False
    where the C library has no malloc_trim (musl, macOS)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
    return True


def _answer(answers, payload: dict) -> None:
    answers.write(json.dumps(payload, default=str) + "\n")  # one line: JSON escapes newlines
    answers.flush()


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="rldoctor-watch-collector")
    parser.add_argument("--address", default=None)
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    answers = os.fdopen(os.dup(1), "w")  # the answers' own copy of stdout, before Ray's output
    from rldoctor.cluster import connect

    connect.tell = lambda kind, text="": _answer(answers, {"tell": kind, "text": text})
    code = serve(args.address, args.timeout, answers)
    answers.close()
    sys.stdout.flush()
    os._exit(code)  # never hang in Ray's exit handlers


if __name__ == "__main__":
    main(sys.argv[1:])
