"""The target file of `collect --bundle`: reserved (a temp file beside it) before collection
starts, written (rldoctor.bundle.writer's members, a tar.gz) and renamed into place at the end,
never through a link (rldoctor.safe_write). The client's alone: the cluster side only builds
members (rldoctor.bundle.writer)."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import time

from rldoctor.bundle.writer import Member
from rldoctor.errors import Undiagnosable
from rldoctor.safe_write import PRIVATE, Pending, check_target


class BundleFile:
    """The target file of `collect --bundle`, reserved before collection starts (a temp file
    beside it, rldoctor.safe_write); never a link, even with --force."""

    def __init__(self, path: str, force: bool = False, extra_paths: tuple[str, ...] = ()):
        self.path = os.path.abspath(path)
        self.force = force
        folder = os.path.dirname(self.path)
        for target in (self.path, *extra_paths):
            if os.path.isdir(target) and not os.path.islink(target):
                raise Undiagnosable(f"--bundle {path}: {target} is a directory")
            if os.path.lexists(target) and not force and not os.path.islink(target):
                raise Undiagnosable(f"--bundle {path}: {target} exists; pass --force to replace it")
        if not os.path.isdir(folder):
            raise Undiagnosable(f"--bundle {path}: no such folder {folder}")
        for target in (self.path, *extra_paths):
            check_target(target, f"--bundle {path}:" if target != self.path else "--bundle",
                         Undiagnosable)
        self._pending = Pending(path, "--bundle", Undiagnosable)
        self.temp = self._pending.temp

    def write(self, top: str, members: list[Member]) -> int:
        """Write `members` under `top/`, then rename into place (0600); returns the file's size."""
        now = time.time()
        try:
            with open(self.temp, "wb") as raw:
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6,
                                   mtime=int(now)) as packed:
                    with tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar:
                        for m in members:
                            info = tarfile.TarInfo(f"{top}/{m.path}")
                            info.size, info.mtime, info.mode = len(m.data), now, 0o644
                            info.uname = info.gname = ""
                            tar.addfile(info, io.BytesIO(m.data))
            if os.path.lexists(self.path) and not self.force:
                raise Undiagnosable(f"--bundle {self.path}: appeared while collecting; pass --force "
                                    "to replace it")
        except OSError as exc:
            self.abandon()
            raise Undiagnosable(f"--bundle {self.path}: cannot write: {exc.strerror or exc}; "
                                "no bundle was written") from None
        except BaseException:
            self.abandon()
            raise
        self._pending.commit(PRIVATE, replace=self.force)
        return os.path.getsize(self.path)

    def abandon(self) -> None:
        try:
            os.unlink(self.temp)
        except OSError:
            pass
