"""Where rldoctor keeps what it can make again on this machine (client side only):
`$RLDOCTOR_CACHE_DIR`, else `$XDG_CACHE_HOME/rldoctor`, else `~/.cache/rldoctor`. Whatever
reads from it makes the thing again when it is missing or unreadable, and a cache that cannot
be written is simply not kept."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    if os.environ.get("RLDOCTOR_CACHE_DIR"):
        return Path(os.environ["RLDOCTOR_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rldoctor"
