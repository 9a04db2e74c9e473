"""Cluster-wide facts: Ray version, auth mode, dashboard and state API reachability."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

DASHBOARD_TIMEOUT_S = 3.0  # it answers its health routes in milliseconds when it is well


def dashboard_get(url: str, path: str, timeout_s: float) -> dict:
    with urllib.request.urlopen(f"http://{url}{path}", timeout=timeout_s) as reply:
        return json.loads(reply.read().decode("utf-8"))


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
            try:
                reply = dashboard_get(conn.dashboard_url, "/api/authentication_mode",
                                      budget.left(DASHBOARD_TIMEOUT_S))
                facts["auth_mode"] = reply.get("authentication_mode", facts["auth_mode"])
            except urllib.error.HTTPError as exc:
                if exc.code != 404:
                    raise
                # Ray before 2.52: no such route, and no token authentication either
                dashboard_get(conn.dashboard_url, "/api/version", budget.left(DASHBOARD_TIMEOUT_S))
                facts["auth_mode"] = "disabled"
            facts["state_api"] = True
            facts["dashboard_ms"] = round((time.perf_counter() - started) * 1000, 2)
        except (OSError, ValueError) as exc:
            waited = time.perf_counter() - started
            facts["dashboard_error"] = (f"no answer within {waited:.1f}s" if "timed out" in str(exc)
                                        else str(exc)[:200])
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
