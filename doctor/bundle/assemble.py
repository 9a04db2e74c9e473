"""From what was gathered to the bundle's files: redacted, optionally obfuscated.

Pure (no ray): the redactor first learns from every structured source (runtime envs,
jobs, the snapshot, Tune rows), so the secret values it finds there are masked in free
text too; then every file is redacted; then, with --obfuscate, IPs and host names are
replaced in every file with the same stand-ins.
"""

from __future__ import annotations

import json

from rldoctor.bundle import REPORT_JSON, REPORT_MD, SNAPSHOT
from rldoctor.bundle.manifest import Item
from rldoctor.bundle.writer import Member


def _json_bytes(data) -> bytes:
    return (json.dumps(data, indent=2, default=str) + "\n").encode("utf-8")


def _tune_rows(rows: list[str]) -> list[dict]:
    parsed = []
    for row in rows or []:
        try:
            value = json.loads(row)
        except ValueError:
            continue  # a row being written as we read
        if isinstance(value, dict):
            parsed.append(value)
    return parsed


def _log_text(item: Item) -> str:
    text = item.payload.decode("utf-8", errors="replace")
    dropped = item.details.get("truncated_bytes") or 0
    if dropped:
        newline = text.find("\n")
        text = text[newline + 1:] if 0 <= newline < len(text) - 1 else text
        text = (f"[rldoctor: the log's earlier part was not fetched: {dropped} bytes over the "
                f"per-log limit]\n") + text
    return text


def _safe(name) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]", "_", str(name or "unknown"))[:120]


def job_log_items(doc: dict) -> list[Item]:
    """The failed jobs' last words, from the snapshot's `jobs` section: the driver's log tail
    (`jobs/<submission id>/driver.log`) and the last lines of every worker in the job's
    chain, dead ones included (`jobs/<submission id>/workers/<pid>-<class>.err`)."""
    items = []
    for job in (doc.get("jobs") or {}).get("jobs") or []:
        if job.get("status") != "FAILED":
            continue
        folder = f"jobs/{_safe(job.get('submission_id') or job.get('job_id'))}"
        driver = job.get("driver") or {}
        item = Item("log", f"driver log of job {job.get('submission_id') or job.get('job_id')}",
                    node_id=driver.get("node_id"), file=f"{folder}/driver.log",
                    details={"source": job.get("driver_log_file")})
        if job.get("driver_log_tail"):
            item.payload = ("\n".join(job["driver_log_tail"]) + "\n").encode("utf-8")
        else:
            item.fail(job.get("driver_log_note") or "the driver's log was not readable")
        items.append(item)
        for w in job.get("worker_logs") or []:
            name = f"{w.get('pid') or 'unknown'}-{_safe(w.get('class_name') or 'worker')}.err"
            item = Item("log", f"last lines of {w.get('class_name') or 'worker'} pid {w.get('pid')} "
                        f"(job {job.get('submission_id') or job.get('job_id')})",
                        node_id=w.get("node_id"), file=f"{folder}/workers/{name}",
                        details={"pid": w.get("pid"), "actor_id": w.get("actor_id")})
            if w.get("lines"):
                item.payload = ("\n".join(w["lines"]) + "\n").encode("utf-8")
            else:
                item.fail(w.get("note") or "no lines")
            items.append(item)
    return items


def learn_secrets(redactor, doc: dict, items: list[Item], secret_sources: list) -> None:
    redactor.learn(secret_sources)
    redactor.learn(doc)
    for item in items:
        if item.status != "ok":
            continue
        if item.kind == "tune":
            item.payload = _tune_rows(item.payload)
            redactor.learn(item.payload)
        elif item.kind in ("cluster", "host"):
            redactor.learn(item.payload)


def item_members(items: list[Item], redactor) -> list[Member]:
    """The files of the collected items, redacted (learn_secrets first)."""
    members = []
    for item in items:
        if item.status != "ok" or not item.file or item.kind in ("snapshot", "report"):
            continue
        if item.kind == "log":
            members.append(Member(item.file, redactor.text(_log_text(item)).encode("utf-8"), "log"))
        elif item.kind == "stack":
            members.append(Member(item.file, redactor.text(item.payload.decode("utf-8", "replace"))
                                  .encode("utf-8")))
        elif item.kind == "tune":
            rows = [redactor.tune_row(row) for row in item.payload]
            members.append(Member(item.file, "".join(json.dumps(r, default=str) + "\n"
                                                     for r in rows).encode("utf-8")))
        else:
            members.append(Member(item.file, _json_bytes(redactor.data(item.payload))))
    return members


def report_members(report, doc: dict, items: list[Item], top: str, bundle_name: str,
                   redactor) -> list[Member]:
    """report.json and report.md of the run, their findings pointing at the bundle's files."""
    from rldoctor.bundle.evidence import point_to_bundle
    from rldoctor.bundle.reader import index
    from rldoctor.report.render.json import finite, report_document
    from rldoctor.report.render.markdown import render_markdown
    from rldoctor.snapshot import Snapshot

    entries = [i.entry(None) for i in items]
    names = [f"{top}/{i.file}" for i in items if i.status == "ok" and i.file]
    point_to_bundle(report, Snapshot(dict(doc, bundle=index({"items": entries}, top, names,
                                                            bundle_name))))
    return [Member(REPORT_JSON, _json_bytes(redactor.data(finite(report_document(report))))),
            Member(REPORT_MD, redactor.text(render_markdown(report)).encode("utf-8"))]


def snapshot_member(doc: dict, redactor) -> Member:
    return Member(SNAPSHOT, _json_bytes(redactor.data(doc)))


def obfuscate(members: list[Member], obfuscator) -> None:
    for m in members:  # every host a URL names, in any file, before replacing in any file
        obfuscator.learn(m.data.decode("utf-8", errors="replace"))
    for m in members:
        m.path = obfuscator.text(m.path)
        m.data = obfuscator.text(m.data.decode("utf-8", errors="replace")).encode("utf-8")


def host_names(doc: dict) -> set[str]:
    """Every host name the bundle may mention: the nodes' and this machine's."""
    import socket

    names = {socket.gethostname(), socket.getfqdn()}
    for host in (doc.get("hosts") or {}).values():
        names.add((host or {}).get("hostname"))
    for node in doc.get("nodes") or []:
        names.add(node.get("node_name"))
    return {n for n in names if n and n not in ("localhost", "localhost.localdomain")}
