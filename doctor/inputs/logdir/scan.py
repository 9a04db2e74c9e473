"""Every file of the input read against the catalogue of Ray's lines (rldoctor.raylog).

What the session reader (build.py) joins into nodes, actors, workers and jobs needs the
head's gcs_server.out; this needs nothing: each line the catalogue knows is a `hit`
(rldoctor.raylog.hits, the reader the probes use on a live node too). This module finds
the lines to read in each file within the input's byte budget (every line of a small file,
the marked lines of a large one) and reads Ray's events; the hits go into the snapshot's
`log_lines` section.

Standard library only, and never ray.
"""

from __future__ import annotations

import json
import re

from rldoctor.inputs.logdir import files as F
from rldoctor.raylog import catalogue as C
from rldoctor.raylog.hits import Hits, _fields, _fmt, section, unmarked

SCAN_FILE_BYTES = 8 * 2**20  # read from the end of one file (and its first 256 KiB)
SCAN_TOTAL_BYTES = 64 * 2**20  # over the input: the smallest files first (.err, crash dumps)
SMALL_BYTES = 256 * 1024  # files this small are read line by line, larger ones by marker
# the lines of a fatal error that carry no fixed marker: glog's `F1206 ...`, spdlog's level C/F
_FATAL_PREFIX = re.compile(rb"(?m)^(?:F\d{4} \d\d:\d\d|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d{3} [CF] )")
_CONTEXT_MARKERS = (b'File "', b"Error", b"Exception", b"Exit")


class Scanner(Hits):
    def __init__(self, facts, redactor):
        super().__init__(facts, redactor)
        self.files = 0
        self.budget = F.Budget(SCAN_TOTAL_BYTES, SCAN_FILE_BYTES)
        self.kinds: dict[str, int] = {}

    # -- one file --------------------------------------------------------------------------
    def file(self, log: F.LogFile, node_id: str | None) -> None:
        self.files += 1
        self.kinds[log.kind] = self.kinds.get(log.kind, 0) + 1
        if log.kind == "events":
            self._events(log, node_id)
            return
        done = F.read(log, self.budget)
        if done.problem:
            return
        if (len(done.head) + len(done.tail)) <= SMALL_BYTES:
            lines = F.lines_of(done)  # small: every line (a stack's frames and its exception)
        else:  # found at memory speed: only the lines that hold a marker (or a fatal prefix)
            lines = F.marked_lines(done, C.MARKERS + _CONTEXT_MARKERS,
                                   _FATAL_PREFIX if unmarked(log) else None)
        self.lines(lines, log, node_id)

    def _events(self, log: F.LogFile, node_id: str | None) -> None:
        done = F.read(log, self.budget)
        if done.problem:
            return
        for raw in F.lines_of(done):
            raw = raw.strip()
            if not raw.startswith("{"):
                continue
            try:
                data = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(data, dict):
                continue
            label = str(data.get("label") or "")
            custom = data.get("custom_fields") if isinstance(data.get("custom_fields"), dict) else {}
            message = str(data.get("message") or "")
            try:
                ts = float(data.get("timestamp"))
            except (TypeError, ValueError):
                ts = None
            names = {k: str(custom[k]) for k in ("node_id", "worker_id", "job_id", "ip")
                     if custom.get(k)}
            if "job_id" in names:
                names["job"] = names.pop("job_id")
            source = str(data.get("source_type") or "")
            kind = {"GCS": "gcs", "RAYLET": "raylet"}.get(source, "events")
            if label in C.EVENT_LABELS:
                eid, code, what, cause = C.EVENT_LABELS[label]
                m = C.BY_ID["node-marked-dead"].compiled.search(message)
                if m:
                    names.setdefault("node_id", m.group("node_id"))
                    names.setdefault("ip", m.group("ip"))
                fix = C.event_fix(what, message)
                cause = _fmt(cause, _fields({"message": message[:200]}, names,
                                            C.process_of(kind, log.rel), log))
                self._add(eid, C.code_of(code, kind), what, "fail", cause, fix, names, message,
                          log, node_id if kind != "gcs" else None, ts, {"message": message[:300]},
                          releases=f"event label {label}")
                continue
            if str(data.get("severity") or "") not in ("ERROR", "FATAL"):
                continue
            for entry, m in C.match(message, "events"):
                self._hit(entry, m, message, [message], 0, log, node_id, ts=ts, names=names)


def scan(sessions, facts, redactor, session_nodes: dict) -> dict:
    """The `log_lines` section: every hit of every file of `sessions`."""
    scanner = Scanner(facts, redactor)
    every = [(log.size, i, log, session_nodes.get(session.root))
             for i, session in enumerate(sessions) for log in session.files]
    for _size, _i, log, node_id in sorted(every, key=lambda x: (x[0], x[1], x[2].rel)):
        scanner.file(log, node_id)
    return section(scanner.hits, scanner.files, scanner.kinds)
