"""The incident bundle's log items when the bundle is made from logs (`collect --bundle OUT
--from DIR`): the same files a live bundle holds, read from the session directories.

Per node: the tails of raylet.out/.err, and on the head gcs_server.out/.err; the job-driver
and supervisor logs of every job; the events files; and the .err/.out of the workers of the
failed jobs' chains and of the workers that died (logs/workers/). The bytes go into the
bundle through its redactor, like a live bundle's (rldoctor.bundle.assemble).
"""

from __future__ import annotations

import os

from rldoctor.bundle import node_dir
from rldoctor.bundle.manifest import Item
from rldoctor.inputs.logdir import files as F

LOG_LINES, LOG_MAX_BYTES = 1000, 256 * 1024
WORKER_LOG_MAX_BYTES = 128 * 1024
NODE_LOGS = ("raylet.out", "raylet.err")
HEAD_LOGS = ("gcs_server.out", "gcs_server.err")
MAX_WORKERS = 32


class LogItems:
    """Items of the logs of `doc` (read_logs of `directory`), built at once."""

    ran = True
    secret_sources: list = []
    redacted: dict = {}

    def __init__(self, doc: dict, directory: str):
        self.items: list[Item] = []
        sessions = F.find_sessions(directory)
        node_of = self._node_of_sessions(doc, sessions, os.path.abspath(directory))
        chain_workers = set()
        for job in (doc.get("jobs") or {}).get("jobs") or []:
            chain_workers.update(w.get("worker_id") for w in job.get("worker_logs") or [])
        chain_workers.update(w.get("worker_id") for w in (doc.get("workers") or {}).get("dead") or [])
        chain_workers.discard(None)
        workers_taken = 0
        for index, session in enumerate(sessions):
            node_id = node_of.get(session.root) or f"unknown-{index}"
            base = f"{node_dir(node_id)}/logs"
            for log in session.files:
                name = os.path.basename(log.path)
                sub = os.path.relpath(log.path, session.logs)
                if log.kind in ("raylet", "gcs") and name.split(".")[0] + "." + name.split(".")[-1] \
                        in NODE_LOGS + HEAD_LOGS:
                    self._add(log, node_id, f"{base}/{sub}", LOG_MAX_BYTES)
                elif log.kind in ("job_driver", "supervisor", "events"):
                    self._add(log, node_id, f"{base}/{sub}", LOG_MAX_BYTES)
                elif log.kind == "worker" and log.meta.get("wid") in chain_workers and \
                        workers_taken < MAX_WORKERS:
                    workers_taken += 1
                    self._add(log, node_id, f"{base}/workers/{name}", WORKER_LOG_MAX_BYTES,
                              {"worker_id": log.meta.get("wid"), "pid": int(log.meta["pid"])})

    @staticmethod
    def _node_of_sessions(doc: dict, sessions, directory: str) -> dict:
        from rldoctor.inputs.logdir.build import _session_node_id

        out = {}

        for session in sessions:  # the raylet's own node, as read_logs recorded it
            out[session.root] = next((n["node_id"] for n in doc.get("nodes") or []
                                      if n.get("log_dir") == F.rel_root(session.root,
                                                                        directory)), None) \
                or _session_node_id(session)
        return out

    def _add(self, log: F.LogFile, node_id: str, file: str, max_bytes: int,
             details: dict | None = None) -> None:
        item = Item("log", os.path.basename(log.path), node_id=node_id, file=file,
                    details=dict(details or {}, source=log.rel))
        done = F.read(log, F.Budget(max_bytes + 1, max_bytes), tail_bytes=max_bytes, head_bytes=0)
        if done.problem == "empty":
            return  # an empty .err or events file says nothing
        if done.problem:
            self.items.append(item.fail(f"{log.rel}: {done.problem}"))
            return
        data = done.tail or done.head
        lines = data.split(b"\n")
        if len(lines) > LOG_LINES + 1 and not details:
            cut = b"\n".join(lines[:-(LOG_LINES + 1)])
            data = b"\n".join(lines[-(LOG_LINES + 1):])
            done.skipped += len(cut) + 1
        item.payload = data
        item.details.update(truncated_bytes=done.skipped)
        self.items.append(item)
