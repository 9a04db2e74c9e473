"""A snapshot through the dashboard address: identify, ship, run the job, read it back.

Which path a snapshot takes (this one or the GCS one) is chosen in rldoctor.acquire.
"""

from __future__ import annotations

import time

from rldoctor.dashboard.http import REQUEST_TIMEOUT_S, Dashboard


def open_dashboard(address: str) -> Dashboard:
    from rldoctor.auth_token import find_token

    token, source = find_token()
    return Dashboard(address, token=token, token_source=source,
                     timeout_s=REQUEST_TIMEOUT_S)


def collect_through_dashboard(address: str, timeout_s: float, extras=()) -> dict:
    """The snapshot, taken by a job inside the cluster. An extra with `through_job` (the
    bundle's rldoctor.dashboard.bundle.JobItems) adds its options to the job and reads
    the job's output itself; the GCS path's extras (called with Ray objects) do not apply."""
    from rldoctor.dashboard import cluster_info, package
    from rldoctor.dashboard.job import CollectorJob, ensure_package

    started = time.monotonic()
    dash = open_dashboard(address)
    info = cluster_info.identify(dash)
    identified = time.monotonic()
    pkg = package.build()
    uploaded = ensure_package(dash, pkg)
    shipped = time.monotonic()
    riders = [e for e in extras if hasattr(e, "through_job")][:1]
    with CollectorJob(dash, pkg, timeout_s) as job:
        for rider in riders:
            job.extra_args += rider.job_args()
        job.submit()
        if riders:
            doc = riders[0].through_job(job)
        else:
            doc = job.snapshot(job.output())
    finished = time.monotonic()
    inside = (doc.get("source") or {}).get("collected_by") or {}
    doc["source"] = {
        "kind": "live", "address": dash.url, "path": "dashboard",
        "gcs_address": (doc.get("source") or {}).get("address"),
        "job": job.submission_id, "collected_by": inside,
        "cluster_ray_version": inside.get("ray_version") or info.ray_version,
        "cluster_python_version": inside.get("python_version") or info.python_version,
    }
    doc.setdefault("timing", {})["dashboard"] = {
        "identify_s": round(identified - started, 3),
        "package_s": round(shipped - identified, 3), "uploaded": uploaded,
        "job_s": job.timing.get("job_s"), "job_started_s": job.timing.get("started_s"),
        "cleanup_s": job.timing.get("cleanup_s"),
        "deleted_once_monitor_let_go": job.timing.get("monitor_let_go"),
        "total_s": round(finished - started, 3)}
    doc.setdefault("notes", []).append(
        f"examined through the dashboard at {dash.url}: the collectors ran inside the cluster "
        f"as the Ray job {job.submission_id} (0 CPUs) with the cluster's own Ray "
        f"{doc['source']['cluster_ray_version']} and Python "
        f"{doc['source']['cluster_python_version'] or 'unknown'}, and the job was deleted "
        f"afterwards; the package ({len(pkg.data) // 1024} KiB) was "
        + ("uploaded" if uploaded else "already on the cluster"))
    return doc
