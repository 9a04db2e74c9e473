"""Where Ray's auth token is, looked up the way Ray's CLI does: the one place that knows.

RAY_AUTH_TOKEN first, then the file named by RAY_AUTH_TOKEN_PATH, then ~/.ray/auth_token.
`find_token` (joining a cluster, rldoctor.cluster.auth) takes the first that holds one;
`every_token` (redaction, rldoctor.redact) takes them all, since a stale file's token is
just as secret as the one in use. Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path


def _places() -> list[tuple[str, str | None]]:
    """(where, path or None for the environment variable), in Ray's order."""
    places: list[tuple[str, str | None]] = [("RAY_AUTH_TOKEN", None)]
    named = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if named:
        places.append((f"the file in RAY_AUTH_TOKEN_PATH, {named}", named))
    default = Path.home() / ".ray" / "auth_token"
    places.append((f"the default token file {default}", str(default)))
    return places


def _read(path: str | None) -> str | None:
    """The token at a place: stripped, "" when empty, None when unreadable or absent."""
    if path is None:
        return os.environ.get("RAY_AUTH_TOKEN", "").strip()
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def find_token() -> tuple[str | None, str | None]:
    """(token, where it came from), the first place that holds one, in Ray's order.

    An empty file named by RAY_AUTH_TOKEN_PATH stops the search: (None, "... which is empty").
    """
    named = os.environ.get("RAY_AUTH_TOKEN_PATH")
    for source, path in _places():
        value = _read(path)
        if value:
            return value, source
        if path is not None and path == named and value == "":
            return None, f"{source}, which is empty"
    return None, None


def every_token() -> tuple[str, ...]:
    """Every token found at any of Ray's places (for masking), long enough to be one."""
    found = (_read(path) for _, path in _places())
    return tuple(dict.fromkeys(v for v in found if v and len(v) >= 6))
