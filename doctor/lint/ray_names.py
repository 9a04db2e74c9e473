"""The settings the installed Ray knows, read from its own files (never a copied list).

- `_system_config` keys are RayConfig entries, compiled into Ray's C++ core.
  Every entry is read from the environment as `RAY_<key>`, so the core
  library `_raylet.so` holds the string `RAY_<key>` for each of them; those
  strings are the known keys. (A handful of `RAY_<lowercase>` names are read
  straight from the environment by C++ code and are not RayConfig keys; the
  scan cannot tell them apart, so `_system_config` accepts them here while
  Ray would not. `num_grpc_internal_threads` is one, checked on 2.60.0.)
- `RAY_` environment names are those strings, the upper-case `RAY_...` names
  in Ray's binaries, and every `"RAY_..."` string literal in Ray's Python
  sources.

Finding Ray does not import it (`importlib.util.find_spec`). Scanning takes
about two seconds, so the result is cached per Ray version and build in
`$RLDOCTOR_CACHE_DIR` (default `$XDG_CACHE_HOME/rldoctor`, else
`~/.cache/rldoctor`); a cache that cannot be written is simply not kept.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path

CACHE_VERSION = 1
_CONFIG_RE = re.compile(rb"RAY_([a-z][A-Za-z0-9_]*)\x00")
_UPPER_RE = re.compile(rb"RAY_[A-Z][A-Z0-9_]*[A-Z0-9]\x00")  # starts with a literal: fast to search
_IDENTIFIER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_PY_RE = re.compile(rb"""["'](RAY_[A-Za-z0-9_]+)["']""")
_BINARIES = ("_raylet.so", "core/src/ray/raylet/raylet", "core/src/ray/gcs/gcs_server")


class RayNotInstalled(Exception):
    pass


def ray_root() -> Path:
    spec = importlib.util.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        raise RayNotInstalled("ray is not installed in this Python")
    return Path(list(spec.submodule_search_locations)[0])


def ray_build(root: Path) -> dict:
    """Version and commit from `ray/_version.py`, without importing ray."""
    text = (root / "_version.py").read_text(encoding="utf-8", errors="replace")
    version = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    commit = re.search(r'^commit\s*=\s*"([^"]+)"', text, re.M)
    return {"version": version.group(1) if version else "unknown",
            "commit": commit.group(1) if commit else "unknown"}


def _cache_dir() -> Path:
    if os.environ.get("RLDOCTOR_CACHE_DIR"):
        return Path(os.environ["RLDOCTOR_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rldoctor"


def _scan(root: Path) -> dict:
    config_keys: set[str] = set()
    env_names: set[str] = set()
    for relative in _BINARIES:
        path = root / relative
        if not path.exists():
            continue
        data = path.read_bytes()
        found = {m.group(1).decode() for m in _CONFIG_RE.finditer(data)}
        if relative == "_raylet.so":
            config_keys |= found
        env_names |= {"RAY_" + key for key in found}
        env_names |= {m.group(0)[:-1].decode() for m in _UPPER_RE.finditer(data)
                      if m.start() == 0 or data[m.start() - 1] not in _IDENTIFIER}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            if name.endswith(".py"):
                try:
                    data = (Path(dirpath) / name).read_bytes()
                except OSError:
                    continue
                if b"RAY_" in data:
                    env_names |= {m.group(1).decode() for m in _PY_RE.finditer(data)}
    return {"system_config_keys": sorted(config_keys), "env_names": sorted(env_names)}


def known_names() -> dict:
    """{"version", "commit", "system_config_keys", "env_names", "cached"} for the installed Ray."""
    root = ray_root()
    build = ray_build(root)
    raylet = root / "_raylet.so"
    stamp = f"{raylet.stat().st_size}-{int(raylet.stat().st_mtime)}" if raylet.exists() else "none"
    cache = _cache_dir() / f"ray-names-{build['version']}-{build['commit'][:12]}.json"
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if isinstance(cached, dict) and cached.get("cache_version") == CACHE_VERSION \
                and cached.get("stamp") == stamp:
            return {**build, **{k: cached[k] for k in ("system_config_keys", "env_names")},
                    "cached": True}
    except (OSError, ValueError, KeyError):
        pass
    names = _scan(root)
    from rldoctor.errors import RldoctorError
    from rldoctor.safe_write import SHARED, write_file

    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_file(str(cache), json.dumps({"cache_version": CACHE_VERSION, "stamp": stamp, **names}),
                   what="", mode=SHARED)
    except (OSError, RldoctorError):
        pass
    return {**build, **names, "cached": False}
