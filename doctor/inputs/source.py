"""What a `check --from` input is, decided in one place, and the reader it goes to.

- `-`: standard input, lines pasted in a ticket (Ray's driver console included: each line's
  relay prefix `(raylet)`, `(raylet, ip=...)`, `(pid=gcs_server)`, `(pid=N, ip=...)`,
  `(ClassName pid=N, ip=...)` says which process wrote it);
- a snapshot (JSON with rldoctor's `schema`) or a bundle (a tar.gz holding manifest.json):
  rldoctor.snapshot / rldoctor.bundle.reader;
- a training's results (Tune's result.json, or a directory of them): rldoctor.inputs.runs;
- a tarball of logs (.tar, .tar.gz, .tgz): its regular members read in memory, never
  extracted;
- a session directory, several nodes' session directories, a `logs/` folder, a folder of
  `kubectl logs` outputs or any log files, or one log file: rldoctor.inputs.logdir.

Every read is bounded (regular files only, size caps) and nothing is written where it reads.
Standard library only, never ray.
"""

from __future__ import annotations

import gzip
import os
import re
import sys
import tarfile
import zlib
from pathlib import PurePosixPath

from rldoctor.errors import Undiagnosable

GZIP_MAGIC = b"\x1f\x8b"
STDIN_MAX_BYTES = 64 * 2**20
TAR_MAX_MEMBERS = 20_000
TAR_MAX_MEMBER_BYTES = 64 * 2**20  # a member larger is read from its end
TAR_MAX_TOTAL_BYTES = 512 * 2**20
GZ_MAX_BYTES = 256 * 2**20

# The relay prefix Ray's driver puts on lines it prints for other processes.
_RELAY = re.compile(r"^(?:\x1b\[[0-9;]*m)*\((?P<who>[^()\s,]*?)(?:\s?pid=(?P<pid>[\w]+))?"
                    r"(?:,\s?ip=(?P<ip>[\d.:a-fA-F]+))?\)(?:\x1b\[[0-9;]*m)* ?")
_RELAY_NAMES = ("raylet", "gcs_server", "autoscaler", "monitor", "dashboard", "dashboard_agent")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")


STDIN = ("-", "/dev/stdin")


def kind_of(path: str) -> str:
    """One of: stdin, snapshot, bundle, runs, log-tarball, log-gz, logs."""
    if path in STDIN:
        return "stdin"
    if not os.path.exists(path):
        raise Undiagnosable(f"{path}: no such file or directory")
    if os.path.isdir(path):
        if _holds_results(path):
            return "runs"
        return "logs"
    if not os.path.isfile(path):
        raise Undiagnosable(f"{path}: not a regular file or a directory")
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise Undiagnosable(f"{path}: cannot read: {exc.strerror or exc}") from None
    name = os.path.basename(path)
    if head.startswith(GZIP_MAGIC):
        return _gzip_kind(path)
    if len(head) > 262 and head[257:262] == b"ustar":
        return "log-tarball"
    stripped = head.lstrip()
    if name in ("result.json", "progress.csv") or (
            stripped.startswith(b"{") and b'"training_iteration"' in head):
        return "runs"
    if _is_snapshot(head):
        return "snapshot"
    if name.endswith(".json") and not name.startswith("event_"):
        return "snapshot"  # whatever it holds: its reader says what is wrong with it
    return "logs"


def _is_snapshot(head: bytes) -> bool:
    return head.lstrip().startswith(b"{") and b'"schema"' in head and b"rldoctor" in head


def _holds_results(path: str) -> bool:
    """A trial or experiment directory (Tune's result.json), not a Ray session's."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    if "result.json" in names:
        return True
    if any(n.startswith(("session_", "logs")) or n.endswith((".out", ".err", ".log"))
           for n in names):
        return False
    for n in names[:200]:
        sub = os.path.join(path, n)
        if os.path.isdir(sub) and os.path.isfile(os.path.join(sub, "result.json")):
            return True
    return False


def _gzip_kind(path: str) -> str:
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            for i, member in enumerate(tar):
                parts = PurePosixPath(member.name).parts
                if parts and parts[-1] == "manifest.json" and len(parts) == 2:
                    return "bundle"
                if i > 50:
                    break
        return "log-tarball"
    except (tarfile.ReadError, EOFError, zlib.error, gzip.BadGzipFile):
        return "log-gz"
    except OSError as exc:
        raise Undiagnosable(f"{path}: cannot read: {exc.strerror or exc}") from None


# -- the readers -------------------------------------------------------------------------

def read(path: str, window_s=None, read_runs=None, stdin: bytes | None = None) -> tuple:
    """(snapshot, source, runs or None) of the input at `path`."""
    from rldoctor import snapshot as snapshots

    kind = kind_of(path)
    if kind == "stdin":  # read once: a snapshot or a bundle piped in, or pasted log lines
        stdin = _stdin() if stdin is None else stdin[-STDIN_MAX_BYTES:]
        if stdin.startswith(GZIP_MAGIC) or _is_snapshot(stdin[:4096]):
            snap = snapshots.from_bytes(stdin, str(path))
            return snap, _recorded(snap, path, stdin.startswith(GZIP_MAGIC)), None
    if kind in ("snapshot", "bundle"):
        snap = snapshots.load(path)
        if kind == "bundle":
            bundle_log_lines(path, snap)
        return snap, _recorded(snap, path, kind == "bundle"), None
    if kind == "runs":
        from rldoctor.inputs.runs import read_runs as reader

        runs = (read_runs or reader)([path])
        snap = snapshots.validate(snapshots.new_document(
            {"kind": "runs", "file": str(path), "runs": [str(path)]}), "runs")
        return snap, dict(snap.get("source") or {}), runs
    from rldoctor.inputs.logdir import read_logs

    if kind == "logs":
        input_kind = None
        doc = read_logs(path, window_s=window_s)
    else:
        sessions, input_kind = _virtual(path, kind, stdin)
        doc = read_logs(path if path not in STDIN else "standard input", window_s=window_s,
                        sessions=sessions, input_kind=input_kind)
    snap = snapshots.validate(doc, str(path))
    return snap, dict(snap.get("source") or {}), None


def _recorded(snap, path: str, bundle: bool) -> dict:
    """The source of a report on a recorded snapshot; `form` says whether it came in a bundle
    (the report's title names it so)."""
    return {"kind": "snapshot", "file": str(path), "form": "bundle" if bundle else "snapshot",
            "created_at": snap.get("created_at", ""),
            "recorded_from": (snap.get("source") or {}).get("address")}


def bundle_log_lines(path: str, snap) -> None:
    """A bundle of a live cluster carries its nodes' logs: read them against the catalogue of
    Ray's lines too (in memory), each as its node's (the manifest says which), unless the
    snapshot already has them from logs (a bundle made from logs); they replace the lines the
    probes read live (the tails of the same nodes' logs: the bundle holds more of them)."""
    from rldoctor.inputs.logdir import add_log_lines
    from rldoctor.inputs.logdir import files as F
    from rldoctor.inputs.logdir.build import Facts
    from rldoctor.inputs.logdir.scan import scan
    from rldoctor.redact import Redactor

    index = snap.data.get("bundle") or {}
    wanted: dict[str, str] = {}
    for node_id, node in (index.get("nodes") or {}).items():
        for member in node.get("logs") or []:
            wanted[member] = node_id
        for members in (node.get("worker_logs") or {}).values():
            for member in members:
                wanted[member] = node_id
    if not wanted or (snap.field("collectors", "log_lines") or {}).get("from") == "logs":
        return
    by_node: dict[str, list] = {}
    total = 0
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            for member in tar:
                node_id = wanted.get(member.name)
                if node_id is None or not member.isfile() or total >= TAR_MAX_TOTAL_BYTES:
                    continue
                data = _member_tail(tar, member, total)
                if data is None:
                    continue
                total += len(data)
                name = PurePosixPath(member.name).name
                kind, meta = F.kind_of(name)
                by_node.setdefault(node_id, []).append(
                    F.LogFile(member.name, member.name, kind, dict(meta, old=False), len(data), data))
    except (tarfile.ReadError, EOFError, zlib.error, gzip.BadGzipFile, OSError):
        return  # the bundle's own reader already vouched for it; its logs are a bonus
    facts = Facts(Redactor())
    for node in snap.nodes or []:
        if node.get("node_id"):
            facts.node(node["node_id"])["ip"] = node.get("ip")
    sessions = [F.Session(f"bundle:{nid}", f"bundle:{nid}", "", logs) for nid, logs in by_node.items()]
    add_log_lines(snap.data, scan(sessions, facts, facts.r, {s.root: s.root[7:] for s in sessions}))


def _member_tail(tar, member, total: int) -> bytes | None:
    """A tarball member's bytes, its end when it is over the per-member cap or the room left
    under the total (`total` read so far); None when it holds no data to read."""
    f = tar.extractfile(member)
    if f is None:
        return None
    want = min(member.size, TAR_MAX_MEMBER_BYTES, TAR_MAX_TOTAL_BYTES - total)
    if member.size > want:
        f.seek(member.size - want)
    return f.read(want)


def _virtual(path: str, kind: str, stdin: bytes | None = None):
    from rldoctor.inputs.logdir import files as F

    if kind == "stdin":
        data = _stdin() if stdin is None else stdin[-STDIN_MAX_BYTES:]
        if not data.strip():
            raise Undiagnosable("-: standard input is empty: paste Ray's log lines, or pipe a "
                                "file (`rldoctor check --from - < raylet.err`)")
        return [F.Session("standard input", "standard input", "", console_files(data))], "standard input"
    if kind == "log-gz":
        data = _gunzip(path)
        name = os.path.basename(path)[:-3] if path.endswith(".gz") else os.path.basename(path)
        k, meta = F.kind_of(name)
        return [F.Session(path, path, "", [F.LogFile(path, name, k, dict(meta, old=False),
                                                    len(data), data)])], "gzipped log file"
    return _tar_sessions(path), "tarball of logs"


def _stdin() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise Undiagnosable("-: standard input cannot be read")
    try:
        data = stream.read(STDIN_MAX_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise Undiagnosable(f"-: cannot read standard input: {exc}") from None
    return data[-STDIN_MAX_BYTES:]


def _gunzip(path: str) -> bytes:
    try:
        with gzip.open(path, "rb") as f:
            return f.read(GZ_MAX_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise Undiagnosable(f"{path}: a corrupt or truncated gzip file ({exc})") from None


def console_files(data: bytes):
    """Pasted lines as files, one per process the relay prefixes name (the rest: `console`)."""
    from rldoctor.inputs.logdir import files as F

    groups: dict[tuple, list[str]] = {}
    for raw in data.decode("utf-8", "replace").splitlines():
        line = _REPEATED.sub("", raw)
        m = _RELAY.match(line)
        who = pid = ip = None
        if m and (m.group("pid") or m.group("who") in _RELAY_NAMES):
            who, pid, ip = m.group("who") or "", m.group("pid"), m.group("ip")
            line = line[m.end():]
        line = _ANSI.sub("", line)
        if who is None:
            key = ("console", None, None, None)
        elif who in ("raylet",) or pid == "raylet":
            key = ("console-raylet", None, None, ip)
        elif who == "gcs_server" or pid == "gcs_server":
            key = ("console-gcs", None, None, ip)
        else:
            key = ("console-worker", who or None, pid, ip)
        groups.setdefault(key, []).append(line)
    out = []
    for (kind, who, pid, ip), lines in groups.items():
        name = {"console": "pasted lines", "console-raylet": "(raylet)",
                "console-gcs": "(gcs_server)"}.get(kind) or f"({who + ' ' if who else ''}pid={pid})"
        if ip and kind != "console":
            name = name[:-1] + f", ip={ip})"
        meta = {"old": False}
        if pid and pid.isdigit():
            meta["pid"] = pid
        if ip:
            meta["ip"] = ip
        if who:
            meta["who"] = who
        text = ("\n".join(lines) + "\n").encode()
        out.append(F.LogFile(name, name, kind, meta, len(text), text))
    return out


def _tar_sessions(path: str):
    """A tarball's regular members, by folder, as sessions read in memory (never extracted)."""
    from rldoctor.inputs.logdir import files as F

    by_dir: dict[str, list] = {}
    total = 0
    try:
        with tarfile.open(path, mode="r:*") as tar:
            for i, member in enumerate(tar):
                if i >= TAR_MAX_MEMBERS:
                    break
                if not member.isfile():
                    continue  # links, devices, folders: never followed
                parts = PurePosixPath(member.name).parts
                if not parts or ".." in parts or member.name.startswith("/"):
                    continue
                name = parts[-1]
                kind, meta = F.kind_of(name)
                if kind == "other" and (name.endswith((".json", ".txt", ".csv", ".yaml", ".pid",
                                                       ".so", ".py", ".whl", ".zip"))
                                        or "_port_" in name):
                    continue
                if total >= TAR_MAX_TOTAL_BYTES:
                    break
                data = _member_tail(tar, member, total)
                if data is None:
                    continue
                if kind == "other" and not F.looks_like_ray("", data):
                    continue  # a file that holds nothing Ray writes
                total += len(data)
                folder = "/".join(parts[:-1])
                sub = parts[-2] if len(parts) > 1 else ""
                if sub in ("old", "events", "jobs"):
                    folder = "/".join(parts[:-2])
                by_dir.setdefault(folder, []).append(
                    F.LogFile(member.name, member.name, kind, dict(meta, old=sub == "old"),
                              len(data), data))
    except (tarfile.ReadError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise Undiagnosable(f"{path}: a corrupt or truncated tarball ({exc})") from None
    except OSError as exc:
        raise Undiagnosable(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not by_dir:
        raise Undiagnosable(f"{path}: not an rldoctor bundle (no manifest.json) and no Ray log "
                            "file in it: nothing to diagnose")
    sessions = []
    for folder, logs in sorted(by_dir.items()):
        parts = PurePosixPath(folder).parts
        session_name = next((p for p in reversed(parts) if p.startswith("session_")), "")
        sessions.append(F.Session(folder or ".", folder or ".", session_name,
                                  sorted(logs, key=lambda f: f.rel)))
    return sessions


def describe(kind: str) -> str:
    return {"stdin": "standard input", "snapshot": "snapshot", "bundle": "bundle",
            "runs": "training results", "log-tarball": "tarball of logs",
            "log-gz": "gzipped log file", "logs": "logs"}.get(kind, kind)

