"""What the dashboard says about its cluster before anything runs there: is it a Ray
dashboard at all, of which Ray (2.40 or newer), and does it want a token."""

from __future__ import annotations

from dataclasses import dataclass

from rldoctor.dashboard.http import Dashboard, DashboardError
from rldoctor.words import OLDEST_RAY, TOKEN_AUTH_FROM, version_tuple  # noqa: F401 (re-exported)


@dataclass
class ClusterInfo:
    ray_version: str
    python_version: str | None
    auth_mode: str  # "token", "disabled" or "unknown"
    session_name: str | None = None

    def to_json(self) -> dict:
        return {"ray_version": self.ray_version, "python_version": self.python_version,
                "auth_mode": self.auth_mode, "session_name": self.session_name}


def identify(dash: Dashboard) -> ClusterInfo:
    """GET /api/version (open in every Ray) and /api/authentication_mode (2.52+).

    Anything that is not a Ray dashboard of 2.40 or newer is one clear line.
    """
    status, body = dash.get_json("/api/version")
    if status != 200 or not isinstance(body, dict) or not body.get("ray_version"):
        raise DashboardError(
            f"{dash.url} is not a Ray dashboard (GET /api/version answered {status} without a "
            "ray_version); point --address at the head's dashboard port (8265 by default), the "
            "address `ray job submit` takes")
    version = str(body["ray_version"])
    if version_tuple(version) < OLDEST_RAY:
        raise DashboardError(
            f"the cluster at {dash.url} runs Ray {version}; rldoctor collects through the "
            f"dashboard from Ray {'.'.join(map(str, OLDEST_RAY))} on: use `ray status` and "
            "`ray list actors` there, or upgrade the cluster")
    auth = "disabled"
    if version_tuple(version) >= TOKEN_AUTH_FROM:
        status, mode = dash.get_json("/api/authentication_mode")
        auth = (mode or {}).get("authentication_mode", "unknown") if isinstance(mode, dict) \
            else "unknown"
    python = None
    # The cluster's Python; behind the token, so a missing or wrong token stops here.
    status, meta = dash.get_json("/api/v0/cluster_metadata")
    if status == 200 and isinstance(meta, dict):
        python = (meta.get("data") or {}).get("pythonVersion")
    return ClusterInfo(ray_version=version, python_version=python, auth_mode=auth,
                       session_name=body.get("session_name"))
