"""Where a snapshot comes from: the one place that picks the path to a live cluster.

`take_snapshot` is what `check`, `collect` (and `collect --bundle`) call: an `http(s)://`
address (given, or in RAY_ADDRESS) goes through the dashboard, as a job inside the cluster
(rldoctor.dashboard.remote); any other joins the cluster as a driver through the GCS
(rldoctor.cluster.session), and falls back on the dashboard when Ray refuses this driver
(`after_refusal`). Nothing here imports ray at module level; recorded snapshots and bundles
are read by rldoctor.snapshot.
"""

from __future__ import annotations

import os
import time

from rldoctor.dashboard import is_dashboard_address
from rldoctor.errors import Undiagnosable
from rldoctor.words import shorten


def chosen_address(address: str | None) -> str | None:
    return address or os.environ.get("RAY_ADDRESS") or None


def keep_time_for_the_join(address: str | None, timeout_s: float) -> None:
    """A process outside this interpreter keeps the join's bound (Ray's registration may hold
    the GIL past every Python timeout: rldoctor.joinwatch). It forks, so it is called before
    Ray is imported and before any thread starts: a thread running at the fork is gone in the
    process that goes on, and an import lock it held then is held forever there. A command that
    starts a thread beside the join (preflight reads the training's config in one) calls it
    first; `take_snapshot` calls it again, which then does nothing. No-op for a dashboard
    address (nothing joins)."""
    wanted = chosen_address(address)
    if not is_dashboard_address(wanted):
        from rldoctor import joinwatch

        joinwatch.guard(timeout_s, wanted or "auto")


def take_snapshot(address: str | None, timeout_s: float, leave: bool = False, extras=(),
                  window_s: float | None = None) -> dict:
    """`window_s` (check --since): how far back ended jobs count; 24 h if None."""
    wanted = chosen_address(address)
    if is_dashboard_address(wanted):
        from rldoctor.dashboard.remote import collect_through_dashboard

        return collect_through_dashboard(wanted, timeout_s, extras=extras, window_s=window_s)
    from rldoctor import joinwatch

    keep_time_for_the_join(address, timeout_s)
    from rldoctor.cluster import connect
    from rldoctor.cluster.session import collect_snapshot

    connect.tell = joinwatch.tell

    if window_s is not None:
        from rldoctor.cluster import jobs

        jobs.set_window(window_s)

    def refused(gcs_address, budget, refusal):  # the same snapshot through its dashboard
        return after_refusal(gcs_address, budget, refusal, extras=extras, window_s=window_s)

    return collect_snapshot(address, timeout_s=timeout_s, extras=extras, leave=leave,
                            on_refused=refused)


def bundle_gatherer(address: str | None, progress, max_bytes: int):
    """What gathers the bundle's items (logs, stacks, host facts) beside the snapshot: the job
    inside the cluster through a dashboard address (rldoctor.dashboard.bundle), else the
    driver's own Gatherer (rldoctor.cluster.gather). Passed to `take_snapshot` as an extra."""
    if is_dashboard_address(chosen_address(address)):
        from rldoctor.dashboard.bundle import JobItems

        return JobItems(progress=progress, max_bytes=max_bytes)
    from rldoctor.cluster.gather import Gatherer

    return Gatherer(progress=progress)


def after_refusal(gcs_address: str, budget, refusal, extras=(),
                  window_s: float | None = None) -> dict | None:
    """The snapshot of a cluster that Ray would not take this driver into (another Ray or
    Python, or this machine is not one of its nodes: rldoctor.cluster.connect.CannotJoin),
    taken through its dashboard (as `--address http://...` does), or None when no dashboard
    answers (none recorded in the GCS, or nothing listens where the head recorded one: a
    head started with --include-dashboard=false may still record its address). A dashboard
    that answers but cannot do it is one clear line."""
    try:
        from rldoctor.cluster.private import dashboard_address

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
    from rldoctor.dashboard import remote

    why = refusal.why() if hasattr(refusal, "why") else shorten(refusal, 400)
    try:
        # with the extras that can ride in its job (preflight's probes) and --since's window
        doc = remote.collect_through_dashboard(url, max(10.0, budget.deadline - time.monotonic()),
                                               extras=extras, window_s=window_s)
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
