"""Reading a bundle back for `rldoctor check --from BUNDLE.tar.gz`, safely and without ray.

Nothing is ever extracted to disk: the archive is walked once, every member is checked
(one top folder; no absolute path, no `..`, no links or devices; bounded count and size)
and only manifest.json and snapshot.json are read, into memory. A bundle that fails any
check is refused as a whole with one line (exit 3): corrupt or truncated, not an rldoctor
bundle, a newer bundle schema than this rldoctor knows, or a member that would land
outside the bundle (path traversal).
"""

from __future__ import annotations

import gzip
import re
import tarfile
import zlib
from pathlib import PurePosixPath

from rldoctor.bundle import MANIFEST, SCHEMA, SCHEMA_MAJOR, SNAPSHOT
from rldoctor import jsonread
from rldoctor.errors import Undiagnosable
from rldoctor.shape import NUM, STR, List, Obj, One, mismatch
from rldoctor.words import first_text_line

GZIP_MAGIC = b"\x1f\x8b"
MAX_MEMBERS = 100_000
MAX_UNPACKED_BYTES = 4 * 10**9
MAX_JSON_BYTES = 512 * 10**6
_SCHEMA_RE = re.compile(r"^rldoctor\.bundle/v(\d+)(?:\.\d+)?$")


def is_bundle(path) -> bool:
    """A gzip file (what a bundle is); JSON snapshots start with `{`."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == GZIP_MAGIC
    except OSError:
        return False


def _unsafe(member: tarfile.TarInfo) -> str | None:
    name = member.name
    parts = PurePosixPath(name).parts
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return "has an absolute path"
    if ".." in parts or "\\" in name:
        return "points outside the bundle (..)"
    if member.issym() or member.islnk():
        return "is a link"
    if not (member.isfile() or member.isdir()):
        return "is not a regular file"
    return None


def read(path, fileobj=None) -> tuple[dict, dict, str, list[str]]:
    """(manifest, snapshot document, top folder, member names) of the bundle at `path` (or in
    `fileobj`, the bytes of one read from standard input)."""
    origin = str(path)
    wanted: dict[str, bytes] = {}
    names: list[str] = []
    top = None
    unpacked = 0
    try:
        with (tarfile.open(fileobj=fileobj, mode="r:gz") if fileobj is not None
              else tarfile.open(path, mode="r:gz")) as tar:
            for member in tar:
                why = _unsafe(member)
                if why:
                    raise Undiagnosable(f"{origin}: refusing the bundle: member {member.name!r} "
                                        f"{why}; nothing was extracted")
                first = PurePosixPath(member.name).parts[0] if member.name.strip("/") else ""
                if top is None:
                    top = first
                elif first != top:
                    raise Undiagnosable(f"{origin}: not an rldoctor bundle (more than one top "
                                        f"folder: {top!r}, {first!r})")
                names.append(member.name)
                unpacked += member.size
                if len(names) > MAX_MEMBERS or unpacked > MAX_UNPACKED_BYTES:
                    raise Undiagnosable(f"{origin}: refusing the bundle: more than "
                                        f"{MAX_MEMBERS} members or {MAX_UNPACKED_BYTES // 10**9} GB")
                inner = "/".join(PurePosixPath(member.name).parts[1:])
                if member.isfile() and inner in (MANIFEST, SNAPSHOT):
                    if member.size > MAX_JSON_BYTES:
                        raise Undiagnosable(f"{origin}: refusing the bundle: {inner} is "
                                            f"{member.size / 1e6:.0f} MB")
                    wanted[inner] = tar.extractfile(member).read()
    except Undiagnosable:
        raise
    except (tarfile.ReadError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise Undiagnosable(f"{origin}: the bundle is corrupt or truncated ({_reason(exc)})") from None
    except OSError as exc:
        raise Undiagnosable(f"{origin}: cannot read: {exc.strerror or exc}") from None
    if not names:
        raise Undiagnosable(f"{origin}: the bundle is empty")
    if MANIFEST not in wanted:
        raise Undiagnosable(f"{origin}: not an rldoctor bundle (no {top}/{MANIFEST}); write one "
                            "with `rldoctor collect --bundle FILE.tar.gz`")
    manifest = _json(wanted[MANIFEST], f"{origin}: {MANIFEST}")
    _check_schema(manifest, origin)
    if SNAPSHOT not in wanted:
        raise Undiagnosable(f"{origin}: the bundle has no {SNAPSHOT}; it cannot be diagnosed")
    return manifest, _json(wanted[SNAPSHOT], f"{origin}: {SNAPSHOT}"), top, names


def _reason(exc: BaseException) -> str:
    return first_text_line(exc, 200, type(exc).__name__)


def _json(data: bytes, origin: str):
    try:
        return jsonread.loads(data.decode("utf-8"))
    except jsonread.TooMuch as exc:
        raise Undiagnosable(f"{origin}: refusing it: {exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise Undiagnosable(f"{origin}: not valid JSON ({_reason(exc)})") from None


def _check_schema(manifest, origin: str) -> None:
    schema = manifest.get("schema") if isinstance(manifest, dict) else None
    match = _SCHEMA_RE.match(schema) if isinstance(schema, str) else None
    if not match:
        raise Undiagnosable(f"{origin}: not an rldoctor bundle (manifest schema {schema!r}; "
                            f"expected {SCHEMA!r})")
    if int(match.group(1)) > SCHEMA_MAJOR:
        raise Undiagnosable(f"{origin}: bundle schema {schema!r} is newer than this rldoctor "
                            f"understands ({SCHEMA!r}); upgrade rldoctor to read it")
    if int(match.group(1)) < 1:
        raise Undiagnosable(f"{origin}: unsupported bundle schema {schema!r}")


# What `index` reads of the manifest; a manifest of another shape points at nothing.
MANIFEST_ITEMS = List(Obj({"file": STR, "node_id": STR, "kind": STR, "status": STR,
                           "worker_id": STR, "pid": One(NUM, STR)}))


def index(manifest: dict, top: str, names: list[str], path) -> dict:
    """What the bundle holds per node, for pointing findings at it: {file, top, nodes}."""
    present = set(names)
    nodes: dict[str, dict] = {}
    items = manifest.get("items") or []
    if mismatch(items, MANIFEST_ITEMS, "items"):
        items = []
    for item in items:
        file = item.get("file")
        node_id = item.get("node_id")
        if item.get("status") != "ok" or not file or not node_id or f"{top}/{file}" not in present:
            continue
        node = nodes.setdefault(node_id, {"logs": [], "worker_logs": {}, "stacks": {}, "host": None})
        member = f"{top}/{file}"
        kind = item.get("kind")
        if kind == "log" and item.get("worker_id"):
            node["worker_logs"].setdefault(item["worker_id"], []).append(member)
        elif kind == "log":
            node["logs"].append(member)
        elif kind == "stack" and item.get("pid") is not None:
            node["stacks"][str(item["pid"])] = member
        elif kind == "host":
            node["host"] = member
    return {"file": str(path), "top": top, "nodes": nodes}


def document(path, fileobj=None) -> tuple[dict, str, dict]:
    """The bundle's snapshot document (not yet validated: rldoctor.snapshot does that, as for a
    snapshot file), the origin its problems name, and the index of the bundle for `bundle`."""
    manifest, data, top, names = read(path, fileobj)
    return data, f"{path}: {SNAPSHOT}", index(manifest, top, names, path)
