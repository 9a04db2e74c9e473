"""TCP connects from a node to the Ray ports of other nodes, run on the node itself.

Run through `NodeProbe.call_here(func, ...)`; this module is pickled by value (see
`register`), so the nodes need nothing of rldoctor. Standard library, ray (to place one
task) and the probes' own helpers only. Nothing is left behind: every socket is closed
before a function returns, except the one `listen_briefly` opens, which its own thread
closes when its time is up.
"""

from __future__ import annotations

# Module-level, so they travel by value with this module's functions (probes is by value too).
from rldoctor.node.processes import _cmdline, _flags, _raylet_above
from rldoctor.words import first_line

MAX_OPEN_SOCKETS = 256  # connects in flight at once on one node (file descriptors are finite)
LISTEN_BACKLOG = 128


def _status_of(errno_value: int) -> str:
    """A failed connect in the words RLD204 uses."""
    import errno

    if errno_value == errno.ECONNREFUSED:
        return "refused"
    if errno_value in (errno.ETIMEDOUT,):
        return "timeout"
    if errno_value == errno.ENETUNREACH:
        return "no-route"
    if errno_value == errno.EHOSTUNREACH:
        return "unreachable"
    return "error:" + (errno.errorcode.get(errno_value) or str(errno_value))


def connect_all(targets: list, deadline_s: float) -> list:
    """A TCP connect to every (host, port) of `targets`, all in flight together.

    Each connect gets `deadline_s`; at most MAX_OPEN_SOCKETS are open at once, so a long
    list of closed ports costs a few deadlines, not one per port. Returns, in the order of
    `targets`, [status, ms] with status "open", "timeout" (no answer: something drops the
    packets), "refused" (a reset: nothing listens, or a reject rule), "no-route" (this node
    has no route to the address), "unreachable" (the host did not answer, or a router said so)
    or "error:<errno>".
    """
    import errno
    import selectors
    import socket
    import time

    results: list = [None] * len(targets)
    selector = selectors.DefaultSelector()
    waiting: dict = {}  # socket -> (index, started)
    queue = list(range(len(targets)))
    queue.reverse()

    def start_next() -> None:
        while queue and len(waiting) < MAX_OPEN_SOCKETS:
            index = queue.pop()
            host, port = targets[index]
            started = time.monotonic()
            try:
                family = socket.AF_INET6 if ":" in str(host) else socket.AF_INET
                sock = socket.socket(family, socket.SOCK_STREAM)
            except OSError as exc:
                results[index] = [_status_of(exc.errno or 0), 0.0]
                continue
            sock.setblocking(False)
            code = sock.connect_ex((str(host), int(port)))
            if code == 0:
                results[index] = ["open", round((time.monotonic() - started) * 1000, 2)]
                sock.close()
                continue
            if code not in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
                results[index] = [_status_of(code), round((time.monotonic() - started) * 1000, 2)]
                sock.close()
                continue
            waiting[sock] = (index, started)
            selector.register(sock, selectors.EVENT_WRITE)

    try:
        start_next()
        while waiting:
            now = time.monotonic()
            soonest = min(started for _, started in waiting.values()) + deadline_s
            for key, _ in selector.select(timeout=max(0.0, soonest - now)):
                sock = key.fileobj
                index, started = waiting.pop(sock)
                selector.unregister(sock)
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                ms = round((time.monotonic() - started) * 1000, 2)
                results[index] = ["open", ms] if code == 0 else [_status_of(code), ms]
                sock.close()
            now = time.monotonic()
            for sock, (index, started) in list(waiting.items()):
                if now - started >= deadline_s:
                    waiting.pop(sock)
                    selector.unregister(sock)
                    sock.close()
                    results[index] = ["timeout", round((now - started) * 1000, 2)]
            start_next()
    finally:
        for sock in waiting:
            sock.close()
        selector.close()
    return results


def listen_briefly(low: int | None, high: int | None, hold_s: float) -> dict:
    """Listen on one free port of this node's worker port range for `hold_s` seconds.

    Ray gives each worker process a port of the range (--min-worker-port..--max-worker-port)
    and the other nodes connect to it (task pushes, actor calls, object owners). The port
    is taken from the top of the range, which the raylet hands out last, and its own thread
    closes it after `hold_s`. Returns {"port"} or {"error"}.
    """
    import random
    import socket
    import threading
    import time

    candidates = []
    if low and high and high > low:
        top = max(low, high - max(1, (high - low) // 10))
        candidates = random.sample(range(top, high + 1), min(24, high + 1 - top))
    candidates.append(0)  # no range (or all taken): any port; the evidence says so
    sock = None
    for port in candidates:
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("0.0.0.0", port))
            sock.listen(LISTEN_BACKLOG)
            break
        except OSError:
            sock.close()
            sock = None
    if sock is None:
        return {"error": "no free port to listen on"}
    chosen = sock.getsockname()[1]
    sock.settimeout(0.2)
    until = time.monotonic() + hold_s

    def serve() -> None:
        try:
            while time.monotonic() < until:
                try:
                    conn, _ = sock.accept()
                    conn.close()
                except socket.timeout:
                    continue
                except OSError:
                    break
        finally:
            sock.close()

    threading.Thread(target=serve, name="rldoctor-listen", daemon=True).start()
    return {"port": chosen, "in_range": bool(low and high and low <= chosen <= high)}


def worker_range_here() -> list | None:
    """[low, high] of this node's worker port range, from its raylet's command line."""
    import os

    raylet = _raylet_above(os.getpid())
    flags = _flags(_cmdline(raylet)) if raylet else {}
    try:
        low, high = int(flags.get("min_worker_port", "")), int(flags.get("max_worker_port", ""))
    except ValueError:
        return None
    return [low, high] if low and high else None


def listen_in_worker_range(hold_s: float) -> dict:
    """`listen_briefly` on the worker range of the node this runs on (a task pinned there)."""
    low, high = worker_range_here() or [None, None]
    return {**listen_briefly(low, high, hold_s), "range": [low, high] if low else None}


def listen_on(node_id: str, hold_s: float, timeout_s: float) -> dict:
    """From a healthy node's probe: a zero-CPU task pinned to `node_id` listens on a port of
    that node's worker range. For a node whose own probe never answered: the task is leased
    and pushed from here, so a worker range closed only to the head (where the GCS and the
    driver live) is tested all the same. Returns what the task answered, or {"error"}."""
    import ray

    from rldoctor.node.placement import on_node

    task = ray.remote(num_cpus=0, max_retries=0)(listen_in_worker_range)
    ref = on_node(task, node_id).remote(hold_s)
    try:
        return ray.get(ref, timeout=timeout_s)
    except Exception as exc:
        try:
            ray.cancel(ref, force=True)
        except Exception:
            pass
        return {"error": first_line(exc, 160)}


def register() -> None:
    """Pickle this module's functions by value, so nodes need not have rldoctor."""
    import sys

    import ray.cloudpickle

    from rldoctor import words

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    words.register()  # first_line travels with this module's functions
