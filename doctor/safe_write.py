"""Every file rldoctor writes: a temp file beside it, then one rename; never through a link.

- The destination is checked first: a symbolic link there is refused in one line (rldoctor
  writes no file through a link, nor replaces the link: give the real path), as is a folder
  or a missing parent folder. Two exceptions for write_file, which write into what is there
  instead of renaming: the names of this process's own streams (/dev/stdout, /dev/stderr,
  /dev/fd/N, /proc/self/fd/N), and a device or a named pipe given by its own name
  (/dev/null): neither can be a file that a rename would replace.
- The data goes to a hidden temp file in the destination's own folder (created 0600 by
  mkstemp), is flushed to disk, given its final mode and renamed over the destination. A
  rename replaces the name, never what a link there points to, so even a link placed after
  the check is replaced, not followed; a reader sees the old file or the new one, never half.
- Modes: PRIVATE (0600, whatever the umask) for everything that may hold cluster data
  (snapshots, reports written with --output, bundles and their obfuscation maps, watch logs,
  smoke-train records); `lint --fix` keeps the mode of the file it rewrites. Caches of Ray's
  own names hold no cluster data and get SHARED (0644).

Standard library only.
"""

from __future__ import annotations

import os
import stat
import tempfile

from rldoctor.errors import UsageError

PRIVATE = 0o600
SHARED = 0o644


def check_target(path: str, what: str, error=UsageError) -> str:
    """The absolute destination, or `error` in one line: a link, a folder, no such folder."""
    target = os.path.abspath(path)
    label = f"{what} {path}" if what else path
    try:
        found = os.lstat(target)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise error(f"{label}: cannot write: {exc.strerror or exc}") from None
    if found is not None and stat.S_ISLNK(found.st_mode):
        raise error(f"{label}: is a symbolic link; rldoctor does not write through links "
                    "(give the file's real path)")
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise error(f"{label}: is a directory")
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise error(f"{label}: is not a regular file")
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise error(f"{label}: no such folder {folder}")
    return target


class Pending:
    """A temp file beside `path`, reserved now, renamed over `path` by commit()."""

    def __init__(self, path: str, what: str = "--output", error=UsageError):
        self.what, self.error, self.given = what, error, path
        self.path = check_target(path, what, error)
        folder = os.path.dirname(self.path)
        try:
            fd, self.temp = tempfile.mkstemp(prefix=f".{os.path.basename(self.path)}.",
                                             suffix=".partial", dir=folder)
        except OSError as exc:
            raise error(f"{self._label()}: cannot write in {folder}: {exc.strerror or exc}") from None
        os.close(fd)

    def _label(self) -> str:
        return f"{self.what} {self.given}" if self.what else self.given

    def commit(self, mode: int = PRIVATE, replace: bool = True) -> None:
        """Give the written temp file `mode`, sync it and rename it over the destination
        (refusing, in one line, a link that appeared there, or any file when not `replace`)."""
        try:
            found = os.lstat(self.path)
        except FileNotFoundError:
            found = None
        if found is not None and stat.S_ISLNK(found.st_mode):
            self.abandon()
            raise self.error(f"{self._label()}: became a symbolic link while rldoctor wrote it; "
                             "nothing was written")
        if found is not None and not replace:
            self.abandon()
            raise self.error(f"{self._label()}: appeared while rldoctor wrote it; pass --force "
                             "to replace it")
        try:
            fd = os.open(self.temp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            try:
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(self.temp, self.path)
        except OSError as exc:
            self.abandon()
            raise self.error(f"{self._label()}: cannot write: {exc.strerror or exc}") from None

    def abandon(self) -> None:
        try:
            os.unlink(self.temp)
        except OSError:
            pass


_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2}


def _stream_fd(path: str) -> int | None:
    """The fd a name for this process's own stream stands for (/dev/stdout, /dev/fd/3)."""
    if path in _STREAMS:
        return _STREAMS[path]
    for prefix in ("/dev/fd/", "/proc/self/fd/"):
        if path.startswith(prefix) and path[len(prefix):].isdigit():
            return int(path[len(prefix):])
    return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _write_in_place(path: str, data: bytes, label: str, error) -> bool:
    """Write into a stream, a device or a pipe named by `path`; False when it is none of these."""
    fd = _stream_fd(path)
    try:
        if fd is not None:
            _write_all(fd, data)
            return True
        found = os.lstat(path)
        if stat.S_ISCHR(found.st_mode) or stat.S_ISFIFO(found.st_mode):
            fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise error(f"{label}: cannot write: {exc.strerror or exc}") from None
    return False


def write_file(path: str, data, *, what: str = "--output", mode: int = PRIVATE,
               error=UsageError) -> None:
    """Write `data` (text as UTF-8, or bytes) to `path` by temp file and rename, with `mode`
    (into a stream, a device or a named pipe as it is: see the module's docstring)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if _write_in_place(path, data, f"{what} {path}" if what else path, error):
        return
    pending = Pending(path, what, error)
    try:
        with open(pending.temp, "wb") as out:
            out.write(data)
    except OSError as exc:
        pending.abandon()
        raise error(f"{pending._label()}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        pending.abandon()
        raise
    pending.commit(mode)


def open_append(path: str, what: str = "--log", error=UsageError):
    """A text file to append lines to (watch's log): created PRIVATE, never through a link
    (O_NOFOLLOW), never anything but a regular file."""
    target = check_target(path, what, error)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0), PRIVATE)
    except OSError as exc:
        raise error(f"{what} {path}: cannot write: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise error(f"{what} {path}: is not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")
