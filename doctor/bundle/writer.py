"""The bundle's members and its size cap (the archive itself: rldoctor.bundle.target).

Nothing is ever left half-written under the final name: the archive goes to a hidden temp
file in the target's folder (created before collection starts, so an unwritable folder is
found in a second, not after the collection), is flushed to disk, and is renamed over the
target only when complete (rldoctor.bundle.target). Any failure (disk full, a folder that
vanished) removes the temp file and is one line, exit 3.
"""

from __future__ import annotations

from dataclasses import dataclass

from rldoctor.errors import Undiagnosable

_BLOCK = 512
_MARGIN = 4096  # gzip framing and the tar end blocks, over the members' own cost


@dataclass
class Member:
    """One file of the bundle. Only `log` members are shortened (from the front) to fit the cap."""

    path: str  # inside the top folder
    data: bytes
    kind: str = "file"
    cut_bytes: int = 0  # cut from the front to fit the size cap


def _cost(size: int) -> int:
    """Bytes a member of `size` takes in a tar: its header and its data padded to blocks."""
    return _BLOCK * 2 + -(-size // _BLOCK) * _BLOCK  # a PAX header for long names, roughly


def cut_marker(cut: int) -> bytes:
    return f"[rldoctor: {cut} earlier bytes cut to fit the bundle]\n".encode()


def cut_front(data: bytes, keep: int) -> tuple[bytes, int]:
    """The last `keep` bytes of `data` from a line start, behind a marker; (new data, bytes cut)."""
    if len(data) <= keep:
        return data, 0
    tail = data[len(data) - max(0, keep):] if keep > 0 else b""
    newline = tail.find(b"\n")
    if 0 <= newline < len(tail) - 1:
        tail = tail[newline + 1:]
    cut = len(data) - len(tail)
    return cut_marker(cut) + tail, cut


def fit(members: list[Member], max_bytes: int, reserve: int = 0) -> None:
    """Shorten the largest logs (from the front) until the archive fits in `max_bytes`.

    The cap is on the uncompressed archive, so the gzip file is smaller still. Logs are
    cut to one common length, the smallest that fits ("water filling"): small logs stay
    whole. `reserve` is room kept for members added later (the manifest).
    """
    fixed = sum(_cost(len(m.data)) for m in members if m.kind != "log")
    logs = [m for m in members if m.kind == "log"]
    # Every log keeps its tar header, a padded last block and room for the marker.
    avail = (max_bytes - _MARGIN - reserve - fixed
             - len(logs) * (_cost(0) + _BLOCK + len(cut_marker(10**12))))
    if avail < 0:
        raise Undiagnosable(
            f"--max-size {max_bytes / 1e6:g} MB cannot hold the bundle's snapshot, report and "
            f"stacks ({(fixed + reserve) / 1e6:.2f} MB); raise --max-size")
    sizes = sorted(len(m.data) for m in logs)
    if sum(sizes) <= avail:
        return
    level, left = 0, avail
    for i, size in enumerate(sizes):  # the length every longer log is cut to
        share = left // (len(sizes) - i)
        if size > share:
            level = share
            break
        left -= size
    for m in logs:
        if len(m.data) > level:
            m.data, cut = cut_front(m.data, level)
            m.cut_bytes += cut


def tar_size(members: list[Member]) -> int:
    return sum(_cost(len(m.data)) for m in members) + _MARGIN
