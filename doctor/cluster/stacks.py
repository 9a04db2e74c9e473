"""Python stacks of processes on the cluster, taken with py-spy through the probe fleet.

The one stack-capture facility of rldoctor: `capture(fleet, targets, budget)` asks the
probe actor of each target's node to run `py-spy dump` on the target's pid (see
`rldoctor.node.py_spy`), every node at once, each dump bounded in time. What cannot be
dumped (no probe on the node, a pid that exited, py-spy missing or refused, a timeout)
comes back as a failed entry with the reason, never as an exception.

`parse_py_spy(text)` reads py-spy 0.4's text output into threads and frames;
`user_frames(threads)` keeps the frames of the user's own code (not Ray, not RLlib,
not the standard library, not installed packages), innermost first: for an env runner
stuck in its env that is `MyEnv.step (my_env.py:12)`.
"""

from __future__ import annotations

import os
import re

DEFAULT_STACK_TIMEOUT_S = 2.0
USER_FRAMES_SHOWN = 5

_THREAD = re.compile(r'^Thread (?P<id>0x[0-9A-Fa-f]+|\d+) \((?P<status>[^)]*)\)(?:: "(?P<name>.*)")?\s*$')
_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
# Code that is not the user's: installed packages, the standard library, Python's own
# frozen modules, and Ray itself when it runs from a source checkout.
_NOT_USER = re.compile(
    r"/(?:site|dist)-packages/"
    r"|/lib/python\d+(?:\.\d+)?t?/"
    r"|^<"
    r"|(?:^|/)ray/(?:_private|_raylet|rllib|tune|train|air|util|data|serve|dag|experimental"
    r"|autoscaler|dashboard|core|workflow|actor\.py|remote_function\.py|worker\.py"
    r"|runtime_context\.py|exceptions\.py|_common)")


def is_user_file(path: str) -> bool:
    """Is `path` (a frame's file, as py-spy prints it) the user's own code?"""
    return bool(path) and not _NOT_USER.search(path)


def parse_py_spy(text: str) -> list[dict]:
    """Threads of a `py-spy dump` text: [{"name", "id", "active", "status", "frames"}].

    Frames are innermost first, as py-spy prints them: {"function", "file", "line"}
    (`line` is None when py-spy gives none). Argument and local lines (`--locals`)
    and the process header are skipped.
    """
    threads: list[dict] = []
    current: dict | None = None
    for raw in (text or "").splitlines():
        line = raw.rstrip()
        match = _THREAD.match(line)
        if match:
            tid = match.group("id")
            status = match.group("status")
            current = {"name": match.group("name") or "", "id": int(tid) if tid.isdigit() else tid,
                       "active": status.startswith("active"), "status": status, "frames": []}
            threads.append(current)
            continue
        if current is None or not raw.startswith("    ") or raw.startswith("        "):
            continue  # header lines, blank lines, --locals detail
        frame = _FRAME.match(line.strip())
        if frame:
            number = frame.group("line")
            current["frames"].append({"function": frame.group("function"),
                                      "file": frame.group("file"),
                                      "line": int(number) if number else None})
    return threads


def _thread_order(thread: dict) -> tuple:
    return (thread.get("name") != "MainThread", not thread.get("active"))


def user_frames(threads: list[dict], limit: int = USER_FRAMES_SHOWN) -> list[dict]:
    """The user's own frames of the thread that runs user code, innermost first.

    The thread chosen is the main thread when it is in user code (Ray runs an actor's
    calls there), else an active one, else the first with user code. Each frame gets
    the thread's name under "thread".
    """
    candidates = [t for t in threads if any(is_user_file(f.get("file", "")) for f in t["frames"])]
    if not candidates:
        return []
    thread = sorted(candidates, key=_thread_order)[0]
    mine = [dict(f, thread=thread.get("name", "")) for f in thread["frames"]
            if is_user_file(f.get("file", ""))]
    return mine[:limit]


def frame_text(frame: dict) -> str:
    """`MyEnv.step (my_env.py:12)`: a frame the way a traceback reader expects it."""
    where = os.path.basename(frame.get("file") or "") or "?"
    if frame.get("line") is not None:
        where += f":{frame['line']}"
    return f"{frame.get('function', '?')} ({where})"


def _entry(target: dict) -> dict:
    return {"node_id": target["node_id"], "pid": int(target["pid"]), "label": target.get("label", ""),
            "status": "failed", "threads": [], "user_frames": [], "where": None, "error": None,
            "duration_s": None}


def _no_probe_reason(fleet, node_id: str) -> str:
    failure = (getattr(fleet, "failed", None) or {}).get(node_id)
    if failure:
        return f"no probe on the node: {failure.get('error') or failure.get('kind')}"
    return "no probe on the node (the node is dead or was not probed)"


def _fill(entry: dict, reply: dict) -> None:
    entry["duration_s"] = reply.get("duration_s")
    if reply.get("status") != "ok":
        entry["error"] = reply.get("error") or "py-spy failed"
        return
    threads = parse_py_spy(reply.get("text", ""))
    entry.update(status="ok", text=reply["text"], threads=threads, user_frames=user_frames(threads),
                 truncated=bool(reply.get("truncated")))
    entry["where"] = frame_text(entry["user_frames"][0]) if entry["user_frames"] else None
    if not threads:
        entry.update(status="failed", error="py-spy printed no thread")


def capture(fleet, targets: list[dict], budget, per_stack_timeout_s: float = DEFAULT_STACK_TIMEOUT_S) -> dict:
    """Stacks of `targets` ({"node_id", "pid", optional "label"}), keyed "<node_id>:<pid>".

    Every node is asked at once; one node's probe takes its dumps one after the other,
    so the wait is bounded by the busiest node's count times `per_stack_timeout_s`
    (and by `budget`). Never raises.
    """
    from rldoctor.cluster.fleet import ask

    results: dict[str, dict] = {}
    calls: dict = {}
    per_node: dict[str, int] = {}
    for target in targets:
        try:
            key = f"{target['node_id']}:{int(target['pid'])}"
        except (KeyError, TypeError, ValueError):
            continue
        if key in results:
            label = target.get("label")
            if label and label not in results[key]["label"]:
                results[key]["label"] = f"{results[key]['label']}, {label}".strip(", ")
            continue
        entry = results[key] = _entry(target)
        calls[key] = (entry["node_id"], "stack", entry["pid"], per_stack_timeout_s)
        if entry["node_id"] in (getattr(fleet, "actors", None) or {}):
            per_node[entry["node_id"]] = per_node.get(entry["node_id"], 0) + 1
    if not calls:
        return results
    busiest = max(per_node.values(), default=0)
    wait_s = budget.left(busiest * (per_stack_timeout_s + 0.25) + 1.0)
    for key, answer in ask(fleet, calls, wait_s).items():
        if answer.ok:
            _fill(results[key], answer.value)
        elif answer.kind == "no_probe":
            results[key]["error"] = _no_probe_reason(fleet, answer.node_id)
        elif answer.kind == "timeout":
            results[key]["error"] = f"timed out: the node's probe did not answer within {wait_s:.1f}s"
            results[key]["duration_s"] = round(answer.took_s, 3)
        elif answer.error.startswith("probe unreachable"):
            results[key]["error"] = answer.error[:300]
        else:  # the probe (or its node) died during the dump
            results[key]["error"] = f"probe failed: {answer.error}"
    return results
