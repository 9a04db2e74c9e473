"""Ray's lines of one log file read against the catalogue (catalogue.py): the `hit`s.

Each line the catalogue knows is a hit that names what it names (node id or IP, worker id,
pid, actor class, job) from the line, from the file's name (worker-<wid>-<job>-<pid>.err),
from the relay prefix of a pasted console line, or from what the reader knows of the
session (`facts`: its nodes' IPs, its workers' actor classes). Checks turn the hits into
findings (rldoctor.checks._loglines), each with the cause and fix the catalogue states.
Identical lines of one file are counted, not repeated.

One reader for both sides: `check --from` (rldoctor.inputs.logdir.scan, which finds and
reads the files) and the probes on a live node (rldoctor.node.fact_ray_logs, which read
the tails of the logs its Ray processes write), so a node's logs give the same hits either
way. Standard library only: it travels by value onto the nodes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from rldoctor.raylog import catalogue as C
from rldoctor.raylog.kinds import SCAN_ONLY
from rldoctor.raylog.lines import parse

LOOKAHEAD = 80  # lines after a hit searched for its exception and the user's frame
MAX_HITS = 400
_WRAPPERS = {"RayTaskError", "RayActorError", "ActorDiedError", "ActorUnavailableError",
             "WorkerCrashedError", "RaySystemError", "RuntimeEnvSetupError", "RayError",
             "TaskFailedError", "TrialError", "TuneError"}
_EXCEPTION_KINDS = ("exception",)
_EXPECTED_DEATHS = ("EXPECTED_TERMINATION", "AUTOSCALER_DRAIN_IDLE")
_ACTOR_NAME = re.compile(r":actor_name:(\S+)")  # what Ray prints first in an actor's worker files
ACTOR_NAME_LINES = 400


@dataclass(frozen=True)
class Source:
    """One file read: its name as the report shows it, its kind (kinds.py) and what its name
    says (worker id, pid, job); rldoctor.inputs.logdir.files.LogFile is one too."""

    rel: str
    kind: str
    meta: dict = field(default_factory=dict)


def unmarked(log) -> bool:
    """Whether the catalogue's entries without a marker are read in this file: stderr-like
    files (.err, agents' logs, pasted text), where a fatal line has no fixed words."""
    return ".err" in os.path.basename(log.rel) or log.kind in SCAN_ONLY


class AsIs:
    """A redactor that masks nothing (on a node: the client masks what it writes)."""

    def text(self, text: str) -> str:
        return text


class NodeFacts:
    """What a node's own reader knows of its session: its node id and IP, no actor classes."""

    def __init__(self, node_id: str | None = None, ip: str | None = None):
        self.worker_class: dict = {}
        self.nodes = {node_id: {"ip": ip}} if node_id and ip else {}

    def saw(self, ms: int) -> None:
        pass


class Hits:
    """The hits of the files read so far (`items` in the order found, at most MAX_HITS)."""

    def __init__(self, facts, redactor):
        self.facts = facts
        self.r = redactor
        self.hits: list[dict] = []
        self.by_key: dict[tuple, dict] = {}

    def learn(self, lines: list, log) -> None:
        """What a worker's own file says first: the actor class it runs (`:actor_name:`), which
        names the worker in every line that names its id. A reader of several files learns
        from all of them before it reads their lines."""
        wid = (log.meta or {}).get("wid")
        if wid and wid not in self.facts.worker_class:
            named = next((m for m in map(_ACTOR_NAME.match, lines[:ACTOR_NAME_LINES]) if m), None)
            if named:
                self.facts.worker_class[wid] = named.group(1)

    def lines(self, lines: list, log, node_id: str | None) -> None:
        """Read the lines of one file (`log`: its `rel` name, `kind` and `meta`)."""
        stderr_like = unmarked(log)
        self.learn(lines, log)
        for i, raw in enumerate(lines):
            text = raw.rstrip()
            if not text:
                continue
            found = C.match(text, log.kind)
            if stderr_like and not found:  # a line an entry names is told by that entry
                found += [(e, m) for e in C.UNMARKED for m in [e.compiled.search(text)] if m]
            for entry, m in found:
                self._hit(entry, m, text, lines, i, log, node_id)

    def _hit(self, entry, m, text, lines, i, log, node_id, ts=None, names=None) -> None:
        line = parse(text)
        ts = ts if ts is not None else (line.ts_ms / 1000.0 if line.ts_ms else None)
        groups = {k: v for k, v in m.groupdict().items() if v}
        names = dict(names or {})
        for key in ("node_id", "ip", "worker_id", "pid", "job", "actor"):
            if groups.get(key):
                names[key] = groups[key]
        for key, value in C.names_in(text).items():
            names.setdefault(key, value)
        if not names.get("ip") and re.fullmatch(r"\d+\.\d+\.\d+\.\d+", groups.get("node_name") or ""):
            names["ip"] = groups["node_name"]  # Ray names a node by its address
        for key, value in line.fields.items():
            if key in ("node_id", "worker_id", "actor_id", "job_id") and value:
                names.setdefault("job" if key == "job_id" else key, value)
        meta = log.meta or {}
        if meta.get("wid"):
            names.setdefault("worker_id", meta["wid"])
        if meta.get("pid"):
            names.setdefault("pid", str(meta["pid"]))
        if meta.get("job") and meta["job"] != "ffffffff":
            names.setdefault("job", meta["job"])
        if meta.get("ip"):
            names.setdefault("ip", meta["ip"])
        if meta.get("who") and meta["who"] not in ("raylet", "gcs_server"):
            names.setdefault("actor", meta["who"])
        wid = names.get("worker_id")
        if wid and self.facts.worker_class.get(wid):
            names.setdefault("actor", self.facts.worker_class[wid])
        extra = {}
        if entry.kind in _EXCEPTION_KINDS or entry.id == "actor-died":
            extra.update(_look_ahead(lines, i, text))
        if entry.kind == "crash":
            frame = next((f for f in map(C.user_frame, lines[i + 1:i + 1 + LOOKAHEAD]) if f), None)
            if frame:
                extra["frame"] = frame
        severity = entry.severity
        if entry.kind == "disk":  # full is a failure; nearly full (space left) a warning
            left = re.match(r"[\d.]+", groups.get("available") or "0")
            severity = "fail" if not left or float(left.group()) == 0 else "warn"
        if groups.get("reason") in _EXPECTED_DEATHS:
            return  # a node stopped or scaled down on purpose: no trouble
        if entry.id == "ray-task-error" and not extra.get("exception"):
            return  # a remote call named in a traceback that raised nothing here
        groups.update(extra)
        writer = C.writer_kind(text, log.kind)
        process = C.process_of(writer, os.path.basename(log.rel))
        fields = _fields(groups, names, process, log)
        cause = _fmt(entry.cause, fields)
        code = C.code_of(entry.code, writer)
        fix = _fmt(entry.fix, fields) if entry.fix else ""
        if entry.code == "by-process" and code == "RLD403":
            fix = C.NATIVE_FIX  # a worker's crash: its native code, not Ray's
        if entry.kind in ("node-removed", "heartbeat") and not fix:
            what, fix = C.death_fix(groups.get("message") or text)
            extra["death_kind"] = what
        if entry.consequence:
            extra["consequence"] = True
        self._add(entry.id, code, entry.kind, severity, cause,
                  fix, names, text, log, node_id, ts, extra, releases=entry.releases)

    def _add(self, eid, code, kind, severity, cause, fix, names, text, log, node_id, ts, extra,
             releases="") -> None:
        key = (eid, log.rel, cause)
        seen = self.by_key.get(key)
        if seen is not None:
            seen["count"] += 1
            if ts:
                seen["last_time"] = ts
            return
        if len(self.hits) >= MAX_HITS:
            return
        if node_id and "node_id" not in names and log.kind not in ("console", "other") \
                and not log.kind.startswith("console"):
            names["node_id"] = node_id
        if names.get("node_id") and not names.get("ip"):
            ip = (self.facts.nodes.get(names["node_id"]) or {}).get("ip")
            if ip:
                names["ip"] = ip
        if ts:
            self.facts.saw(int(ts * 1000))
        hit = {"entry": eid, "code": code, "kind": kind, "severity": severity,
               "cause": self.r.text(cause)[:600], "fix": fix, "releases": releases,
               "file": log.rel, "file_kind": log.kind, "time": ts, "last_time": ts, "count": 1,
               "line": self.r.text(_clip(text, 500)), "names": {k: self.r.text(str(v))
                                                               for k, v in names.items()}}
        if extra.get("consequence"):
            hit["consequence"] = True
        for key in ("exception", "frame", "death_kind"):
            if extra.get(key):
                hit[key] = self.r.text(str(extra[key]))[:400]
        self.by_key[key] = hit
        self.hits.append(hit)


def section(hits: list, files: int, kinds: dict) -> dict:
    """The snapshot's `log_lines` section of these hits, in the logs' time."""
    items = sorted(hits, key=lambda h: (h["time"] is None, h["time"] or 0, h["file"]))
    return {"items": items, "files": files, "kinds": dict(sorted(kinds.items())),
            "truncated": len(hits) >= MAX_HITS,
            "catalogue": {"entries": len(C.ENTRIES), "event_labels": sorted(C.EVENT_LABELS)}}


def _look_ahead(lines, i, text) -> dict:
    """The user's exception (its last line, not Ray's wrappers) and frame after line i."""
    out = {}
    here = C.exception_in(text.split(": ", 1)[-1]) if ": " in text else None
    for raw in [text] + list(lines[i + 1:i + 1 + LOOKAHEAD]):
        stripped = raw.strip()
        frame = C.user_frame(raw)
        if frame:
            out["frame"] = frame
            continue
        found = C.exception_in(stripped)
        if found and found[0] not in _WRAPPERS:
            out["exception"] = f"{found[0]}: {found[1]}" if found[1] else found[0]
            break
    if "exception" not in out and here and here[0] not in _WRAPPERS:
        out["exception"] = f"{here[0]}: {here[1]}"
    return out


def _fields(groups: dict, names: dict, process: str, log) -> dict:
    fields = dict(groups)
    fields.setdefault("exception", "an exception")
    fields.setdefault("message", "")
    fields["process"] = process
    fields["file"] = os.path.basename(log.rel)
    fields.setdefault("ip", names.get("ip") or "?")
    fields.setdefault("job", names.get("job") or "?")
    who = names.get("actor")
    where = []
    if who:
        where.append(who)
    if names.get("pid"):
        where.append(f"pid {names['pid']}")
    if names.get("ip"):
        where.append(f"ip {names['ip']}")
    fields["in_who"] = f" ({', '.join(where)})" if where else ""
    fields["on_ip"] = f" on node {names['ip']}" if names.get("ip") else ""
    if not fields.get("exit_type"):
        fields["exit_type"] = "no exit type in the line"
    detail = fields.get("detail") or ""
    fields["detail_short"] = f": {_clip(detail, 160)}" if detail else ""
    return fields


class _Safe(dict):
    def __missing__(self, key):
        return "?"


def _fmt(template: str, fields: dict) -> str:
    try:
        return template.format_map(_Safe({k: _clip(str(v), 300) for k, v in fields.items()}))
    except (ValueError, IndexError):
        return template


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
