"""The session: what rldoctor reads from a live cluster through Ray, section by section.

Ray is imported on the cluster side of the tree: here and in rldoctor.cluster (the driver's
collectors, the bundle's gatherer, smoke-train's driver), rldoctor.node (what runs on the
nodes) and rldoctor.job (the dashboard path's job); on the client only inside functions (the
watch's child process rldoctor.watch.gcs_child, cluster YAML in rldoctor.lint.cluster_yaml,
`--target` in rldoctor.inputs.targets); never by the checks, the reports or `check --from`
(tests/test_layering.py).

`collect_snapshot(address)` joins the cluster as a short-lived driver in its own
namespace, fills one snapshot document section by section, and leaves. A
section whose collector fails is left out and `collectors[<section>]` records
why; the checks that need it are then skipped or errored, and the rest run.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from typing import Callable

from rldoctor.cluster import connect
from rldoctor.errors import Undiagnosable, first_line
from rldoctor.snapshot_document import NOT_FROM_A_LIVE_CLUSTER, new_document

DEFAULT_TIMEOUT_S = 30.0


class Budget:
    """A deadline shared by the collectors, so the whole run stays bounded."""

    def __init__(self, total_s: float):
        self.started = time.monotonic()
        self.deadline = self.started + total_s

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def left(self, cap: float) -> float:
        return max(0.5, min(cap, self.deadline - time.monotonic()))


@contextlib.contextmanager
def quiet_ray():
    """Send what Ray's C++ core and threads print (to stdout and stderr) to a log file.

    Ray relays cluster events such as "(raylet) The node ... has been marked dead" to
    the driver's stdout; left alone they would corrupt `--format json`. The log is
    deleted afterwards unless RLDOCTOR_RAY_LOG names a file to keep it in.
    """
    import sys

    keep = os.environ.get("RLDOCTOR_RAY_LOG")
    log = open(keep, "a") if keep else tempfile.NamedTemporaryFile(
        prefix="rldoctor-ray-", suffix=".log", delete=True)
    if not keep:
        connect.tell("file", log.name)  # removed by the join's time keeper if it must end us
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    for fd in saved:
        os.dup2(log.fileno(), fd)
    try:
        yield log.name
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        log.close()


def collect_snapshot(address: str | None, timeout_s: float = DEFAULT_TIMEOUT_S,
                     extras: tuple[Callable[..., None], ...] = (), leave: bool = True,
                     on_refused=None) -> dict:
    """One snapshot of the cluster at `address`, within `timeout_s`.

    Each of `extras` is called as `extra(conn, budget, fleet, doc)` once every section is
    collected and while the probe fleet is still up (the incident bundle reads logs and
    stacks through it); an extra that raises costs only what it would have added.
    `leave=False` skips ray.shutdown() (a few hundred ms) for a caller that exits right
    after: the probes are killed either way, and the driver's end ends its job.
    """
    with quiet_ray() as ray_log:
        session = LiveSession(address, ray_log, on_refused=on_refused)
        try:
            return session.snapshot(timeout_s, extras)
        finally:
            session.close(leave=leave)


class LiveSession:
    """A driver joined to one cluster and its probe fleet, for one snapshot or many.

    `rldoctor check` takes one snapshot and closes; `rldoctor watch` keeps the session
    (the connection and one probe per node) from round to round, so a round does not pay
    for joining and starting probes again. `close()` kills every probe.
    """

    def __init__(self, address: str | None, ray_log: str | None = None, on_refused=None):
        from rldoctor.cluster.fleet import Fleet

        # Called as on_refused(gcs_address, budget, connect.CannotJoin) when Ray would not
        # take this driver (another Ray or Python, or not one of the cluster's nodes); a snapshot it returns is used as is (the client's dashboard fallback,
        # rldoctor.acquire.after_refusal; never set inside the cluster).
        self.on_refused = on_refused
        self.resolved = connect.resolve(address)
        self.ray_log = ray_log
        self.conn = None
        self.fleet = Fleet()

    def snapshot(self, timeout_s: float = DEFAULT_TIMEOUT_S,
                 extras: tuple[Callable[..., None], ...] = ()) -> dict:
        """One snapshot (see collect_snapshot); joins the cluster on the first call."""
        budget = Budget(timeout_s)
        doc = new_document({"kind": "live", "address": self.resolved})
        joined_now = self.conn is None
        if joined_now:
            try:
                self.conn = connect.join(self.resolved,
                                         timeout_s=budget.left(connect.CONNECT_TIMEOUT_S),
                                         ray_log=self.ray_log)
            except connect.CannotJoin as exc:  # another Ray or Python, or not a node
                connect.tell("settled")
                through = self.on_refused(self.resolved, budget, exc) if self.on_refused else None
                if through is not None:  # the collectors run inside, with the cluster's Ray
                    return through
                raise Undiagnosable(exc.one_line()) from None
        connect.tell("settled")  # joined: the time keeper waits for the end (rldoctor.joinwatch)
        doc.setdefault("notes", []).extend(self.conn.auth.notes)
        timing = doc["timing"] = {"joined_s": budget.elapsed(), "joined_now": joined_now}
        self._collect(doc, budget, timing, extras)
        others = (doc.get("actors") or {}).get("other_rldoctor_runs")
        if others:
            doc.setdefault("notes", []).append(
                f"{len(others)} other rldoctor run(s) were probing this cluster at the same time "
                f"({', '.join(others)}); this run went on beside them, and any node that looked "
                "slow was measured again, interleaved with a healthy peer, before being reported")
        for section, reason in NOT_FROM_A_LIVE_CLUSTER.items():
            doc["collectors"].setdefault(section, {"status": "unavailable", "reason": reason})
        return doc

    def _collect(self, doc: dict, budget: Budget, timing: dict, extras) -> None:
        """Every section the modules of rldoctor.cluster declare (rldoctor.cluster.sections),
        each started as soon as what it needs is read, then the extras. When every extra names
        the sections it reads (`sections`: the preflight's), only those and what they need."""
        from rldoctor.cluster import sections

        ctx = sections.Context(self.conn, budget, self.fleet, doc, timing)
        wanted = [getattr(extra, "sections", None) for extra in extras]
        chosen = sections.found()
        if wanted and all(wanted):
            chosen = sections.needed_for(chosen, [name for names in wanted for name in names])
        sections.run(ctx, chosen)
        timing["probed_s"] = max((ended for name, ended in timing.get("sections_ended_s", {}).items()
                                  if name in ("probes", "reach", "network", "probe_followup")),
                                 default=budget.elapsed())
        timing["collected_s"] = budget.elapsed()
        for extra in extras:
            try:
                extra(self.conn, budget, self.fleet, doc)
            except Exception as exc:
                doc.setdefault("notes", []).append(
                    f"{getattr(extra, '__name__', 'extra')} failed: {first_line(exc)}")

    def close(self, leave: bool = True) -> None:
        """Kill every probe; with `leave`, also disconnect (ray.shutdown)."""
        if self.conn is None:
            return
        try:
            self.fleet.shutdown()
        finally:
            if leave:
                connect.leave()

