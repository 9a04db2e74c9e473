"""The one HTTP client to a Ray dashboard, for both sides of rldoctor.

The client's dashboard path (rldoctor.dashboard: identify, upload, submit and read the
collector job), the cluster facts (auth mode, state API reachability) and the log route
(rldoctor.cluster.logs.LogRoute) all speak to the dashboard through `Dashboard`, so
there is one set of headers and one error vocabulary. Standard library only: the cluster
side ships it in the dashboard path's package (rldoctor.dashboard.package).

Requests look like Ray's own job SDK's: a non-browser User-Agent and no Origin/Referer
header (the dashboard refuses a POST that looks like a browser's). Auth, as today on each
side: the client sends the token rldoctor.auth_token finds as `Authorization: Bearer`;
the cluster side sends the headers Ray's own state API client sends
(rldoctor.cluster.private.http_auth_headers), which follow the auth mode rldoctor joined in.

Errors: every failure a user can cause is a DashboardError, one line that never holds the
token, with `short` (a few words for a snapshot field: "no answer within 3s") beside the
whole line for the terminal. DashboardTimeout when nothing (or not all) came back in time,
DashboardRefused on 401/403. Other HTTP statuses are answers, returned to the caller.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request

from rldoctor import __version__
from rldoctor.errors import Undiagnosable

USER_AGENT = f"rldoctor/{__version__} (python-urllib)"
REQUEST_TIMEOUT_S = 10.0
GET_TOKEN = "`ray get-auth-token` on the head, or `kubectl ray get token <cluster>`, prints it"
_CHUNK = 64 * 1024
# Ray's own client's token (rldoctor.cluster.private.http_auth_headers), when it sends one
RAYS_CLIENT = "the token Ray's client joined with"


class DashboardError(Undiagnosable):
    """An answer (or silence) of the dashboard that rldoctor cannot go on with: one line.

    `short`: the same failure in a few words, for a snapshot or bundle field."""

    def __init__(self, line: str, short: str | None = None, status: int | None = None):
        super().__init__(line)
        self.short = short or line
        self.status = status


class DashboardTimeout(DashboardError):
    """No answer, or not the whole answer, within the request's time."""


class DashboardRefused(DashboardError):
    """401/403: the token is missing or not this cluster's."""


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
    """One dashboard, reached over HTTP with an optional bearer token (or Ray's own auth
    headers, on the cluster side)."""

    def __init__(self, address: str, token: str | None = None, token_source: str | None = None,
                 timeout_s: float = REQUEST_TIMEOUT_S, auth_headers: dict | None = None):
        self.url = base_url(address)
        self.token = token
        self.token_source = token_source
        self.timeout_s = timeout_s
        self.auth_headers = dict(auth_headers or {})
        self._tls = ssl.create_default_context()

    @classmethod
    def of_cluster(cls, dashboard_url: str, timeout_s: float = REQUEST_TIMEOUT_S) -> "Dashboard":
        """The dashboard of the cluster rldoctor joined (`host:port` as Ray reports it), with
        the auth headers Ray's own state API client sends."""
        from rldoctor.cluster.private import http_auth_headers

        address = dashboard_url if "://" in dashboard_url else f"http://{dashboard_url}"
        return cls(address, timeout_s=timeout_s, auth_headers=http_auth_headers(),
                   token_source=RAYS_CLIENT)

    def headers(self, extra: dict | None = None) -> dict:
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        headers.update(self.auth_headers)
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        headers.update(extra or {})
        return headers

    def _sends_token(self) -> bool:
        return bool(self.token) or any(k.lower() == "authorization" for k in self.auth_headers)

    def read(self, method: str, path: str, body: bytes | None = None,
             content_type: str | None = None, timeout_s: float | None = None,
             max_bytes: int | None = None) -> tuple[int, bytes, int]:
        """(status, body, bytes dropped from its front): with `max_bytes`, only the body's
        last `max_bytes` are kept, and a body still arriving after `timeout_s` is a
        DashboardTimeout. Connection failures, silence and auth refusals raise one line."""
        timeout = timeout_s or self.timeout_s
        extra = {"Content-Type": content_type} if content_type else {}
        req = urllib.request.Request(self.url + path, data=body, method=method,
                                     headers=self.headers(extra))
        deadline = time.monotonic() + timeout
        where = f"{method} {path.split('?')[0]}"
        try:
            with urllib.request.urlopen(req, timeout=timeout,
                                        context=self._tls if self.url.startswith("https") else None) as resp:
                if max_bytes is None:
                    return resp.status, resp.read(), 0
                kept, total = bytearray(), 0
                while True:
                    chunk = resp.read(_CHUNK)
                    if not chunk:
                        break
                    total += len(chunk)
                    kept += chunk
                    if len(kept) > max_bytes:
                        del kept[:len(kept) - max_bytes]
                    if time.monotonic() > deadline:
                        raise DashboardTimeout(
                            f"the dashboard at {self.url} was still sending after {timeout:g}s "
                            f"({where})", short=f"still sending after {timeout:g}s")
                return resp.status, bytes(kept), total - len(kept)
        except urllib.error.HTTPError as exc:
            status = exc.code
            data = (exc.read(max_bytes) if max_bytes is not None else exc.read()) or b""
        except (socket.timeout, TimeoutError):
            raise self._silent(timeout, where) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise self._silent(timeout, where) from None
            text = getattr(reason, "strerror", None) or str(reason)
            raise DashboardError(
                f"cannot reach a Ray dashboard at {self.url}: {text}; is the head running and "
                "the port forwarded (`kubectl port-forward svc/<cluster>-head-svc 8265`)?",
                short=f"dashboard unreachable: {text}") from None
        except (ConnectionError, OSError) as exc:
            text = exc.strerror or type(exc).__name__
            raise DashboardError(f"cannot reach a Ray dashboard at {self.url}: {text}",
                                 short=f"connection failed: {text}") from None
        if status in (401, 403):
            raise self.refused(status)
        return status, data, 0

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str | None = None, timeout_s: float | None = None,
                ok: tuple[int, ...] = (200,)) -> tuple[int, bytes]:
        """(status, body); connection failures and auth refusals raise one clear line."""
        status, data, _ = self.read(method, path, body=body, content_type=content_type,
                                    timeout_s=timeout_s)
        return status, data

    def _silent(self, timeout: float, where: str) -> DashboardTimeout:
        return DashboardTimeout(
            f"no answer from {self.url} within {timeout:g}s ({where}): is it a Ray dashboard, "
            "and is the port-forward up?", short=f"no answer within {timeout:g}s")

    def refused(self, status: int) -> DashboardRefused:
        short = f"the dashboard refused the request (HTTP {status}): check the auth token"
        if not self._sends_token():
            return DashboardRefused(
                f"the Ray dashboard at {self.url} uses token authentication ({status}) and "
                "rldoctor found no token (looked in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH and "
                f"~/.ray/auth_token): set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH to the token "
                f"file ({GET_TOKEN})", short=short, status=status)
        return DashboardRefused(
            f"the Ray dashboard at {self.url} refused the token from {self.token_source} "
            f"({status}: not this cluster's token); set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH "
            f"to this cluster's token file ({GET_TOKEN})", short=short, status=status)

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
