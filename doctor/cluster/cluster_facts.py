"""Cluster-wide facts: Ray version, auth mode, dashboard and state API reachability."""

from __future__ import annotations

import time

from rldoctor.cluster.dashboard_http import Dashboard, DashboardTimeout
from rldoctor.errors import Undiagnosable
from rldoctor.cluster.sections import section

DASHBOARD_TIMEOUT_S = 3.0  # it answers its health routes in milliseconds when it is well


class _NoAnswer(Exception):
    """The dashboard answered, but not what a health route answers."""


def dashboard_get(dash: Dashboard, path: str, timeout_s: float) -> tuple[int, dict | None]:
    """(status, the JSON object) of one GET; a non-JSON 200 answer is _NoAnswer."""
    status, reply = dash.get_json(path, timeout_s=timeout_s)
    if status == 200 and not isinstance(reply, dict):
        raise _NoAnswer(f"{path} answered 200 without a JSON object")
    if status not in (200, 404):
        raise _NoAnswer(f"HTTP {status} from {path}")
    return status, reply


def collect(conn, budget) -> dict:
    import ray

    facts = {
        "gcs_ms": conn.auth.gcs_ms,
        "address": conn.address,
        "gcs_address": conn.gcs_address,
        "ray_version": ray.__version__,
        "dashboard_url": conn.dashboard_url,
        "state_api": False,
        "auth_mode": conn.auth.cluster if conn.auth.cluster != "unknown" else "unknown",
        "client_auth": conn.auth.to_json(),
        "namespace_used_by_rldoctor": conn.namespace,
    }
    if conn.dashboard_url:
        started = time.perf_counter()
        try:
            dash = Dashboard.of_cluster(conn.dashboard_url, timeout_s=DASHBOARD_TIMEOUT_S)
            status, reply = dashboard_get(dash, "/api/authentication_mode",
                                          budget.left(DASHBOARD_TIMEOUT_S))
            if status == 200:
                facts["auth_mode"] = reply.get("authentication_mode", facts["auth_mode"])
            else:
                # Ray before 2.52: no such route, and no token authentication either
                status, _ = dashboard_get(dash, "/api/version", budget.left(DASHBOARD_TIMEOUT_S))
                if status != 200:
                    raise _NoAnswer(f"HTTP {status} from /api/version")
                facts["auth_mode"] = "disabled"
            facts["state_api"] = True
            facts["dashboard_ms"] = round((time.perf_counter() - started) * 1000, 2)
        except (Undiagnosable, _NoAnswer) as exc:
            waited = time.perf_counter() - started
            facts["dashboard_error"] = (f"no answer within {waited:.1f}s"
                                        if isinstance(exc, DashboardTimeout)
                                        else getattr(exc, "short", str(exc))[:200])
            facts["dashboard_waited_s"] = round(waited, 2)
            facts["state_api_error"] = (f"the dashboard at {conn.dashboard_url} (which serves Ray's "
                                        f"state API) did not answer: {facts['dashboard_error']}")
    else:
        facts["state_api_error"] = ("the head runs no dashboard, so Ray's state API is off; "
                                    "restart the head with `ray start --head --include-dashboard=True` "
                                    "(and ray[default] installed)")
    return facts


def state_api_address(doc_cluster: dict | None) -> str | None:
    if doc_cluster and doc_cluster.get("state_api") and doc_cluster.get("dashboard_url"):
        return "http://" + doc_cluster["dashboard_url"]
    return None


@section("cluster", needs=("nodes",))
def cluster_section(ctx) -> dict:
    """Ray's version, the GCS and dashboard addresses and how fast they answered."""
    return collect(ctx.conn, ctx.budget)
