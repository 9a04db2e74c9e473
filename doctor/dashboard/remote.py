"""A snapshot through the dashboard address: identify, ship, run the job, read it back.

`take_snapshot` is what `check` and `collect` call: an `http(s)://` address (given, or in
RAY_ADDRESS) goes through the dashboard; any other goes through the GCS as before.
"""

from __future__ import annotations

import os
import time

from rldoctor.dashboard import is_dashboard_address
from rldoctor.dashboard.http import REQUEST_TIMEOUT_S, Dashboard
from rldoctor.errors import Undiagnosable


def chosen_address(address: str | None) -> str | None:
    return address or os.environ.get("RAY_ADDRESS") or None


def take_snapshot(address: str | None, timeout_s: float, leave: bool = False, extras=(),
                  window_s: float | None = None) -> dict:
    """`window_s` (check --since): how far back ended jobs count; Ray's default 24 h if None."""
    wanted = chosen_address(address)
    if is_dashboard_address(wanted):
        return collect_through_dashboard(wanted, timeout_s, extras=extras, window_s=window_s)
    from rldoctor.collect import collect_snapshot

    if window_s is not None:
        from rldoctor.collect import jobs

        jobs.set_window(window_s)

    return collect_snapshot(address, timeout_s=timeout_s, extras=extras, leave=leave,
                            on_refused=after_refusal)


def open_dashboard(address: str) -> Dashboard:
    from rldoctor.auth_token import find_token

    token, source = find_token()
    return Dashboard(address, token=token, token_source=source,
                     timeout_s=REQUEST_TIMEOUT_S)


def collect_through_dashboard(address: str, timeout_s: float, extras=(),
                              window_s: float | None = None) -> dict:
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
        if window_s is not None:
            job.extra_args += f" --since-s {float(window_s):g}"
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


def after_refusal(gcs_address: str, budget, refusal) -> dict | None:
    """The snapshot of a cluster that Ray would not take this driver into (another Ray or
    Python, or this machine is not one of its nodes: rldoctor.collect.connect.CannotJoin),
    taken through its dashboard (as `--address http://...` does), or None when no dashboard
    answers (none recorded in the GCS, or nothing listens where the head recorded one: a
    head started with --include-dashboard=false may still record its address). A dashboard
    that answers but cannot do it is one clear line."""
    try:
        from rldoctor.collect.private import dashboard_address

        found = dashboard_address(gcs_address, budget.left(5.0))
    except Exception:
        return None
    if not found:
        return None
    host, _, port = found.rpartition(":")
    if host in ("0.0.0.0", "::", "[::]", ""):  # bound everywhere: reach it where the GCS is
        host = gcs_address.rpartition(":")[0]
    url = f"http://{host}:{port}"
    if not _listening(host, port, budget.left(2.0)):  # recorded, but not running
        return None
    why = refusal.why() if hasattr(refusal, "why") else " ".join(str(refusal).split())[:400]
    try:
        doc = collect_through_dashboard(url, max(10.0, budget.deadline - time.monotonic()))
    except Undiagnosable as exc:  # the dashboard is there but could not do it: say both
        raise Undiagnosable(f"{why}; rldoctor went through the cluster's dashboard at {url} "
                            f"instead, and there: {exc}") from None
    doc.setdefault("notes", []).insert(0, (
        f"rldoctor did not join the cluster at {gcs_address} as a driver ({why}); it went "
        f"through the cluster's dashboard at {url} on its own instead, so the collectors ran "
        "inside the cluster with its own Ray and Python. Next time give --address " + url))
    doc["source"]["requested_address"] = gcs_address
    return doc


def _listening(host: str, port: str, timeout_s: float) -> bool:
    import socket

    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False
