"""`rldoctor collect --bundle FILE.tar.gz`: gather through Ray, redact, write, in that order.

1. Reserve the target (refuse an existing file without --force, an unwritable folder)
   before spending any time on the cluster.
2. Take the snapshot with the bundle's Gatherer as an extra (logs, stacks, host facts,
   Tune results while the probes are up), then diagnose it: the report of the same run.
   Through the dashboard address the job inside the cluster runs that Gatherer and sends
   the items back in its output (rldoctor.dashboard.bundle, rldoctor.job.bundle).
3. Redact everything (and obfuscate, with --obfuscate), fit the size cap by cutting the
   largest logs from the front, write the manifest, and rename the archive into place.
Progress goes to stderr, line by line: which node, which item.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from rldoctor.bundle import DEFAULT_MAX_BYTES, MANIFEST
from rldoctor.bundle.manifest import Item
from rldoctor.redact import REDACTION_KINDS

_MANIFEST_RESERVE = 64 * 1024
_PER_ITEM_RESERVE = 600


class Progress:
    """Lines on the terminal's stderr, even while Ray's own output is sent to a log."""

    def __init__(self, stream=None):
        self._lock = threading.Lock()
        if stream is not None:
            self._out = stream
        else:
            self._out = os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1)

    def __call__(self, text: str) -> None:
        from rldoctor.redact import redact

        with self._lock:
            try:
                self._out.write(f"rldoctor: bundle: {redact(text)}\n")
                self._out.flush()
            except (OSError, ValueError):
                pass


def _top_folder(doc: dict) -> str:
    stamp = "".join(c for c in (doc.get("created_at") or "")[:19] if c.isdigit())
    return f"rldoctor-bundle-{stamp[:8]}T{stamp[8:]}Z" if len(stamp) == 14 else "rldoctor-bundle"


def write_bundle(address: str | None, path: str, timeout_s: float, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 obfuscate: bool = False, force: bool = False, progress=None, diagnosis=None) -> dict:
    """Collect and write the bundle at `path`; returns a summary (file, bytes, nodes, items).

    `diagnosis` (rldoctor.engine.pipeline.Diagnosis, default: every check, the mutes of the
    team's rldoctor.toml) makes the bundle's report, as `check --from` the bundle would."""
    from rldoctor.bundle import assemble
    from rldoctor.bundle.obfuscate import map_path
    from rldoctor.bundle.target import BundleFile
    from rldoctor.acquire import bundle_gatherer, take_snapshot
    from rldoctor.engine.pipeline import Diagnosis

    started = time.monotonic()
    if diagnosis is None:
        diagnosis = Diagnosis.from_options()  # a bad ignore file: exit 2 before the cluster
    say = progress or Progress()
    the_map = map_path(os.path.abspath(path)) if obfuscate else None
    target = BundleFile(path, force=force, extra_paths=(the_map,) if the_map else ())
    try:
        gatherer = bundle_gatherer(address, progress=say, max_bytes=max_bytes)
        say(f"taking the snapshot of the cluster at {address or os.environ.get('RAY_ADDRESS') or 'auto'}")
        snap_started = time.perf_counter()
        doc = take_snapshot(address, timeout_s=timeout_s, extras=(gatherer,), leave=True)
        snapshot_item = Item("snapshot", "snapshot", file="snapshot.json",
                             duration_s=round(time.perf_counter() - snap_started, 3))
        failed = sorted(k for k, v in (doc.get("collectors") or {}).items()
                        if v.get("status") in ("error", "timeout"))
        if failed:
            snapshot_item.details["sections_failed"] = failed
        items = [snapshot_item] + gatherer.items + assemble.job_log_items(doc)
        if not gatherer.ran:
            through_dashboard = (doc.get("source") or {}).get("path") == "dashboard"
            reason = getattr(gatherer, "reason", None)
            items.append(Item("cluster", "logs, stacks and host facts").fail(
                f"not collected: {reason}" if reason and through_dashboard else
                "not collected: rldoctor went through the cluster's dashboard after Ray refused "
                "it as a driver, and that path gathers the snapshot only; give the dashboard's "
                "http:// address to --address for logs and stacks" if through_dashboard else
                "not collected: the driver could not join the cluster"))
        size = _finish(doc, items, gatherer, target, top_path=path, max_bytes=max_bytes,
                       obfuscate=obfuscate, the_map=the_map, started=started, say=say,
                       diagnosis=diagnosis)
    except BaseException:
        target.abandon()
        if getattr(target, "wrote_map", False):
            os.unlink(the_map)
        raise
    ok = sum(1 for i in items if i.status == "ok")
    return {"file": path, "bytes": size, "nodes": len(doc.get("nodes") or []),
            "items_ok": ok, "items_failed": len(items) - ok, "seconds": time.monotonic() - started,
            "map": the_map, "top": _top_folder(doc)}


def _finish(doc: dict, items: list, gatherer, target, *, top_path: str, max_bytes: int,
            obfuscate: bool, the_map, started: float, say, diagnosis) -> int:
    """Diagnose the snapshot, redact (and obfuscate) every member, fit, write; the size."""
    from rldoctor.bundle import assemble
    from rldoctor.bundle.manifest import manifest
    from rldoctor.bundle.obfuscate import Obfuscator
    from rldoctor.bundle.writer import Member, fit
    from rldoctor.redact import Redactor
    from rldoctor.snapshot import Snapshot

    path = top_path
    say(f"snapshot of {len(doc.get('nodes') or [])} node(s); diagnosing")
    report = diagnosis.run(Snapshot(doc), dict(doc.get("source") or {}))
    items += [Item("report", "report (JSON)", file="report.json"),
              Item("report", "report (Markdown)", file="report.md")]

    redactor = Redactor()
    assemble.learn_secrets(redactor, doc, items, gatherer.secret_sources)
    top = _top_folder(doc)
    members = [assemble.snapshot_member(doc, redactor)]
    members += assemble.report_members(report, doc, items, top, os.path.basename(path), redactor)
    members += assemble.item_members(items, redactor)
    obfuscator = Obfuscator(assemble.host_names(doc)) if obfuscate else None
    if obfuscator:
        assemble.obfuscate(members, obfuscator)
    fit(members, max_bytes, reserve=_MANIFEST_RESERVE + _PER_ITEM_RESERVE * len(items))
    cut = {m.path: m.cut_bytes for m in members if m.cut_bytes}
    for item in items:
        key = obfuscator.text(item.file) if (obfuscator and item.file) else item.file
        if key in cut:
            item.details["cut_to_fit_bytes"] = cut[key]
    sizes = {m.path: len(m.data) for m in members}
    if obfuscator:  # items name their files as they were before obfuscation
        sizes.update({i.file: sizes.get(obfuscator.text(i.file)) for i in items if i.file})
    counts = {kind: redactor.counts.get(kind, 0) for kind in REDACTION_KINDS}
    counts.update(redactor.counts)
    for kind, n in (getattr(gatherer, "redacted", None) or {}).items():
        counts[kind] = counts.get(kind, 0) + n  # masked inside the cluster, before printing
    notes = list(doc.get("notes") or [])
    if obfuscator:
        notes.append("IP addresses and host names are replaced by stand-ins; the map is "
                     "in a private file beside the bundle, not in it")
    record = manifest(doc, items, sizes, duration_s=time.monotonic() - started,
                      max_bytes=max_bytes, obfuscated=bool(obfuscator), redacted=counts,
                      notes=notes)
    record = redactor.data(record)
    record["redacted"] = counts  # counts only, never values: not for the redactor's eyes
    members.insert(0, Member(MANIFEST, assemble._json_bytes(record)))
    if obfuscator:
        assemble.obfuscate(members[:1], obfuscator)
        obfuscator.write_map(the_map)
        target.wrote_map = True
    return target.write(top, members)


def write_bundle_from_logs(directory: str, path: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
                           obfuscate: bool = False, force: bool = False, progress=None,
                           window_s: float | None = None, diagnosis=None) -> dict:
    """The same bundle from a dead cluster's session directories (rldoctor.inputs.logdir): the
    snapshot read from the logs, its report, and the tails of the logs that tell the story
    (GCS, raylets, job drivers and supervisors, the workers of failed jobs)."""
    from rldoctor.bundle.obfuscate import map_path
    from rldoctor.bundle.target import BundleFile
    from rldoctor.inputs.logdir import read_logs
    from rldoctor.inputs.logdir.bundle_items import LogItems

    from rldoctor.engine.pipeline import Diagnosis

    started = time.monotonic()
    if diagnosis is None:
        diagnosis = Diagnosis.from_options()  # a bad ignore file: exit 2 before any reading
    say = progress or Progress()
    the_map = map_path(os.path.abspath(path)) if obfuscate else None
    target = BundleFile(path, force=force, extra_paths=(the_map,) if the_map else ())
    try:
        say(f"reading the logs in {directory}")
        snap_started = time.perf_counter()
        doc = read_logs(directory, window_s=window_s)
        snapshot_item = Item("snapshot", "snapshot", file="snapshot.json",
                             duration_s=round(time.perf_counter() - snap_started, 3))
        gatherer = LogItems(doc, directory)
        items = [snapshot_item] + gatherer.items
        size = _finish(doc, items, gatherer, target, top_path=path, max_bytes=max_bytes,
                       obfuscate=obfuscate, the_map=the_map, started=started, say=say,
                       diagnosis=diagnosis)
    except BaseException:
        target.abandon()
        if getattr(target, "wrote_map", False):
            os.unlink(the_map)
        raise
    ok = sum(1 for i in items if i.status == "ok")
    return {"file": path, "bytes": size, "nodes": len(doc.get("nodes") or []),
            "items_ok": ok, "items_failed": len(items) - ok, "seconds": time.monotonic() - started,
            "map": the_map, "top": _top_folder(doc)}
