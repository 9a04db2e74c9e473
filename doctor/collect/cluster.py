"""Cluster-wide facts: Ray version, auth mode, dashboard and state API reachability."""

from __future__ import annotations

import json
import urllib.request


def dashboard_get(url: str, path: str, timeout_s: float) -> dict:
    with urllib.request.urlopen(f"http://{url}{path}", timeout=timeout_s) as reply:
        return json.loads(reply.read().decode("utf-8"))


def collect(conn, budget) -> dict:
    import ray

    facts = {
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
        try:
            reply = dashboard_get(conn.dashboard_url, "/api/authentication_mode", budget.left(5))
            facts["auth_mode"] = reply.get("authentication_mode", facts["auth_mode"])
            facts["state_api"] = True
        except OSError as exc:
            facts["state_api_error"] = f"dashboard at {conn.dashboard_url} did not answer: {exc}"
    else:
        facts["state_api_error"] = ("the head runs no dashboard, so Ray's state API is off; "
                                    "restart the head with `ray start --head --include-dashboard=True` "
                                    "(and ray[default] installed)")
    return facts


def state_api_address(doc_cluster: dict | None) -> str | None:
    if doc_cluster and doc_cluster.get("state_api") and doc_cluster.get("dashboard_url"):
        return "http://" + doc_cluster["dashboard_url"]
    return None
