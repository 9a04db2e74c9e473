"""The dashboard path's job inside the cluster (`python -m rldoctor.job.main`).

    main.py           the job's entry point: take the snapshot, print it framed, linger
    bundle.py         `collect --bundle`: gather, redact and fit the bundle's items in the cluster
    log.py            the job driver's own log file: wait for the client's stop, then delete it

Here: the frames the job prints its output in (a document gzipped, base64, between two marker
lines, so the client, rldoctor.dashboard, finds it among whatever Ray prints in the job's logs).

Shipped with rldoctor.cluster and rldoctor.node (rldoctor.dashboard.package).
"""

from __future__ import annotations

import base64
import gzip
import json

BEGIN = "=====RLDOCTOR-SNAPSHOT-BEGIN====="
END = "=====RLDOCTOR-SNAPSHOT-END====="
FAILED = "RLDOCTOR-JOB-FAILED: "


def frame(doc, begin: str = BEGIN, end: str = END) -> str:
    """`doc` (or its JSON text, when a str) gzipped, base64, between two marker lines."""
    text = doc if isinstance(doc, str) else json.dumps(doc, default=str)
    packed = base64.b64encode(gzip.compress(text.encode(), 6)).decode()
    lines = [packed[i:i + 76] for i in range(0, len(packed), 76)]
    return "\n".join([begin, *lines, end])


def unframe(logs: str, begin: str = BEGIN, end: str = END) -> dict | None:
    """The snapshot (or what `begin`/`end` frame) in a job's logs, or None when the frame is
    missing or cut."""
    start = logs.rfind(begin)
    if start < 0:
        return None
    stop = logs.find(end, start)
    if stop < 0:
        return None
    packed = "".join(line.strip() for line in logs[start + len(begin):stop].splitlines())
    try:
        return json.loads(gzip.decompress(base64.b64decode(packed)))
    except (ValueError, OSError, EOFError):
        return None
