"""Requests to a Ray dashboard, the way Ray's own job SDK makes them.

A non-browser User-Agent and no Origin/Referer header (the dashboard refuses a POST
that looks like a browser's); the token as `Authorization: Bearer`, found where Ray's
SDK finds it. Every failure a user can cause becomes one Undiagnosable line that
never contains the token.
"""

from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request

from rldoctor import __version__
from rldoctor.errors import Undiagnosable

USER_AGENT = f"rldoctor/{__version__} (python-urllib)"
REQUEST_TIMEOUT_S = 10.0
GET_TOKEN = "`ray get-auth-token` on the head, or `kubectl ray get token <cluster>`, prints it"


class DashboardError(Undiagnosable):
    """An answer the dashboard gave that rldoctor cannot go on with."""


def base_url(address: str) -> str:
    """`http(s)://host:port` without a path or trailing slash; a bad one is one clear line."""
    parsed = urllib.parse.urlsplit(address.strip())
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise Undiagnosable(f"--address {address!r} is not http(s)://HOST:PORT of a Ray dashboard")
    try:
        parsed.port
    except ValueError:
        raise Undiagnosable(f"--address {address!r}: the port is not a number") from None
    netloc = parsed.netloc.rpartition("@")[2]  # credentials in a URL are never sent or shown
    return f"{parsed.scheme}://{netloc}{parsed.path.rstrip('/')}"


class Dashboard:
    """One dashboard, reached over HTTP with an optional bearer token."""

    def __init__(self, address: str, token: str | None = None, token_source: str | None = None,
                 timeout_s: float = REQUEST_TIMEOUT_S):
        self.url = base_url(address)
        self.token = token
        self.token_source = token_source
        self.timeout_s = timeout_s
        self._tls = ssl.create_default_context()

    def headers(self, extra: dict | None = None) -> dict:
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        headers.update(extra or {})
        return headers

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str | None = None, timeout_s: float | None = None,
                ok: tuple[int, ...] = (200,)) -> tuple[int, bytes]:
        """(status, body); connection failures and auth refusals raise one clear line."""
        extra = {"Content-Type": content_type} if content_type else {}
        req = urllib.request.Request(self.url + path, data=body, method=method,
                                     headers=self.headers(extra))
        try:
            with urllib.request.urlopen(req, timeout=timeout_s or self.timeout_s,
                                        context=self._tls if self.url.startswith("https") else None) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, data = exc.code, exc.read() or b""
        except (socket.timeout, TimeoutError):
            raise Undiagnosable(
                f"no answer from {self.url} within {timeout_s or self.timeout_s:g}s ({method} "
                f"{path.split('?')[0]}): is it a Ray dashboard, and is the port-forward up?") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise Undiagnosable(
                    f"no answer from {self.url} within {timeout_s or self.timeout_s:g}s: is it a "
                    "Ray dashboard, and is the port-forward up?") from None
            text = getattr(reason, "strerror", None) or str(reason)
            raise Undiagnosable(
                f"cannot reach a Ray dashboard at {self.url}: {text}; is the head running and "
                "the port forwarded (`kubectl port-forward svc/<cluster>-head-svc 8265`)?") from None
        except (ConnectionError, OSError) as exc:
            raise Undiagnosable(f"cannot reach a Ray dashboard at {self.url}: "
                                f"{exc.strerror or type(exc).__name__}") from None
        if status in (401, 403):
            raise self.refused(status)
        if status not in ok:
            return status, data
        return status, data

    def refused(self, status: int) -> Undiagnosable:
        if not self.token:
            return DashboardError(
                f"the Ray dashboard at {self.url} uses token authentication ({status}) and "
                "rldoctor found no token (looked in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH and "
                f"~/.ray/auth_token): set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH to the token "
                f"file ({GET_TOKEN})")
        return DashboardError(
            f"the Ray dashboard at {self.url} refused the token from {self.token_source} "
            f"({status}: not this cluster's token); set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH "
            f"to this cluster's token file ({GET_TOKEN})")

    def get_json(self, path: str, timeout_s: float | None = None) -> tuple[int, object]:
        """(status, parsed JSON or None when the body is not JSON)."""
        status, data = self.request("GET", path, timeout_s=timeout_s, ok=())
        try:
            return status, json.loads(data.decode("utf-8", "replace")) if data else None
        except ValueError:
            return status, None

    def send_json(self, method: str, path: str, payload: dict | None,
                  timeout_s: float | None = None) -> tuple[int, object]:
        body = json.dumps(payload).encode() if payload is not None else None
        status, data = self.request(method, path, body=body,
                                    content_type="application/json" if body else None,
                                    timeout_s=timeout_s, ok=())
        try:
            return status, json.loads(data.decode("utf-8", "replace")) if data else None
        except ValueError:
            return status, data.decode("utf-8", "replace")[:300]
