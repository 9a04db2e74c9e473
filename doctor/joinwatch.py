"""A bound on joining a cluster that holds even while Ray holds the interpreter.

Ray's raylet holds a cluster's first driver until the workers it starts for it have
registered; on a fresh cluster whose workers hang at start, the driver's registration blocks
in Ray's C++ core with the GIL held, so no Python timeout of the joining process can fire
(docs/performance.md). So the bound is kept by another process: `guard()` forks before Ray
is imported; the child goes on with the command (it joins, collects, reports) and the parent
only keeps time. Once the child has joined (or given up joining: `settled()`), the parent
waits for it and leaves with its exit code. If the child has not settled by the deadline
(`--timeout`), the parent prints one line naming what it waited for and the node to look at,
ends the child (and anything it started), removes the files it was told of, and exits 3
(nothing could be diagnosed).

Standard library only; a no-op where Ray is already imported (a fork would copy its threads),
where there is no fork, and inside another program (tests that call the CLI in-process).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from pathlib import Path

EXIT_UNDIAGNOSABLE = 3
GRACE_S = 1.0  # between SIGTERM and SIGKILL of a child that does not leave
_fd: int | None = None  # the child's end of the pipe to its time keeper
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def is_rldoctor_process() -> bool:
    """Is this process rldoctor's own command (the console script, `python -m rldoctor`)?"""
    argv0 = Path(sys.argv[0] if sys.argv else "")
    return argv0.name == "rldoctor" or (argv0.name == "__main__.py" and argv0.parent.name in ("rldoctor", "doctor"))


def guard(timeout_s: float, address: str) -> None:
    """Fork a time keeper for the join to `address`; returns in the child only (see above)."""
    global _fd
    if _fd is not None or "ray" in sys.modules or not hasattr(os, "fork") or not is_rldoctor_process():
        return
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    # held until the keeper forwards them: a Ctrl-C right after the fork reaches the child too
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.setpgid(0, 0)  # a group of its own: ended whole; Ctrl-C reaches it through the keeper
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _fd = write_end
        return
    os.close(write_end)
    os._exit(_keep_time(pid, read_end, timeout_s, address, mask))


def tell(kind: str, text: str = "") -> None:
    """Tell the time keeper something (the node Ray joins, a file to remove if it must end us;
    "settled": see settled())."""
    if kind == "settled":
        settled()
        return
    if _fd is None:
        return
    try:
        os.write(_fd, f"{kind} {text}".replace("\n", " ").encode()[:4000] + b"\n")
    except OSError:
        pass


def settled() -> None:
    """The join is over (joined, or failed in Python): the time keeper waits for the end."""
    global _fd
    if _fd is None:
        return
    try:
        os.write(_fd, b"settled \n")
        os.close(_fd)
    except OSError:
        pass
    _fd = None


def _keep_time(child: int, pipe: int, timeout_s: float, address: str, mask) -> int:
    interrupted: list[int] = []
    def forward(signum, _frame):  # Ctrl-C, SIGTERM, SIGHUP: the child's to handle (cleanup)
        _signal(child, signum)
        if signum == signal.SIGINT:
            interrupted.append(1)

    for sig in _FORWARDED:
        if signal.getsignal(sig) is not signal.SIG_IGN:  # ignored (nohup, a background job): still
            signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # what came meanwhile is forwarded now
    deadline = time.monotonic() + timeout_s
    told: dict[str, list[str]] = {"node": [], "file": []}
    buffer = b""
    ctrl_c = False
    while True:
        if interrupted:  # Ctrl-C: the child cleans up and leaves; one stuck in Ray cannot
            interrupted.clear()
            ctrl_c = True
            deadline = min(deadline, time.monotonic() + 2.0)
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            ready, _, _ = select.select([pipe], [], [], left)
        except InterruptedError:
            continue
        if not ready:
            continue
        data = os.read(pipe, 4096)
        if not data:  # the child left, or settled and closed its end
            return _wait(child)
        buffer += data
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            kind, _, text = line.decode(errors="replace").partition(" ")
            if kind == "settled":
                return _wait(child)
            told.setdefault(kind, []).append(text)
    if not ctrl_c:
        sys.stderr.write(f"rldoctor: {_stuck_line(timeout_s, address, told)}\n")
        sys.stderr.flush()
    _end(child)
    for path in told["file"]:
        try:
            os.unlink(path)
        except OSError:
            pass
    return 130 if ctrl_c else EXIT_UNDIAGNOSABLE


def _stuck_line(timeout_s: float, address: str, told: dict) -> str:
    return held_join_line(timeout_s, address, (told.get("gcs") or [address])[-1])


def held_join_line(timeout_s: float, address: str, gcs: str) -> str:
    """The one line of a join Ray held past --timeout (`check`, `collect`, a `watch` round)."""
    found = local_node(gcs)
    node = f"node {found}, the node of this machine that Ray joins drivers to," if found \
        else "the node of this machine that Ray joins drivers to (the head, if it runs here)"
    return (f"Ray did not let rldoctor join the cluster at {address} as a driver within "
            f"{timeout_s:g}s (--timeout): Ray holds a cluster's first driver until the workers "
            f"it starts for it register, and on {node} they have not; look at that node's "
            "raylet.out (\"have not registered within the timeout\") and its python-core-worker "
            "logs for workers that hang at start, or run rldoctor from another node")


def held_collection_line(waited_s: float, gcs: str) -> str:
    """The one line of a collection Ray held past its bound after the join (a `watch` round)."""
    found = local_node(gcs)
    node = f"node {found}" if found else "the node of this machine that Ray joined it to"
    return (f"Ray held rldoctor's collection from the cluster at {gcs} past {waited_s:g}s "
            f"(--timeout and a margin) after it joined as a driver on {node}: no snapshot came; "
            "look at that node's raylet.out and the GCS's gcs_server.out for calls that do not "
            "answer")


def local_node(gcs_address: str, proc: str = "/proc") -> str | None:
    """`<node id> (<ip>)` of the node on this machine that `ray.init` joins a driver of the
    cluster at `gcs_address` to, read from the raylets' command lines as Ray itself finds them
    (the head if it runs here, else another node of that cluster here); None if none runs here."""
    found = []
    for pid in os.listdir(proc) if os.path.isdir(proc) else ():
        try:
            with open(os.path.join(proc, pid, "cmdline"), "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if not args or not args[0].endswith("/raylet") or \
                not any(f"--gcs-address={gcs_address}" in a.split() for a in args):
            continue
        flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
        if flags.get("node_id"):
            head = "node:__internal_head__" in flags.get("static_resource_list", "")
            found.append((not head, flags["node_id"], flags.get("node_ip_address") or "?"))
    if not found:
        return None
    _, node_id, ip = min(found)
    return f"{node_id[:12]} ({ip})"


def _wait(child: int) -> int:
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            return EXIT_UNDIAGNOSABLE
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _signal(child: int, signum: int) -> None:
    """SIGTERM or SIGHUP to the time keeper: to the child too, whose exit code is then ours."""
    try:
        os.kill(child, signum)
    except OSError:
        pass


def _end(child: int) -> None:
    """End the child and whatever it started (its process group): SIGTERM, then SIGKILL after
    GRACE_S."""
    try:
        os.killpg(child, signal.SIGTERM)
    except OSError:
        pass
    stop_at, reaped = time.monotonic() + GRACE_S, False
    while time.monotonic() < stop_at and not reaped:
        try:
            reaped = os.waitpid(child, os.WNOHANG)[0] == child
        except ChildProcessError:
            reaped = True
        time.sleep(0 if reaped else 0.05)
    try:
        os.killpg(child, signal.SIGKILL)  # whatever is left of the group
    except OSError:
        pass
    if not reaped:
        _wait(child)
