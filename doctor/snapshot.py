"""The snapshot: one JSON document holding everything the collectors saw.

Checks read only from a Snapshot, so the same check runs on a live cluster, on a
recorded file and in tests on fixtures. A section a collector could not fill is
absent, and `collectors[<section>]` says why.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import sys
from typing import Any

from rldoctor import jsonread, node_state, words
from rldoctor.errors import Undiagnosable

from rldoctor.snapshot_document import (  # noqa: F401 (read from here on the client)
    NOT_FROM_A_LIVE_CLUSTER, SCHEMA, SCHEMA_MAJOR, SCHEMA_NAME, new_document)
_SCHEMA_RE = re.compile(r"^rldoctor\.snapshot/v(\d+)(?:\.\d+)?$")
GZIP_MAGIC = b"\x1f\x8b"


def dig(value: Any, *path: Any, default: Any = None) -> Any:
    """The value down `path` inside nested dicts (`dig(actor, "death_cause", "reason")`), or
    `default` where a step is missing, None or not a dict: how a check reads inside one record
    of a view (a node, an actor, a training) instead of a `(x or {}).get(y)` chain."""
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return default if value is None else value


class Snapshot:
    """Read-only view over a snapshot document."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self._nodes_by_id: dict[str, dict[str, Any]] | None = None

    def has(self, section: str) -> bool:
        return self.data.get(section) is not None

    def __getitem__(self, section: str) -> Any:
        return self.data[section]

    def get(self, section: str, default: Any = None) -> Any:
        value = self.data.get(section)
        return default if value is None else value

    def field(self, section: str, *path: str) -> Any:
        """A value inside a section (`snap.field("cluster", "ray_version")`), None where any step
        is missing: the one way a check reads past a section's top, instead of a
        `(snap.get(x) or {}).get(y)` chain."""
        return dig(self.data, section, *path)

    def collector(self, section: str) -> dict[str, Any]:
        """What the collector of `section` reported: status, error, duration_s."""
        return (self.data.get("collectors") or {}).get(section) or {}

    # Convenience views used by many checks.
    @property
    def nodes(self) -> list[dict[str, Any]]:
        return list(self.data.get("nodes") or [])

    @property
    def alive_nodes(self) -> list[dict[str, Any]]:
        return [n for n in self.nodes if n.get("alive")]

    def node(self, node_id: str) -> dict[str, Any] | None:
        if self._nodes_by_id is None:  # checks ask often; a cluster can have thousands of nodes
            self._nodes_by_id = {n.get("node_id"): n for n in self.nodes}
        return self._nodes_by_id.get(node_id)

    # Per-node views: what the snapshot knows of one node, {} (or None) when it knows nothing.
    # Checks ask these instead of digging `(snap.get(x) or {}).get(y) or {}` chains.
    def _of_node(self, section: str, key: str | None, node_id: str | None) -> dict[str, Any]:
        table = self.data.get(section) or {}
        if key is not None:
            table = table.get(key) or {} if isinstance(table, dict) else {}
        return (table.get(node_id) if isinstance(table, dict) else None) or {}

    def host(self, node_id: str | None) -> dict[str, Any]:
        """The node's host facts (`hosts.<id>`: memory, disk, cgroup, ray_logs, listening, ...)."""
        return self._of_node("hosts", None, node_id)

    def probe_failure(self, node_id: str | None) -> dict[str, Any]:
        """Why rldoctor's probe on the node failed (`versions.failed.<id>`: kind, error,
        ray_logs, raylet); {} when it answered."""
        return self._of_node("versions", "failed", node_id)

    def raylet_ping(self, node_id: str | None) -> dict[str, Any]:
        """The node's raylet ping (`control_plane.raylets.<id>`: ms, system_config, ...)."""
        return self._of_node("control_plane", "raylets", node_id)

    def store(self, node_id: str | None) -> dict[str, Any]:
        """The node's object store (`object_store.nodes.<id>`: store, spilled, ...)."""
        return self._of_node("object_store", "nodes", node_id)

    def network(self, node_id: str | None) -> dict[str, Any]:
        """The node's network figures (`network.nodes.<id>`: p50_ms, p95_ms, samples, ...)."""
        return self._of_node("network", "nodes", node_id)

    def log_signals(self, node_id: str | None) -> dict[str, Any]:
        """What the node's Ray logs said (`ray_logs.signals`): read through the dashboard when
        rldoctor's probe could not start there (its failure carries them), else by the probe."""
        outside = (self.probe_failure(node_id).get("ray_logs") or {}).get("signals")
        if outside is not None:
            return outside
        return (self.host(node_id).get("ray_logs") or {}).get("signals") or {}

    def label(self, node_id: str | None, *more: str, head: bool = False) -> str:
        """How a message names the node: 'node 1a2b3c4d5e6f (10.0.0.2)' (rldoctor.words);
        `head=True` adds 'head' on the head node, `more` adds words inside the parentheses."""
        return words.node_of(self.node(node_id), node_id, *more, head=head)

    def state(self, node_id: str | None) -> node_state.NodeState | None:
        """The node's state (rldoctor.node_state.of); None when the snapshot does not list it."""
        node = self.node(node_id)
        return None if node is None else node_state.of(self, node)


def validate(data: Any, origin: str) -> Snapshot:
    """Accept a v1 snapshot; refuse anything else with one clear line."""
    if not isinstance(data, dict):
        raise Undiagnosable(f"{origin}: not an rldoctor snapshot (top level is not a JSON object)")
    schema = data.get("schema")
    if not isinstance(schema, str):
        raise Undiagnosable(
            f"{origin}: not an rldoctor snapshot (no \"schema\" field; expected {SCHEMA!r}; "
            "record one with `rldoctor collect --output FILE`)"
        )
    match = _SCHEMA_RE.match(schema)
    if not match:
        raise Undiagnosable(f"{origin}: unknown schema {schema!r}; expected {SCHEMA!r}")
    major = int(match.group(1))
    if major > SCHEMA_MAJOR:
        raise Undiagnosable(
            f"{origin}: snapshot schema {schema!r} is newer than this rldoctor understands "
            f"({SCHEMA!r}); upgrade rldoctor to read it"
        )
    if major < 1:
        raise Undiagnosable(f"{origin}: unsupported snapshot schema {schema!r}")
    return Snapshot(data)


MAX_SNAPSHOT_BYTES = 512 * 10**6  # a bundle's snapshot.json has the same cap (bundle.reader)
_CHUNK = 1 << 20
_STDIN = ("-", "/dev/stdin")


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO or pipe"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _read_bounded(stream, origin: str) -> bytes:
    """All of `stream`, read once, refused past MAX_SNAPSHOT_BYTES or when its first bytes are
    neither a bundle nor text (/dev/zero, /dev/urandom end here at once)."""
    chunks, total = [], 0
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        if not chunks and not chunk.startswith(GZIP_MAGIC):
            if b"\x00" in chunk[:8192]:
                raise Undiagnosable(f"{origin}: not an rldoctor snapshot (binary data)")
            try:
                chunk[:8192].decode("utf-8")
            except UnicodeDecodeError as exc:
                if exc.start < min(len(chunk), 8192) - 4:  # not a character cut at the edge
                    raise Undiagnosable(f"{origin}: not an rldoctor snapshot (not UTF-8 text)") \
                        from None
        chunks.append(chunk)
        total += len(chunk)
        if total > MAX_SNAPSHOT_BYTES:
            raise Undiagnosable(f"{origin}: refusing a snapshot larger than "
                                f"{MAX_SNAPSHOT_BYTES // 10**6} MB")
    return b"".join(chunks)


def read_input(path: str | os.PathLike) -> bytes | None:
    """The bytes of the snapshot at `path`, read once (`-` or /dev/stdin: standard input);
    None for a regular file that is a bundle (its reader opens it itself). Only regular files
    and standard input are read, each bounded in size: a FIFO, a device or a socket is refused
    in one line, never waited on."""
    origin = str(path)
    if origin in _STDIN:
        stream = sys.stdin.buffer
        if stream.isatty():
            raise Undiagnosable(f"{origin}: standard input is a terminal; pipe a snapshot or a "
                                "bundle into it (rldoctor check --from - < snapshot.json)")
        return _read_bounded(stream, origin)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise Undiagnosable(f"{origin}: no such file") from None
    except OSError as exc:
        raise Undiagnosable(f"{origin}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise Undiagnosable(f"{origin}: is a directory, not a snapshot file")
    if not stat.S_ISREG(info.st_mode):
        raise Undiagnosable(f"{origin}: {_file_kind(info.st_mode)}, not a snapshot file; give a "
                            "snapshot or a bundle, or - to read one from standard input")
    if info.st_size > MAX_SNAPSHOT_BYTES:
        raise Undiagnosable(f"{origin}: refusing a snapshot of {info.st_size / 1e6:.0f} MB (at "
                            f"most {MAX_SNAPSHOT_BYTES // 10**6} MB)")
    from rldoctor.bundle import reader as bundles

    if bundles.is_bundle(path):
        return None
    try:
        with open(path, "rb") as handle:
            return _read_bounded(handle, origin)
    except OSError as exc:
        raise Undiagnosable(f"{origin}: cannot read: {exc.strerror or exc}") from None


def load(path: str | os.PathLike) -> Snapshot:
    """Read and validate a snapshot file (or an incident bundle); every failure is one line, exit 3.
    A section of the wrong shape is taken out as not collected (rldoctor.snapshot_shape)."""
    origin = str(path)
    return from_bytes(read_input(path), origin)


def from_bytes(data: bytes | None, origin: str) -> Snapshot:
    """The snapshot (or bundle) in `data`, read from `origin`; None: the bundle file `origin`."""
    from rldoctor.bundle import reader as bundles

    if data is None or data.startswith(GZIP_MAGIC):
        document, inner, index = bundles.document(origin, None if data is None else io.BytesIO(data))
        snap = _conformed(document, inner)
        snap.data["bundle"] = index
        return snap
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Undiagnosable(f"{origin}: cannot read: not UTF-8 text") from None
    try:
        document = jsonread.loads(text)
    except jsonread.TooMuch as exc:
        raise Undiagnosable(f"{origin}: refusing the snapshot: {exc}") from None
    except ValueError as exc:
        raise Undiagnosable(
            f"{origin}: not valid JSON ({jsonread.problem(exc)}); the file may be truncated"
        ) from None
    return _conformed(document, origin)


def _conformed(document, origin: str) -> Snapshot:
    """A v1 snapshot, a section of the wrong shape taken out as not collected."""
    from rldoctor.snapshot_shape import conform

    snap = validate(document, origin)
    conform(snap.data, origin)
    return snap


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"
