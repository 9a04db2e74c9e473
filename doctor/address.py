"""`--address` (or RAY_ADDRESS) judged before anything is contacted: `auto`, HOST:PORT of the
head's GCS or http(s)://HOST:PORT of its dashboard; anything else is one line, exit 3 (as a
malformed address always was: nothing could be diagnosed), that
says which part is wrong (a port out of range is not "not a number", a URL that does not
parse is not "a GCS address"). Standard library only; nothing here connects.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse

from rldoctor.errors import Undiagnosable

MAX_ADDRESS = 512  # a host name is at most 253 characters
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_-]{1,63})*\.?$")
KINDS = ("HOST:PORT of the head's GCS, http(s)://HOST:PORT of its dashboard, or auto")


def _shown(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:60] + "...")


def _host_problem(host: str) -> str | None:
    if not host:
        return "no host"
    inner = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(inner)
        return None
    except ValueError:
        pass
    if host.startswith("["):
        return f"{_shown(host)} is not an IPv6 address"
    if not _HOST_NAME.match(host):
        return f"{_shown(host)} is not a host name or IP address"
    return None


def _port_problem(port: str) -> str | None:
    if not port:
        return "no port"
    if not port.isdigit():
        return f"the port {_shown(port)} is not a number"
    if not 1 <= int(port) <= 65535:
        return f"the port {int(port) if len(port) < 12 else port[:12] + '...'} is out of range (1-65535)"
    return None


def problem(address: str) -> str | None:
    """What is wrong with `address`, in a phrase; None when it is one rldoctor can try."""
    text = address.strip()
    if not text:
        return "it is empty"
    if len(text) > MAX_ADDRESS:
        return f"it is {len(text)} characters long, not an address"
    if any(ord(c) < 32 or c == "\x7f" for c in text):
        return "it holds control characters"
    if text.lower() == "auto":
        return None
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if scheme not in ("http", "https"):
            return f"the scheme {scheme!r} is not http or https"
        try:
            parsed = urllib.parse.urlsplit(text)
        except ValueError as exc:  # 'http://[::1': Invalid IPv6 URL
            return f"it does not parse as a URL ({exc})"
        netloc = parsed.netloc.rpartition("@")[2]
        if "%" in netloc:
            return "its host holds %-escapes; give the host name or IP address itself"
        host, port = _split(netloc)
        if port is None:
            return None if not _host_problem(host) else _host_problem(host)
        return _host_problem(host) or _port_problem(port)
    host, port = _split(text)
    if port is None:
        return "it has no port (HOST:PORT)"
    return _host_problem(host) or _port_problem(port)


def _split(netloc: str) -> tuple[str, str | None]:
    """(host, port or None) of `host:port`, `[v6]:port`, `host` or `[v6]`."""
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            return netloc, None
        rest = netloc[end + 1:]
        return netloc[:end + 1], (rest[1:] if rest.startswith(":") else None)
    host, colon, port = netloc.rpartition(":")
    if not colon:
        return netloc, None
    if ":" in host:  # a bare IPv6 address without brackets and without a port
        return netloc, None
    return host, port


def check(address: str | None, given_as: str = "--address") -> None:
    """Raise Undiagnosable (exit 3) for an address that is none of the three kinds."""
    if address is None:
        return
    why = problem(address)
    if why:
        raise Undiagnosable(f"{given_as} {_shown(address.strip())}: not an address ({why}); give "
                         + KINDS)
