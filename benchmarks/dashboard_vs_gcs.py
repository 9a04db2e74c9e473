"""Wall time of `rldoctor check` through the dashboard address against the GCS address.

    python benchmarks/dashboard_vs_gcs.py [--repeats 3]

Starts the local 3-node test cluster (head + 2 workers, one CPU each, token auth) and runs,
on the same cluster, `rldoctor check --format json`:
- through the GCS address (rldoctor joins as a driver on this machine, a node of the cluster);
- through the dashboard address `http://127.0.0.1:<port>` (HTTP only on the client; the
  collectors run inside the cluster as a 0-CPU Ray job): the first run uploads the package,
  the next ones find it on the cluster and skip the upload.
Prints each path's median wall, every sample, the ratio (goal: the dashboard path within 2x
of the GCS path) and, for the dashboard path, where the time went (identify, upload, the
job's start, its own collection, the output read while the job runs, the stop (its driver
deletes its own log file) and the cleanup: the job is deleted as soon as Ray's job monitor
has logged its end). Then the floor under the dashboard path: Ray's job machinery alone, a job
whose entrypoint is `true` (same runtime_env, no CPU), submitted, seen SUCCEEDED and deleted by
the same code as rldoctor's job (`bare_job_s`, median of `--repeats`): whatever the job
runs, the dashboard path costs at least that on top of what the job does. Stops the cluster.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from localcluster import three_nodes  # noqa: E402

RLDOCTOR = str(Path(sys.executable).parent / "rldoctor")


def run(address: str, env: dict, out: Path) -> tuple[float, dict]:
    started = time.monotonic()
    proc = subprocess.run([RLDOCTOR, "check", "--address", address, "--format", "json",
                           "--output", str(out)], env=env, capture_output=True, text=True,
                          timeout=180)
    wall = time.monotonic() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"rldoctor check --address {address} exited {proc.returncode}: "
                         f"{proc.stderr.strip()[-500:]}")
    return wall, json.loads(out.read_text())


def bare_job(url: str, env: dict) -> dict:
    """One job whose entrypoint is `true`, run start to delete the way rldoctor runs its own."""
    import os

    from rldoctor.dashboard import package
    from rldoctor.dashboard.job import TERMINAL, CollectorJob, ensure_package
    from rldoctor.dashboard.remote import open_dashboard

    saved = dict(os.environ)
    os.environ.update(env)  # the cluster's token, as rldoctor finds it
    try:
        dash = open_dashboard(url)
        pkg = package.build()
        ensure_package(dash, pkg)
        job = CollectorJob(dash, pkg, 60)
        started = time.monotonic()
        status, body = dash.send_json("POST", "/api/jobs/", {
            "entrypoint": "true", "submission_id": job.submission_id,
            "runtime_env": {"py_modules": [pkg.uri]}, "entrypoint_num_cpus": 0,
            "metadata": {"rldoctor": "benchmark floor"}})
        if status != 200:
            raise SystemExit(f"the bare job was refused: {status} {body}")
        job.submitted = True
        while job.poll() not in TERMINAL and time.monotonic() - started < 60:
            time.sleep(0.05)
        ended = time.monotonic()
        job.cleanup()
        return {"ran_s": ended - started, "total_s": time.monotonic() - started,
                "status": job.status, "deleted": job.deleted}
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="rldoctor-bench-")) / "report.json"
    with three_nodes() as cluster:
        env = cluster.client_env()
        env.pop("RAY_AUTH_MODE", None)
        gcs, dash, phases = [], [], []
        for i in range(args.repeats + 1):
            wall, _ = run(cluster.dashboard_url, env, out)
            dash.append(wall)
            report = json.loads(out.read_text())
            phases.append(next((n for n in report.get("notes") or []
                                if n.startswith("examined through the dashboard")), ""))
            if i < args.repeats:
                gcs.append(run(cluster.address, env, out)[0])
        cold, warm = dash[0], dash[1:]
        print(f"GCS path        median {statistics.median(gcs):.2f}s  samples "
              + " ".join(f"{s:.2f}" for s in gcs))
        print(f"dashboard path  first run (uploads the package) {cold:.2f}s")
        print(f"dashboard path  median {statistics.median(warm):.2f}s  samples "
              + " ".join(f"{s:.2f}" for s in warm) + "  (package already on the cluster)")
        ratio = statistics.median(warm) / statistics.median(gcs)
        print(f"ratio dashboard/GCS {ratio:.2f}x (goal: within 1.5x)")
        print(f"last dashboard run: {phases[-1][:300]}")
        snap = out.with_name("snapshot.json")  # where a dashboard run's time goes
        started = time.monotonic()
        subprocess.run([RLDOCTOR, "collect", "--address", cluster.dashboard_url, "--output",
                        str(snap)], env=env, capture_output=True, timeout=180, check=True)
        wall = time.monotonic() - started
        doc = json.loads(snap.read_text())
        phases = doc["timing"]["dashboard"]
        inside = doc["source"]["collected_by"]
        print(f"phases of one dashboard collect ({wall:.2f}s wall): identify "
              f"{phases['identify_s']}s, package check {phases['package_s']}s, job start "
              f"{phases['job_started_s']}s, the job's own collection {inside.get('seconds')}s, "
              f"submit to its output read {phases['job_s']}s, stop and cleanup {phases.get('cleanup_s')}s (deleted once Ray's job "
              f"monitor let go: {phases.get('deleted_once_monitor_let_go')})")
        bare = [bare_job(cluster.dashboard_url, env) for _ in range(args.repeats)]
        totals = [b["total_s"] for b in bare]
        floor = statistics.median(totals)
        print(f"floor: a job whose entrypoint is `true`, submitted to deleted, median "
              f"{floor:.2f}s (samples " + " ".join(f"{t:.2f}" for t in totals)
              + "; submit to SUCCEEDED " + " ".join(f"{b['ran_s']:.2f}" for b in bare)
              + f"; all deleted: {all(b['deleted'] for b in bare)}); the GCS path plus it: "
              f"{(statistics.median(gcs) + floor) / statistics.median(gcs):.2f}x the GCS path")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
