"""One log line of Ray's: its time, level, pid and message, whatever format wrote it.

Ray writes four kinds of lines into a session's logs:
- C++ (GCS, raylet, core workers): `[2026-12-03 08:01:02,345 W 123 456] (gcs_server)
  gcs_worker_manager.cc:44: text key=value ...` (the `(component)` only in console logs);
- the same as JSON with RAY_BACKEND_LOG_JSON=1: `{"asctime": "...", "levelname": "W",
  "message": "...", "worker_id": "...", ...}`;
- Python components (job supervisor, dashboard): `2026-12-03 08:01:02,345\tINFO file.py:12
  -- text`;
- anything else (a worker's stderr, a traceback): no time, the text as it is.
Times are the writer's local clock with no zone; they are read as UTC, and the snapshot
says so (rldoctor.inputs.logdir.build moves them when the events' unix times show an offset).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

_CPP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[,.](\d{3}) ([TDIWECF]) (\d+) (\d+)\] "
                  r"(?:\((\w+)\) )?(?:[\w./-]+\.(?:cc|h|cpp):\d+: )?(.*)$")
_PY = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[,.](\d{3})\s+(DEBUG|INFO|WARNING|ERROR|"
                 r"CRITICAL)\s+(?:[\w.-]+:\d+ -- )?(.*)$")
_LEVELS = {"T": "TRACE", "D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "C": "FATAL",
           "F": "FATAL"}
# key=value fields Ray's C++ logging appends (WithField) and GCS lines carry in their text
FIELD = re.compile(r"\b(node_id|worker_id|job_id|actor_id|task_id|lease_id|node_name|"
                   r"node_address|ray_version|ray_commit|cluster_id)=([\w.:\-]+)")


@dataclass
class Line:
    text: str  # the message (the whole line when it has no known prefix)
    ts_ms: int | None = None  # milliseconds since the epoch, the line's clock read as UTC
    level: str | None = None
    pid: int | None = None
    fields: dict = field(default_factory=dict)


def _ms(stamp: str, millis: str) -> int | None:
    try:
        moment = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return int(moment.timestamp() * 1000) + int(millis)


def parse(raw: str) -> Line:
    """A Line from one physical line (no newline)."""
    if raw.startswith("["):
        m = _CPP.match(raw)
        if m:
            stamp, millis, level, pid, _tid, _component, text = m.groups()
            return Line(text, _ms(stamp, millis), _LEVELS.get(level, level), int(pid),
                        dict(FIELD.findall(text)))
    elif raw.startswith("{"):
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if isinstance(data, dict) and "message" in data and ("asctime" in data or "levelname" in data):
            text = str(data.get("message") or "")
            stamp = str(data.get("asctime") or "")
            ts = _ms(stamp[:19].replace("T", " "), (stamp[20:23] or "000")) if len(stamp) >= 19 else None
            fields = dict(FIELD.findall(text))
            fields.update({k: str(v) for k, v in data.items() if k in (
                "node_id", "worker_id", "job_id", "actor_id", "task_id", "lease_id")})
            pid = data.get("pid")
            return Line(text, ts, _LEVELS.get(str(data.get("levelname")), data.get("levelname")),
                        int(pid) if str(pid or "").isdigit() else None, fields)
    elif raw[:1].isdigit():
        m = _PY.match(raw)
        if m:
            stamp, millis, level, text = m.groups()
            return Line(text, _ms(stamp, millis), level)
    return Line(raw)


# The lines of gcs_server.out and raylet.out the reader parses (rldoctor.inputs.logdir.build).
GCS_TEXTS = (
    "Registering new node", "Node is dead because", "death reason = ", "Removing node",
    "has been marked dead", "Reporting worker exit", "Actor is failed on worker",
    "Finished leasing worker from", "Registering job", "Marking job as finished",
    "Registering node info", "is_head_node = 1", "Adding job, job id", "Finished marking job state",
    "Start creating actor", "Start leasing worker from node",
    "ray_version=", "Registering actor", "GCS server received SIGTERM",
    "OOM kill reason:", "Selected to kill:")
RAYLET_TEXTS = (
    "Setting node ID", "Initializing NodeManager", "InitialConfigResources",
    "Started worker process", "Killing ", "Raylet graceful shutdown", "ray_version=",
    "OOM kill reason:", "Selected to kill:")

# What the reader looks for, by the text Ray writes (never by file:line: that moves every
# release). A line holding none of these is skipped without being parsed.
MARKERS = (
    # GCS: nodes, workers, actors, cluster
    "Registering new node", "Ray cluster metadata", "Node is dead because",
    "death reason = ", "Removing node", "has been marked dead", "Health check failed for node",
    "Reporting worker exit", "Actor is failed on worker", "Registering actor",
    "Actor created successfully", "GCS server received SIGTERM", "Using existing cluster ID",
    "Generated new cluster ID", "Finished registering job", "Marking job state",
    "Drain", "is_head_node",
    # raylet: identity, workers, memory monitor, crashes, shutdown
    "Setting node ID", "Initializing NodeManager", "Started worker process with pid",
    "Killing ", "killed due to the node running low on memory",
    "Raylet graceful shutdown triggered", "received SIGTERM", "Check failed",
    "*** SIG", "mistakenly been marked as dead", "The raylet exited immediately",
    "Couldn't create a runtime environment", "Failed to connect to GCS",
    "Memory usage above threshold",
    # job supervisor and jobs
    "entrypoint command exited with code", "has been terminated gracefully", "Job supervisor",
    "runtime_env setup failed",
    # workers and drivers
    "Traceback (most recent call last)", "Worker exception caught during", "Error", "Exception",
    ":actor_name:", ":job_id:", ":task_name:", "Creating actor", "Fatal Python error",
    "taking actor", "Exiting because",
) + GCS_TEXTS + RAYLET_TEXTS


def wanted(raw: str) -> bool:
    """Does this line hold something the reader looks for?"""
    return any(marker in raw for marker in MARKERS)
