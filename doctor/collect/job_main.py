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


def frame(doc: dict) -> str:
    packed = base64.b64encode(gzip.compress(json.dumps(doc, default=str).encode(), 6)).decode()
    lines = [packed[i:i + 76] for i in range(0, len(packed), 76)]
    return "\n".join([BEGIN, *lines, END])


def unframe(logs: str) -> dict | None:
    """The snapshot in a job's logs, or None when the frame is missing or cut."""
    start = logs.rfind(BEGIN)
    if start < 0:
        return None
    end = logs.find(END, start)
    if end < 0:
        return None
    packed = "".join(line.strip() for line in logs[start + len(BEGIN):end].splitlines())
    try:
        return json.loads(gzip.decompress(base64.b64decode(packed)))
    except (ValueError, OSError, EOFError):
        return None


def _process_age_s() -> float | None:
    """Seconds since this process started (the interpreter's start-up and imports)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return round(uptime - ticks / os.sysconf("SC_CLK_TCK"), 3)
    except (OSError, ValueError, IndexError):
        return None


def _the_job(timeout_s: float) -> dict:
    age = _process_age_s()
    wall = time.time()
    from rldoctor.collect import collect_snapshot

    started = time.monotonic()
    doc = collect_snapshot(os.environ.get("RAY_ADDRESS") or "auto", timeout_s=timeout_s,
                           leave=False)
    import ray

    doc.setdefault("source", {})["collected_by"] = {
        "path": "dashboard job",
        "ray_version": getattr(ray, "__version__", None),
        "python_version": platform.python_version(),
        "seconds": round(time.monotonic() - started, 3),
        "process_age_at_start_s": age,
        "started_at": round(wall, 3),
    }
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rldoctor.collect.job_main")
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    try:
        doc = _the_job(args.timeout)
    except BaseException as exc:  # one line the client quotes; never the token (none is here)
        text = str(exc).strip().splitlines()[0][:400] if str(exc).strip() else ""
        print(f"{FAILED}{type(exc).__name__}: {text}", flush=True)
        return 1
    sys.stdout.write(frame(doc) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the probes are gone; skip Ray's exit handlers
