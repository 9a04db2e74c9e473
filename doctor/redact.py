"""Keep secrets out of everything rldoctor prints or writes.

Ray's token authentication reads the token from RAY_AUTH_TOKEN, the file named by
RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token. rldoctor never records the token on
purpose; this is the last line of defence for text that passes through (error
messages, environment dumps).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

MASK = "***redacted***"
_TOKENISH_KEYS = re.compile(r"(RAY_AUTH_TOKEN|authorization|bearer)(\W{1,4})([A-Za-z0-9._\-]{8,})",
                            re.IGNORECASE)


@lru_cache(maxsize=1)
def _secrets() -> tuple[str, ...]:
    found = []
    env = os.environ.get("RAY_AUTH_TOKEN", "").strip()
    if env:
        found.append(env)
    paths = [os.environ.get("RAY_AUTH_TOKEN_PATH"), str(Path.home() / ".ray" / "auth_token")]
    for path in filter(None, paths):
        try:
            value = Path(path).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if value:
            found.append(value)
    return tuple(s for s in found if len(s) >= 6)


def redact(text: str) -> str:
    for secret in _secrets():
        text = text.replace(secret, MASK)
    return _TOKENISH_KEYS.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
