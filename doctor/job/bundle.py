"""The incident bundle's items, gathered inside the cluster by the dashboard path's job.

`rldoctor collect --bundle FILE --address http(s)://...` runs the job's driver
(rldoctor.job.main) with `--bundle-max-bytes`: the snapshot is taken with the same
Gatherer the GCS path uses (rldoctor.cluster.gather: log tails over the head's log route,
host facts, py-spy stacks and Tune tails through the probes), so both paths gather the same
items. They leave the cluster only as the job's output:

1. redacted here first (rldoctor.redact, having learned the runtime envs and jobs), so no
   env_vars value nor the token is ever printed, not even into the job's own log file;
2. the largest logs cut from the front to fit --max-size (rldoctor.bundle.writer.fit; the
   cut is in each item's `truncated_bytes`, said in the manifest);
3. printed framed (gzip + base64 between two marker lines) after the snapshot's frame;
4. then the driver waits for the client's stop (it has read the frames by then) and deletes
   its own log file, job-driver-rldoctor-<id>.log, so nothing of the bundle stays on the
   head (rldoctor.job.log, as for every run of the job).

Standard library, ray and rldoctor's collectors only (shipped as the job's package).
"""

from __future__ import annotations

import base64
import sys

ITEMS_BEGIN = "=====RLDOCTOR-BUNDLE-ITEMS-BEGIN====="
ITEMS_END = "=====RLDOCTOR-BUNDLE-ITEMS-END====="
ITEMS_FAILED = "RLDOCTOR-BUNDLE-ITEMS-FAILED: "


def new_gatherer():
    from rldoctor.cluster.gather import Gatherer

    return Gatherer()


def _redact(gatherer, doc: dict):
    """Each item's payload with secrets masked, as the client's assembly would mask them."""
    from rldoctor.redact import Redactor

    redactor = Redactor()
    redactor.learn(gatherer.secret_sources)
    redactor.learn(doc)
    for item in gatherer.items:
        if item.status == "ok" and item.kind in ("cluster", "host", "tune"):
            redactor.learn(item.payload)
    for item in gatherer.items:
        if item.status != "ok" or item.payload is None:
            continue
        if isinstance(item.payload, bytes):
            item.payload = redactor.text(item.payload.decode("utf-8", "replace")).encode("utf-8")
        elif item.kind == "tune":
            item.payload = [redactor.text(row) for row in item.payload]
        else:
            item.payload = redactor.data(item.payload)
    return dict(redactor.counts)


def _fit(items, max_bytes: int) -> None:
    """Cut the largest logs from the front so that the items fit in `max_bytes` in all."""
    import json

    from rldoctor.bundle.writer import Member, fit

    members, logs = [], {}
    for n, item in enumerate(items):
        if item.status != "ok" or item.payload is None:
            continue
        if item.kind == "log":
            member = Member(str(n), item.payload, "log")
            logs[n] = member
        else:
            data = item.payload if isinstance(item.payload, bytes) else \
                json.dumps(item.payload, default=str).encode()
            member = Member(str(n), data)
        members.append(member)
    try:
        fit(members, max_bytes)
    except Exception:  # not even the rest fits: the client says so when it writes the bundle
        return
    for n, member in logs.items():
        if member.cut_bytes:
            item = items[n]
            # fit() put its marker line in front; the client's assembly replaces that first
            # line with its own note, from truncated_bytes
            item.payload = member.data
            item.details["truncated_bytes"] = (item.details.get("truncated_bytes") or 0) \
                + member.cut_bytes
            item.details["cut_to_fit_bytes"] = member.cut_bytes


def encode_item(item) -> dict:
    entry = {"kind": item.kind, "name": item.name, "node_id": item.node_id, "file": item.file,
             "status": item.status, "error": item.error, "duration_s": item.duration_s,
             "details": item.details}
    if isinstance(item.payload, bytes):
        entry["payload_b64"] = base64.b64encode(item.payload).decode()
    else:
        entry["payload"] = item.payload
    return entry


def send_items(gatherer, doc: dict, max_bytes: int) -> None:
    """Print the redacted, fitted items framed; one failure line instead when that fails."""
    from rldoctor.job import frame
    from rldoctor.words import first_line

    try:
        redacted = _redact(gatherer, doc)
        _fit(gatherer.items, max_bytes)
        text = frame({"ran": gatherer.ran, "redacted": redacted,
                      "items": [encode_item(i) for i in gatherer.items]}, ITEMS_BEGIN, ITEMS_END)
    except Exception as exc:
        print(f"{ITEMS_FAILED}{first_line(exc, 300)}", flush=True)
        return
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
