"""Log tails from any node through the dashboard's HTTP log route, with our own timeouts.

Ray's Python log API has no client-side timeout, and a sick node can hold a request for
as long as the server waits; every request here has a socket timeout, an overall deadline
and a byte cap (the tail is kept, the front dropped), and the server is told a shorter
timeout of its own. Authenticated like Ray's own state API client when token auth is on.
"""

from __future__ import annotations

import json
import urllib.parse

from rldoctor.cluster.dashboard_http import Dashboard, DashboardError, DashboardTimeout
from rldoctor.words import first_text_line

REQUEST_TIMEOUT_S = 3.0


class LogError(Exception):
    """A log could not be read; the message says why, in a few words."""


class LogTimeout(LogError):
    """The node (or the server on its behalf) did not answer in time."""


class LogRoute:
    """The dashboard's log routes, on the one dashboard client (rldoctor.cluster.dashboard_http):
    its headers, and its errors in their few words."""

    def __init__(self, dashboard_url: str, headers: dict[str, str] | None = None,
                 timeout_s: float = REQUEST_TIMEOUT_S, dashboard: Dashboard | None = None):
        self.timeout_s = timeout_s
        if dashboard is None:
            base = dashboard_url if "://" in dashboard_url else f"http://{dashboard_url}"
            dashboard = Dashboard(base, timeout_s=timeout_s, auth_headers=headers)
        self.dashboard = dashboard
        self.base = dashboard.url

    def _get(self, path: str, params: dict, max_bytes: int) -> tuple[bytes, int]:
        """(the last `max_bytes` of the reply, bytes dropped from its front)."""
        params = dict(params, timeout=max(1, int(self.timeout_s) - 1))  # the server's own limit
        try:
            status, data, dropped = self.dashboard.read(
                "GET", f"{path}?{urllib.parse.urlencode(params)}", timeout_s=self.timeout_s,
                max_bytes=max_bytes)
        except DashboardTimeout as exc:
            raise LogTimeout(exc.short) from None
        except DashboardError as exc:
            raise LogError(exc.short) from None
        if 200 <= status < 300:
            return data, dropped
        body = data[:2000].decode("utf-8", errors="replace").strip()
        if "not found" in body.lower():
            raise LogError("no such log on the node")
        if "timeout" in body.lower() or "timed out" in body.lower() or "deadline" in body.lower():
            raise LogTimeout(f"the node did not answer the dashboard in time ({_first(body)})")
        if status == 500 and "server got itself in trouble" in body.lower():
            # aiohttp's bare 500: Ray 2.55's log route answers so for an empty file
            raise LogError("HTTP 500 from the dashboard's log route without a reason (Ray "
                           "2.5x answers so for an empty log file)")
        raise LogError(f"HTTP {status}: {_first(body)}")

    def list_files(self, node_id: str) -> list[str]:
        """Every log file name on the node (relative to its logs folder)."""
        data, _ = self._get("/api/v0/logs", {"node_id": node_id, "glob": "*"}, 8 * 2**20)
        try:
            reply = json.loads(data)
        except ValueError:
            raise LogError("the log listing was not JSON") from None
        if not reply.get("result", True):
            raise LogError(_first(str(reply.get("msg") or "the listing failed")))
        groups = ((reply.get("data") or {}).get("result")) or {}
        return sorted({name for names in groups.values() for name in names or []
                       if not name.endswith("/")})

    def tail(self, node_id: str, filename: str, lines: int, max_bytes: int) -> tuple[bytes, int]:
        """The last `lines` lines of a log (at most `max_bytes`), and the bytes dropped."""
        return self._get("/api/v0/logs/file",
                         {"node_id": node_id, "filename": filename, "lines": lines}, max_bytes)


def _first(text: str, limit: int = 200) -> str:
    return first_text_line(text, limit, "no detail")
