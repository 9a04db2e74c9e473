"""Finding the session directories under DIR and reading Ray's log files from their end.

DIR may be a `session_*` directory, its `logs/`, or a folder holding several nodes'
session directories (a log volume collected from every pod: node1/session_x/...,
node2/session_x/...). Only the files Ray writes are read, never written: the GCS,
raylet, job-driver, worker and core-worker logs, `events/`, `logs/old/` and
`logs/jobs/`, rotated siblings (`raylet.1.out`, `x.log.1`) included.

A file is read from its end within a byte budget, plus its first bytes (where a process
says who it is). What could not be read whole is said: a file cut to its tail, one that
is not text, one that could not be opened, a last line without its newline (a file
being written, or cut by a copy).
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field

from rldoctor.errors import Undiagnosable
from rldoctor.raylog.kinds import classify, kind_of

HEAD_BYTES = 256 * 1024  # the start of every file: process identity, Ray version
DEFAULT_FILE_BUDGET = 32 * 2**20  # bytes read from the end of one file
DEFAULT_TOTAL_BUDGET = 512 * 2**20  # bytes read over all files of the directory
CHUNK = 4 * 2**20
MAX_DEPTH = 4  # how deep below DIR session directories are looked for

MAX_LOOSE_FILES = 2000  # files of a folder that is no session directory (kubectl logs ...)
MAX_LOOSE_BYTES = 64 * 2**20  # the largest such file read (from its end)


@dataclass
class LogFile:
    path: str
    rel: str  # path below DIR, as shown in the report
    kind: str
    meta: dict = field(default_factory=dict)  # worker id, pid, submission id, ... from the name
    size: int = 0
    data: bytes | None = None  # the text itself, for input that is no file (stdin, a tar member)


@dataclass
class Session:
    """One node's session directory (or a `logs/` directory given alone)."""

    root: str  # the session_* directory, or the logs directory when given without it
    logs: str
    name: str  # session_<date>_<pid>, or "" when unknown
    files: list[LogFile] = field(default_factory=list)


def rel_root(root: str, top: str) -> str:
    """A session directory as the report names it: below DIR, or "." for DIR itself (and
    for the session around DIR when DIR is its logs/)."""
    rel = os.path.relpath(root, top)
    return "." if rel.startswith("..") else rel


def _is_logs_dir(path: str) -> bool:
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return any(classify(n) and classify(n)[0] in ("gcs", "raylet", "worker", "job_driver",
                                                    "core_worker") for n in names)


def find_sessions(top: str) -> list[Session]:
    """Every session directory under `top`; Undiagnosable (exit 3) when there is none.

    `top` may also be one log file (read alone), or a folder of log files that is no
    session directory (`kubectl logs` saved per pod, files attached to a ticket): then
    every regular text file in it is one loose file of one pseudo session."""
    top = os.path.abspath(top)
    if not os.path.exists(top):
        raise Undiagnosable(f"{top}: no such file or directory")
    if os.path.isfile(top):
        return [single_file(top)]
    if not os.path.isdir(top):
        raise Undiagnosable(f"{top}: not a directory or a regular file")
    found: list[Session] = []
    seen: set[str] = set()

    def add(root: str, logs: str) -> None:
        real = os.path.realpath(logs)
        if real in seen:
            return  # session_latest and the session it points to
        seen.add(real)
        base = os.path.basename(root)
        found.append(Session(root, logs, base if base.startswith("session_") else ""))

    def walk(path: str, depth: int) -> None:
        base = os.path.basename(path)
        if base.startswith("session_") and os.path.isdir(os.path.join(path, "logs")):
            add(path, os.path.join(path, "logs"))
            return
        if _is_logs_dir(path):
            parent = os.path.dirname(path)
            add(parent if os.path.basename(parent).startswith("session_") else path, path)
            return
        if depth >= MAX_DEPTH:
            return
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name == "session_latest" or entry.name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    walk(entry.path, depth + 1)
            except OSError:
                continue

    walk(top, 0)
    if not found:
        loose = loose_files(top)
        if loose is not None and any(f.kind != "other" or looks_like_ray(f.path)
                                     for f in loose.files[:200]):
            return [loose]
        raise Undiagnosable(f"{top}: holds no Ray session directory (no session_*/logs with "
                            "gcs_server, raylet, job-driver or worker logs)")
    for session in found:
        session.files = _list_files(session, top)
    return found


# What only Ray's output holds: its C++ log prefix, its relay prefixes, its names.
_RAY_SIGNS = re.compile(rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d{3} [TDIWECF] \d+ \d+\]|"
                        rb"\((?:raylet|gcs_server|pid=\d+|\w+ pid=\d+)[,)]|ray\.exceptions\.|"
                        rb"ray::\w|:actor_name:|Fatal Python error|\bRay runtime started|"
                        rb"ray\.rllib|ray/_private|ray\.init|\braylet\b|gcs_server|"
                        rb"Exception raised in creation task|\*\*\* SIG\w+ received")
SIGN_BYTES = 256 * 1024


def looks_like_ray(path: str, data: bytes | None = None) -> bool:
    """Does the file (its start and end) hold anything Ray writes?"""
    if data is None:
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                data = f.read(SIGN_BYTES)
                if size > 2 * SIGN_BYTES:
                    f.seek(size - SIGN_BYTES)
                    data += b"\n" + f.read(SIGN_BYTES)
        except OSError:
            return False
    return bool(_RAY_SIGNS.search(data[:SIGN_BYTES]) or _RAY_SIGNS.search(data[-SIGN_BYTES:]))


def single_file(path: str) -> Session:
    """One log file given alone: a session of that one file."""
    st = os.stat(path)
    name = os.path.basename(path)
    kind, meta = kind_of(name)
    if kind == "other" and not looks_like_ray(path):
        raise Undiagnosable(f"{path}: holds no line Ray writes (no Ray log prefix, relay "
                            "prefix, crash dump or exception of Ray's); give a Ray log file, "
                            "a session directory, or a snapshot")
    folder = os.path.dirname(path)
    return Session(folder, folder, "", [LogFile(path, name, kind, dict(meta, old=False),
                                                st.st_size)])


def loose_files(top: str) -> Session | None:
    """The regular files below `top` (two levels) as one pseudo session; None when none."""
    out: list[LogFile] = []
    for depth_root, dirs, names in os.walk(top):
        rel_dir = os.path.relpath(depth_root, top)
        if rel_dir != "." and rel_dir.count(os.sep) >= 1:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith(".") or len(out) >= MAX_LOOSE_FILES:
                continue
            path = os.path.join(depth_root, name)
            try:
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                size = os.stat(path).st_size
            except OSError:
                continue
            kind, meta = kind_of(name)
            out.append(LogFile(path, os.path.relpath(path, top), kind, dict(meta, old=False), size))
    return Session(top, top, "", out) if out else None


def _list_files(session: Session, top: str) -> list[LogFile]:
    out = []
    for sub in ("", "old", "events", "jobs"):
        folder = os.path.join(session.logs, sub) if sub else session.logs
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                size = entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
            kind = classify(entry.name)
            if kind is None:
                if sub or entry.name.endswith((".json", ".txt", ".csv", ".yaml", ".pid")) \
                        or "_port_" in entry.name or size > MAX_LOOSE_BYTES:
                    continue
                kind = ("other", {})
            out.append(LogFile(entry.path, os.path.relpath(entry.path, top), kind[0],
                               dict(kind[1], old=sub == "old"), size))
    out.sort(key=lambda f: f.rel)
    return out


class Budget:
    """Bytes left to read over the whole directory."""

    def __init__(self, total: int = DEFAULT_TOTAL_BUDGET, per_file: int = DEFAULT_FILE_BUDGET):
        self.left = total
        self.per_file = per_file

    def take(self, wanted: int) -> int:
        granted = max(0, min(wanted, self.left))
        self.left -= granted
        return granted


@dataclass
class Read:
    """What was read of one file: its start and its end (or the whole of it)."""

    head: bytes = b""
    tail: bytes = b""  # empty when the head holds the whole file
    skipped: int = 0  # bytes between head and tail that were not read
    problem: str | None = None  # unreadable, not text, empty, ...
    partial_last_line: bool = False


def read(log: LogFile, budget: Budget, tail_bytes: int | None = None,
         head_bytes: int = HEAD_BYTES) -> Read:
    """The file's first `head_bytes` and last bytes within the budget; never raises."""
    want_tail = budget.per_file if tail_bytes is None else tail_bytes
    try:
        with (io.BytesIO(log.data) if log.data is not None else open(log.path, "rb")) as f:
            size = len(log.data) if log.data is not None else os.fstat(f.fileno()).st_size
            if size == 0:
                return Read(problem="empty")
            if size <= head_bytes + want_tail:
                granted = budget.take(size)
                data = f.read(granted)
                done = Read(head=data, skipped=size - len(data))
            else:
                head = f.read(budget.take(head_bytes))
                granted = budget.take(want_tail)
                f.seek(size - granted)
                tail = f.read(granted) if granted else b""
                done = Read(head=head, tail=tail, skipped=size - len(head) - len(tail))
    except OSError as exc:
        return Read(problem=f"unreadable: {exc.strerror or exc}")
    sample = (done.head[:8192] + done.tail[-8192:])
    if _binary(sample):
        return Read(problem="not text (binary data)")
    last = done.tail or done.head
    done.partial_last_line = bool(last) and not last.endswith(b"\n")
    return done


def _binary(sample: bytes) -> bool:
    if not sample:
        return False
    if b"\0" in sample:
        return True
    text = sample.decode("utf-8", "replace")
    bad = text.count("\ufffd") + sum(1 for c in text if ord(c) < 32 and c not in "\n\r\t\x1b")
    return bad > max(8, len(text) // 20)


def lines_of(done: Read) -> list[str]:
    """The physical lines read (the tail's first, cut line dropped)."""
    head = done.head.decode("utf-8", "replace").splitlines()
    if not done.tail:
        return head
    tail = done.tail.decode("utf-8", "replace").splitlines()
    if done.skipped and tail:
        tail = tail[1:]  # it began somewhere inside a line
        if done.head and head:
            head = head[:-1] if not done.head.endswith(b"\n") else head
    return head + tail


def marked_lines(done: Read, markers: tuple[bytes, ...], pattern=None) -> list[str]:
    """Only the lines that hold one of `markers`, found without splitting the whole text.

    bytes.find runs at memory speed; a line is decoded only when it holds a marker. This
    is what keeps a 1 GiB log directory within seconds.
    """
    out: list[tuple[int, int, str]] = []
    for part, data in ((0, done.head), (1, done.tail)):
        if not data:
            continue
        spans = set()
        for marker in markers:
            start = 0
            while True:
                hit = data.find(marker, start)
                if hit < 0:
                    break
                begin = data.rfind(b"\n", 0, hit) + 1
                end = data.find(b"\n", hit)
                end = len(data) if end < 0 else end
                spans.add((begin, end))
                start = end + 1
        if pattern is not None:  # a compiled bytes regex: the lines it finds too
            for m in pattern.finditer(data):
                begin = data.rfind(b"\n", 0, m.start()) + 1
                end = data.find(b"\n", m.start())
                spans.add((begin, len(data) if end < 0 else end))
        for begin, end in spans:
            if part == 1 and done.skipped and begin == 0:
                continue  # the tail's first, cut line
            out.append((part, begin, data[begin:end].decode("utf-8", "replace")))
    out.sort()
    return [text for _, _, text in out]
