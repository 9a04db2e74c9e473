"""Log tails from any node through the dashboard's HTTP log route, with our own timeouts.

Ray's Python log API has no client-side timeout, and a sick node can hold a request for
as long as the server waits; every request here has a socket timeout, an overall deadline
and a byte cap (the tail is kept, the front dropped), and the server is told a shorter
timeout of its own. Authenticated like Ray's own state API client when token auth is on.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

from rldoctor.words import first_text_line

REQUEST_TIMEOUT_S = 3.0
_CHUNK = 64 * 1024


class LogError(Exception):
    """A log could not be read; the message says why, in a few words."""


class LogTimeout(LogError):
    """The node (or the server on its behalf) did not answer in time."""


class LogRoute:
    def __init__(self, dashboard_url: str, headers: dict[str, str] | None = None,
                 timeout_s: float = REQUEST_TIMEOUT_S):
        self.base = dashboard_url if "://" in dashboard_url else f"http://{dashboard_url}"
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s

    def _get(self, path: str, params: dict, max_bytes: int) -> tuple[bytes, int]:
        """(the last `max_bytes` of the reply, bytes dropped from its front)."""
        params = dict(params, timeout=max(1, int(self.timeout_s) - 1))  # the server's own limit
        url = f"{self.base}{path}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers=self.headers)
        deadline = time.monotonic() + self.timeout_s
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
                kept, total = bytearray(), 0
                while True:
                    chunk = reply.read(_CHUNK)
                    if not chunk:
                        break
                    total += len(chunk)
                    kept += chunk
                    if len(kept) > max_bytes:
                        del kept[:len(kept) - max_bytes]
                    if time.monotonic() > deadline:
                        raise LogTimeout(f"still sending after {self.timeout_s:g}s")
                return bytes(kept), total - len(kept)
        except urllib.error.HTTPError as exc:
            body = exc.read(2000).decode("utf-8", errors="replace").strip()
            if exc.code in (401, 403):
                raise LogError(f"the dashboard refused the request (HTTP {exc.code}): check the "
                               "auth token") from None
            if "not found" in body.lower():
                raise LogError("no such log on the node") from None
            if "timeout" in body.lower() or "timed out" in body.lower() or "deadline" in body.lower():
                raise LogTimeout(f"the node did not answer the dashboard in time ({_first(body)})") from None
            if exc.code == 500 and "server got itself in trouble" in body.lower():
                # aiohttp's bare 500: Ray 2.55's log route answers so for an empty file
                raise LogError("HTTP 500 from the dashboard's log route without a reason (Ray "
                               "2.5x answers so for an empty log file)") from None
            raise LogError(f"HTTP {exc.code}: {_first(body)}") from None
        except (socket.timeout, TimeoutError):
            raise LogTimeout(f"no answer within {self.timeout_s:g}s") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise LogTimeout(f"no answer within {self.timeout_s:g}s") from None
            raise LogError(f"dashboard unreachable: {getattr(reason, 'strerror', None) or reason}") from None
        except (ConnectionError, OSError) as exc:
            raise LogError(f"connection failed: {exc.strerror or exc}") from None

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
