"""The entry point of the dashboard path's job: runs inside the cluster, with its own Ray.

    python -m rldoctor.collect.job_main --timeout 30

The job's driver joins through RAY_ADDRESS (the job supervisor sets it to the cluster's
GCS), takes the same snapshot `rldoctor check --address HOST:PORT` takes on a node, and
prints it framed, gzip + base64, between two marker lines, so the client can find it in the
job's logs among whatever Ray prints. Standard library and ray only.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import platform
import sys
import time

BEGIN = "=====RLDOCTOR-SNAPSHOT-BEGIN====="
END = "=====RLDOCTOR-SNAPSHOT-END====="
FAILED = "RLDOCTOR-JOB-FAILED: "


def frame(doc: dict, begin: str = BEGIN, end: str = END) -> str:
    packed = base64.b64encode(gzip.compress(json.dumps(doc, default=str).encode(), 6)).decode()
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


def _the_job(timeout_s: float, extras=()) -> dict:
    from rldoctor.collect import collect_snapshot

    started = time.monotonic()
    doc = collect_snapshot(os.environ.get("RAY_ADDRESS") or "auto", timeout_s=timeout_s,
                           leave=False, extras=extras)
    import ray

    doc.setdefault("source", {})["collected_by"] = {
        "path": "dashboard job",
        "ray_version": getattr(ray, "__version__", None),
        "python_version": platform.python_version(),
        "seconds": round(time.monotonic() - started, 3),
    }
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rldoctor.collect.job_main")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--bundle-max-bytes", type=int, default=None,
                        help="also gather the incident bundle's items (rldoctor.collect.job_bundle)")
    parser.add_argument("--linger", type=float, default=0.0,
                        help="--bundle-max-bytes: seconds to wait for the client's stop")
    args = parser.parse_args(argv)
    gatherer = None
    try:
        if args.bundle_max_bytes:
            from rldoctor.collect import job_bundle

            gatherer = job_bundle.new_gatherer()
        doc = _the_job(args.timeout, extras=(gatherer,) if gatherer else ())
    except BaseException as exc:  # one line the client quotes; never the token (none is here)
        text = str(exc).strip().splitlines()[0][:400] if str(exc).strip() else ""
        print(f"{FAILED}{type(exc).__name__}: {text}", flush=True)
        return 1
    sys.stdout.write(frame(doc) + "\n")
    sys.stdout.flush()
    if gatherer is not None:
        job_bundle.send_items(gatherer, doc, args.bundle_max_bytes)
        job_bundle.linger_then_wipe(args.linger)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the probes are gone; skip Ray's exit handlers
