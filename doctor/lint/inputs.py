"""Which files `rldoctor lint PATH ...` reads, and reading them without surprises.

A directory is walked for `.py`, `.ipynb`, `.yaml` and `.yml` files (hidden
directories, `__pycache__` and `node_modules` are skipped). A file that cannot
be read, is binary, is not UTF-8 or is larger than the limit becomes a
`Problem`: one line in the report, and the other paths are still linted.
"""

from __future__ import annotations

import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path

from rldoctor.words import size

KINDS = {".py": "python", ".ipynb": "notebook", ".yaml": "yaml", ".yml": "yaml"}
# Far above any training script, cluster config or notebook; parsing more takes seconds.
MAX_BYTES = {"python": 2 * 2**20, "yaml": 2**20, "notebook": 20 * 2**20}
SKIP_DIRS = {"__pycache__", "node_modules"}

# Problem statuses. `unreadable` means the input could not be read at all (exit 3);
# the others were read but cannot be linted.
UNREADABLE = "unreadable"


@dataclass
class Source:
    path: str  # as the user wrote it (joined with the walked relative path)
    kind: str  # python, notebook or yaml
    text: str


@dataclass
class Problem:
    path: str
    status: str  # unreadable, too-large, binary, unsupported, syntax-error, yaml-error, yaml-bomb
    message: str
    line: int = 0
    column: int = 0

    def to_json(self) -> dict:
        return {"path": self.path, "status": self.status, "message": self.message,
                "line": self.line, "column": self.column}


def _walk(root: str, skipped: list[str]) -> list[str]:
    """The files to lint under `root`; what is not a regular file (a FIFO would block the
    read forever, a device never end) goes to `skipped` as a note."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=None):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(filenames):
            if Path(name).suffix.lower() in KINDS:
                path = os.path.join(dirpath, name)
                why = not_regular(path)
                if why:
                    skipped.append(f"skipped {path}: {why}")
                else:
                    found.append(path)
    return found


def not_regular(path: str) -> str | None:
    """Why `path` is not read (it is a FIFO, a device or a socket), or None for a regular file
    (or a link to one) and for a path that is not there (the read says so)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or
            stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    return f"{kind}, not a regular file; not read"


def expand(paths: list[str], skipped: list[str] | None = None
           ) -> tuple[list[tuple[str, str]], list[Problem]]:
    """(path, kind) for every file to lint, in order, and the paths that are not there;
    `skipped` collects a note for each file a walked folder holds that is not regular."""
    skipped = [] if skipped is None else skipped
    files: list[tuple[str, str]] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for given in paths:
        if os.path.isdir(given):
            if not os.access(given, os.R_OK | os.X_OK):
                problems.append(Problem(given, UNREADABLE, "cannot read directory: permission denied"))
                continue
            candidates = [(p, KINDS[Path(p).suffix.lower()]) for p in _walk(given, skipped)]
        elif os.path.lexists(given):
            kind = KINDS.get(Path(given).suffix.lower())
            if kind is None:
                problems.append(Problem(given, "unsupported",
                                        "not a .py, .ipynb, .yaml or .yml file; not linted"))
                continue
            candidates = [(given, kind)]
        else:
            problems.append(Problem(given, UNREADABLE, "no such file or directory"))
            continue
        for path, kind in candidates:
            key = os.path.realpath(path)
            if key not in seen:
                seen.add(key)
                files.append((path, kind))
    return files, problems


def read(path: str, kind: str) -> Source | Problem:
    """The file's text, or the reason it cannot be linted. Only regular files are opened (a
    FIFO would block forever); Python sources are decoded as their PEP 263 line says."""
    limit = MAX_BYTES[kind]
    why = not_regular(path)
    if why:
        return Problem(path, "unsupported", why)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        return Problem(path, UNREADABLE, "no such file (it went away while linting)")
    except IsADirectoryError:
        return Problem(path, "unsupported", "is a directory")
    except OSError as exc:
        return Problem(path, UNREADABLE, f"cannot read: {exc.strerror or exc}")
    if len(data) > limit:
        return Problem(path, "too-large", f"larger than {size(limit)}; not linted (a generated file?)")
    if b"\x00" in data[:8192]:
        return Problem(path, "binary", "binary file (NUL bytes); not linted")
    encoding = "utf-8-sig"
    if kind == "python":  # `# -*- coding: latin-1 -*-` (PEP 263) is what Python reads it as
        try:
            encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        except SyntaxError as exc:  # an unknown coding name, a BOM that contradicts it, or
            if "invalid or missing" not in str(exc):  # a first line that is not UTF-8 (below)
                return Problem(path, "binary", f"{exc.msg}; not linted")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        named = "UTF-8" if encoding.startswith("utf-8") else f"{encoding} (its coding line)"
        return Problem(path, "binary", f"not {named} text; not linted", line=line)
    return Source(path, kind, text)
