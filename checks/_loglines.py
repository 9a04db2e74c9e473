"""Findings from Ray's own log lines (the snapshot's `log_lines` section), for the checks whose
code a line is evidence for.

The reader of a dead cluster's logs (rldoctor.inputs.logdir.scan) matches every line it reads
against the catalogue of Ray's lines and stores each `hit` with its code, cause, fix and what
it names. A check decorated with `also(code)` yields its own findings first, then one finding
per story the hits of its code tell that its own findings do not already tell (same subject):
one node's death with its cause first (an agent failed, so the raylet exited, so the node was
removed), one worker's crash or exception, one node's memory kills, ... in the logs' time.

Pure: reads the snapshot only.
"""

from __future__ import annotations

import functools
from datetime import datetime, timezone

from rldoctor.registry import fail, warn
from rldoctor.snapshot import dig

# Which hit tells the cause when several tell one node's story (first is the earliest cause).
_CAUSE_RANK = {"agent": 0, "crash": 1, "port": 2, "fds": 3, "threads": 3, "disk": 3, "oom": 4,
               "gcs": 5, "heartbeat": 6, "node-removed": 7}
MAX_FINDINGS = 40


def _hits(snap, code: str) -> list[dict]:
    return [h for h in (snap.field("log_lines", "items") or [])
            if isinstance(h, dict) and h.get("code") == code]


def _node_of(snap, names: dict) -> str | None:
    if names.get("node_id"):
        return names["node_id"]
    ip = names.get("ip")
    if ip:
        for node in snap.nodes or []:
            if node.get("ip") == ip:
                return node.get("node_id")
    return None


def _clock(epoch) -> str | None:
    if not epoch:
        return None
    return datetime.fromtimestamp(float(epoch), timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _subject(snap, hit: dict, ips_to_nodes: dict) -> str:
    names = hit.get("names") or {}
    node = _node_of(snap, names) or ips_to_nodes.get(names.get("ip"))
    if node:
        return f"node:{node}"
    if names.get("ip"):
        return f"ip:{names['ip']}"
    return f"file:{hit.get('file')}"


def _where(hit_names: dict) -> str:
    parts = []
    if hit_names.get("ip"):
        parts.append(f"node {hit_names['ip']}")
    elif hit_names.get("node_id"):
        parts.append(f"node {hit_names['node_id'][:12]}")
    for key, label in (("actor", ""), ("pid", "pid "), ("worker_id", "worker "), ("job", "job ")):
        if hit_names.get(key):
            value = hit_names[key] if key != "worker_id" else hit_names[key][:12]
            parts.append(f"{label}{value}")
    return ", ".join(parts)


def findings(snap, code: str, already=()) -> list:
    """The findings of `code` the log lines tell, leaving out subjects `already` reported."""
    hits = _hits(snap, code)
    if hits:
        asked = _asked_for(snap)
        hits = [h for h in hits if not asked(h)]
    if not hits:
        return []
    every = snap.field("log_lines", "items") or []
    if any(not h.get("consequence") for h in every) or already:
        # a death that says no cause is told by the lines that tell one (or by the check)
        hits = [h for h in hits if not h.get("consequence")]
    told = " ".join(f.message for f in already)
    hits = [h for h in hits if not (h.get("exception") and h["exception"][:60] in told)]
    # the worker a finding of the check already names (a failed job's runner): its lines are
    # that finding's story, not a second one
    told_pids = {str(dig(f.evidence, "worker", "pid")) for f in already
                 if dig(f.evidence, "worker", "pid")}
    hits = [h for h in hits if str(dig(h, "names", "pid") or "") not in told_pids]
    taken = {f.subject for f in already}
    ips_to_nodes = {}
    for h in snap.field("log_lines", "items") or []:
        n = h.get("names") or {}
        if n.get("ip") and n.get("node_id"):
            ips_to_nodes.setdefault(n["ip"], n["node_id"])
    subjects = {id(h): _subject(snap, h, ips_to_nodes) for h in hits}
    by_file: dict[str, set] = {}
    for h in hits:  # one file that names its node once names it for all its lines
        if not subjects[id(h)].startswith("file:"):
            by_file.setdefault(h.get("file"), set()).add(subjects[id(h)])
    for h in hits:
        named = by_file.get(h.get("file")) or set()
        if subjects[id(h)].startswith("file:") and len(named) == 1:
            subjects[id(h)] = next(iter(named))
    stories: dict[tuple, list[dict]] = {}
    for hit in hits:
        subject = subjects[id(hit)]
        if code == "RLD101":  # one node, one story: every hit of the node joins it
            key = (subject,)
        else:  # one worker (or one file), one kind of trouble
            names = hit.get("names") or {}
            who = names.get("worker_id") or hit.get("file")
            key = (subject, hit.get("kind"), who)
        stories.setdefault(key, []).append(hit)
    out = []
    own = {f.subject: f for f in already}
    for key, story in stories.items():
        subject = key[0]
        story.sort(key=lambda h: (h.get("time") is None, h.get("time") or 0))
        root = min(story, key=lambda h: (_CAUSE_RANK.get(h.get("kind"), 9),
                                         h.get("time") is None, h.get("time") or 0))
        if subject in taken:
            if code == "RLD101" and subject in own:
                _join(own[subject], story, root)
            continue
        names = {}
        for h in story:
            for k, v in (h.get("names") or {}).items():
                names.setdefault(k, v)
        where = _where(names)
        message = root["cause"]
        if where and where not in message:
            message += f" [{where}]"
        if root.get("exception") and root["exception"] not in message:
            message += f": {root['exception']}"
        if root.get("frame"):
            message += f", at {root['frame']}"
        then = [h for h in story if h is not root and h["cause"] != root["cause"]]
        if then:
            message += "; then " + "; ".join(dict.fromkeys(h["cause"] for h in then[:3]))
        count = sum(h.get("count") or 1 for h in story)
        evidence = {"from": "Ray's log lines", "names": names,
                    "first_time": _clock(story[0].get("time")),
                    "lines": [{"time": _clock(h.get("time")), "file": h.get("file"),
                               "line": h.get("line"), "count": h.get("count"),
                               "releases": h.get("releases"), "entry": h.get("entry")}
                              for h in story[:12]],
                    "lines_matched": count}
        for k in ("exception", "frame", "death_kind"):
            if root.get(k):
                evidence[k] = root[k]
        severity = fail if any(h.get("severity") == "fail" for h in story) else warn
        out.append(severity(subject, message, evidence, root.get("fix") or ""))
        if len(out) >= MAX_FINDINGS:
            break
    return out


def _asked_for(snap):
    """Whether a line is about a worker whose end was asked for (a driver that exited, the
    workers of a job that ended well, rldoctor's own): no crash, whatever the line's words
    (rldoctor.worker_exits, the one reading for every source)."""
    from rldoctor.worker_exits import Lazy

    ends = Lazy(snap.data)
    dead = {w.get("worker_id"): w for w in (snap.field("workers", "dead") or [])
            if isinstance(w, dict)}

    def asked(hit: dict) -> bool:
        worker_id = dig(hit, "names", "worker_id")
        return bool(worker_id) and \
            ends.asked_for(dead.get(worker_id) or {"worker_id": worker_id}) is not None
    return asked


def _join(finding, story: list[dict], root: dict) -> None:
    """A node's death the check told, joined with what the node's own lines say came first
    (its agent failed, its raylet crashed): one story, in the logs' time."""
    finding.evidence["log_lines"] = [{"time": _clock(h.get("time")), "file": h.get("file"),
                                      "line": h.get("line"), "entry": h.get("entry")}
                                     for h in story[:12]]
    if _CAUSE_RANK.get(root.get("kind"), 9) < _CAUSE_RANK["heartbeat"] and \
            root["cause"] not in finding.message:
        finding.message += f"; first, {root['cause']} ({root.get('file')}, {_clock(root.get('time')) or 'no time'})"
    told = root.get("death_kind") not in (None, "unknown", "heartbeat") or \
        _CAUSE_RANK.get(root.get("kind"), 9) < _CAUSE_RANK["heartbeat"]
    if told and root.get("fix") and root["fix"] not in finding.fix:
        finding.fix = root["fix"] + " " + finding.fix  # the fix that fits what the lines say


def also(code: str, needs: tuple = ()):
    """Decorate a check: its own findings (when the snapshot has the sections it `needs`),
    then the findings of `code` that Ray's log lines tell and its own do not."""
    def wrap(func):
        @functools.wraps(func)
        def run(snap, params):
            own = []
            if all(any(snap.has(s) for s in need.split("|")) for need in needs):
                own = list(func(snap, params) or [])
            yield from own
            yield from findings(snap, code, own)
        return run
    return wrap
