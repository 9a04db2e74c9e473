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
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from rldoctor.cluster import connect
from rldoctor.errors import Undiagnosable, first_line
from rldoctor.snapshot_document import NOT_FROM_A_LIVE_CLUSTER, new_document  # noqa: F401 (also read from here)

DEFAULT_TIMEOUT_S = 30.0


error_line = first_line  # `Type: first line of the message` (rldoctor.errors)


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


def _run_section(doc: dict, section: str, func: Callable[[], Any]) -> Any:
    from rldoctor.cluster import bounded

    started = time.perf_counter()
    value, ok = None, False
    try:
        value = func()
        ok = True
    except Unavailable as exc:
        doc["collectors"][section] = {"status": "unavailable", "reason": str(exc)}
    except Exception as exc:  # a collector that breaks costs its section only
        doc["collectors"][section] = {"status": "error", "error": error_line(exc)}
    if ok:
        doc["collectors"][section] = {"status": "ok"}
        doc[section] = value
    doc["collectors"][section]["duration_s"] = round(time.perf_counter() - started, 3)
    cut = bounded.take(section)  # the reads that came back full (bounded.listed)
    if cut:
        doc["collectors"][section]["truncated"] = cut
    return value


class Unavailable(Exception):
    """The data source is not there (for example no dashboard); not a failure of rldoctor."""


def _collect_from_fleet(doc: dict, conn, budget, fleet, silent: dict | None = None) -> None:
    """versions and hosts from the probes' facts, then the network measurements."""
    from rldoctor.cluster import network, reach, versions

    _run_section(doc, "probes", lambda: fleet.gather(budget, silent))
    record = doc["collectors"].pop("probes")  # one probe fills two sections: they share its record
    doc.pop("probes", None)
    if record["status"] == "ok":
        _run_section(doc, "reach", lambda: reach.collect(
            conn, budget, fleet, doc.get("nodes"), (doc.get("cluster") or {}).get("gcs_address")))
        blocked = reach.blocked_object_pairs(doc.get("reach"))  # pulls across them would hang
        _run_section(doc, "network", lambda: network.collect(
            conn, budget, fleet, doc.get("object_store"), blocked_pairs=blocked))
        for node_id, entry in ((doc.get("network") or {}).get("nodes") or {}).items():
            if "error" in entry and node_id not in fleet.failed:  # it went quiet mid-check
                fleet.failed[node_id] = {"kind": "lost", "error": f"during round trips: {entry['error']}"}
        try:
            fleet.confirm_silent_nodes(budget, doc.get("nodes"))
        except Exception as exc:  # the second look is a bonus, never a reason to fail
            record.setdefault("note", error_line(exc))
        try:
            from rldoctor.cluster.node_logs import read_for_failed_probes

            read_for_failed_probes(doc, fleet, time.monotonic() + budget.left(3.0))
        except Exception as exc:  # Ray's words are a bonus too
            record.setdefault("note", error_line(exc))
    for section, split in (("versions", versions.versions_section), ("hosts", versions.hosts_section)):
        doc["collectors"][section] = dict(record)
        if record["status"] == "ok":
            doc[section] = split(fleet)


def _import_before_threads() -> None:
    """Import Ray's state API and autoscaler SDK once, here: on some releases (2.40) threads
    importing them side by side see a partially initialized module (ImportError)."""
    import importlib

    for name in ("ray.util.state", "ray.autoscaler.v2.sdk"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def submit_state_api_sections(pool, doc: dict, conn, budget) -> tuple[list, object]:
    """Demands, actors, workers and the trainings' sources, read side by side in `pool`:
    ([the sections' futures], the future of training.fetch_sources)."""
    from rldoctor.cluster import actors, demands, runtime_envs, training
    from rldoctor.cluster.job_table import JobTable
    from rldoctor.cluster.cluster_facts import state_api_address

    _import_before_threads()
    cluster = doc.get("cluster")
    table = JobTable(state_api_address(cluster), budget.left(10))  # read once, by the first to ask
    listed = pool.submit(_run_section, doc, "actors",
                         lambda: actors.collect_actors(conn, budget, cluster, table))

    def own_workers() -> list | None:  # rldoctor's probes, left out of the dead workers
        return (listed.result() or {}).get("rldoctor_workers")

    side = [listed] + [pool.submit(_run_section, doc, name, func) for name, func in (
        ("demands", lambda: demands.collect(conn, budget, cluster)),
        ("workers", lambda: actors.collect_workers(conn, budget, cluster, own_workers)),
        ("runtime_envs", lambda: runtime_envs.collect(conn, budget, cluster, table)),
        ("jobs", lambda: _jobs_section(doc, conn, budget, cluster, table, listed)),
    )]
    return side, pool.submit(training.fetch_sources, conn, budget, cluster, doc.get("nodes"), table)


def _jobs_section(doc: dict, conn, budget, cluster, table, listed) -> dict:
    """The jobs of the window (RLD405, the timeline), and when each dead node died."""
    from rldoctor.cluster import jobs

    section = jobs.collect(conn, budget, cluster, table, lambda: listed.result())
    try:
        jobs.add_node_times(doc, jobs.node_times(budget, cluster))
    except Exception as exc:  # the times are a bonus to the timeline
        section.setdefault("notes", []).append(f"node times not read: {error_line(exc)}")
    return section


def _trainings(doc: dict, sources, fleet, budget) -> dict:
    """The RLlib trainings on the cluster, then a closer look at their long calls."""
    from rldoctor.cluster import identity, training

    if doc.get("actors") is None:
        raise Unavailable("no actor list: " + (doc["collectors"].get("actors") or {}).get(
            "reason", (doc["collectors"].get("actors") or {}).get("error", "not collected")))
    section = training.assemble(doc["actors"], sources.result(), doc.get("nodes"))
    training.look_closer(section, doc.get("cluster"), fleet, budget)
    identity.identify(section, fleet, budget)  # a bare algo.train() loop: which algorithm, env
    return section


def _control_plane(doc: dict, pings) -> dict:
    """What the GCS, the dashboard and every raylet took to answer (RLD104, RLD101)."""
    cluster = doc.get("cluster") or {}
    state_api = {name: (doc["collectors"].get(name) or {}).get("duration_s")
                 for name in ("actors", "workers", "demands")}
    return {"gcs": {"first_call_ms": cluster.get("gcs_ms"), "rpc": "GetClusterId"},
            "dashboard": {"ms": cluster.get("dashboard_ms"), "error": cluster.get("dashboard_error"),
                          "waited_s": cluster.get("dashboard_waited_s"),
                          "url": cluster.get("dashboard_url"), "state_api_calls_s": state_api},
            "raylets": pings.section()}


def _alive_ids(doc: dict) -> list[str]:
    from rldoctor.cluster.nodes import alive_ids

    return alive_ids(doc.get("nodes"))


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
                through = self.on_refused(self.resolved, budget, exc) if self.on_refused else None
                if through is not None:  # the collectors run inside, with the cluster's Ray
                    return through
                raise Undiagnosable(exc.one_line()) from None
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
        from rldoctor.cluster import autoscaler, nodes, objectstore
        from rldoctor.cluster import cluster_facts
        from rldoctor.cluster.control_plane import PING_DEADLINE_S, RayletPings

        conn, fleet = self.conn, self.fleet
        _run_section(doc, "nodes", lambda: nodes.collect(conn, budget))
        # Probe workers start and every raylet is pinged while everything else is read.
        fleet.start(_alive_ids(doc))
        pings = RayletPings(doc.get("nodes"))
        timing["probes_started_s"] = budget.elapsed()
        _run_section(doc, "cluster", lambda: cluster_facts.collect(conn, budget))
        with ThreadPoolExecutor(max_workers=6) as pool:
            side, sources = submit_state_api_sections(pool, doc, conn, budget)
            silent = {node_id: f"no answer to a ping (GetSystemConfig) within "
                      f"{PING_DEADLINE_S:g}s" for node_id in pings.silent()}
            timing["raylets_pinged_s"] = budget.elapsed()
            _run_section(doc, "object_store",
                         lambda: objectstore.collect(conn, budget, doc.get("nodes"), silent))
            _collect_from_fleet(doc, conn, budget, fleet, silent)
            timing["probed_s"] = budget.elapsed()
            for future in side:
                future.result()
        from rldoctor.cluster.jobs import add_actor_end_times

        add_actor_end_times(doc)
        _run_section(doc, "autoscaler", lambda: autoscaler.collect(conn, budget, fleet, doc.get("nodes")))
        _run_section(doc, "training", lambda: _trainings(doc, sources, fleet, budget))
        doc["control_plane"] = _control_plane(doc, pings)
        doc["collectors"]["control_plane"] = {"status": "ok"}
        timing["collected_s"] = budget.elapsed()
        for extra in extras:
            try:
                extra(conn, budget, fleet, doc)
            except Exception as exc:
                doc.setdefault("notes", []).append(
                    f"{getattr(extra, '__name__', 'extra')} failed: {error_line(exc)}")

    def close(self, leave: bool = True) -> None:
        """Kill every probe; with `leave`, also disconnect (ray.shutdown)."""
        if self.conn is None:
            return
        try:
            self.fleet.shutdown()
        finally:
            if leave:
                connect.leave()

