"""The probe fleet: one zero-CPU actor pinned to each alive node, and its cleanup.

Guests on a production cluster: no CPUs reserved, a bounded number of calls with
hard timeouts, and every actor killed when the collection ends (they would also
die with the driver, which is not detached). A fleet can serve many rounds (`rldoctor
watch`): each `start` keeps the probes of nodes still alive, kills those of nodes gone,
starts one for each new node, and a probe that failed a round is replaced in the next;
there is never more than one probe per node.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rldoctor.errors import first_line
from rldoctor.node import probes
from rldoctor.cluster.sections import section

# How long the probes' facts are waited for: at least PROBE_TIMEOUT_S, and up to
# PROBE_TIMEOUT_LONG_S when the run's budget leaves REST_S for the sections after them. The
# long wait serves clusters where every node starts its worker slowly at once (20 nodes on
# two cores: Ray's own start of one bare worker per node takes 11 s); a node that is slow
# beside answering peers is cut much sooner (the stragglers' rule below).
PROBE_TIMEOUT_S = 8.0
PROBE_TIMEOUT_LONG_S = 20.0
REST_S = 8.0
# Once most probes have answered, how long the rest are waited for (see Asked.wait).
STRAGGLER_FACTOR = 2.5
STRAGGLER_MIN_S = 4.0


def probe_wait_s(budget) -> float:
    """The probes' wait within `budget` (see PROBE_TIMEOUT_S)."""
    room = budget.left(PROBE_TIMEOUT_LONG_S + REST_S) - REST_S
    return budget.left(max(PROBE_TIMEOUT_S, min(PROBE_TIMEOUT_LONG_S, room)))


def wait_end(started: float, deadline: float, answered: int, asked: int,
             last_answer: float | None) -> float:
    """When a wait for `asked` calls that began at `started` ends: at `deadline`, or, once at
    least half have answered (the last at `last_answer`), STRAGGLER_FACTOR times what they
    took (at least STRAGGLER_MIN_S), whichever comes first."""
    if last_answer is None or answered < asked / 2:
        return deadline
    return min(deadline, started + max(STRAGGLER_MIN_S, STRAGGLER_FACTOR * (last_answer - started)))


def _rpc_error(exc: BaseException) -> str:
    """A gRPC error as `CODE: details`, other errors as their first line."""
    code = getattr(exc, "code", None)
    if callable(code):
        try:
            return f"{code().name}: {(exc.details() or '').strip()[:160]}"
        except Exception:
            pass
    return first_line(exc, 200)


@dataclass
class Answer:
    """What one call to a node's probe came back with."""

    node_id: str
    kind: str = "ok"  # ok | no_probe (none on the node) | error (it raised) | timeout
    value: Any = None
    error: str | None = None  # no_probe: why there is none; error: the exception's line
    took_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


class Asked:
    """Calls sent to probes, answers not yet waited for (`send`, then `wait`; `ask` does both)."""

    def __init__(self, actors: dict, failed: dict, calls: dict):
        """`calls`: {key: (node id, method name, *args)}; sent at once to `actors`[node id]."""
        self.answers: dict = {}
        self._refs: dict = {}  # ref -> (key, node id, sent at)
        for key, (node_id, method, *args) in calls.items():
            actor = actors.get(node_id)
            if actor is None:
                why = (failed.get(node_id) or {}).get("error") or "it did not start"
                self.answers[key] = Answer(node_id, "no_probe", error=why)
                continue
            try:
                self._refs[getattr(actor, method).remote(*args)] = (key, node_id, time.perf_counter())
            except Exception as exc:  # the handle is unusable: the probe died
                self.answers[key] = Answer(node_id, "error", error=f"probe unreachable: {first_line(exc)}")

    def wait(self, timeout_s: float, *, stragglers: bool = False, skip=()) -> dict:
        """{key: Answer} for every call, after at most `timeout_s`; a call not answered by
        then is cancelled (kind "timeout"). An answer's `took_s` runs from its send to the
        moment it was seen ready (its own time, not the slowest call's). With `stragglers`,
        once half have answered the rest get STRAGGLER_FACTOR times what the others took (at
        least STRAGGLER_MIN_S). Keys in `skip` are not waited for and left out."""
        import ray

        skip = set(skip)
        pending = {ref: where for ref, where in self._refs.items() if where[0] not in skip}
        ready, not_ready = _wait(list(pending), timeout_s, stragglers)
        for ref, seen in ready.items():
            key, node_id, sent = pending[ref]
            try:
                value = ray.get(ref, timeout=1)
                self.answers[key] = Answer(node_id, value=value, took_s=seen - sent)
            except Exception as exc:  # the node died under the probe, or killed it for memory
                self.answers[key] = Answer(node_id, "error", error=first_line(exc),
                                           took_s=seen - sent)
        for ref in not_ready:
            key, node_id, sent = pending[ref]
            self.answers[key] = Answer(node_id, "timeout", took_s=time.perf_counter() - sent,
                                       error=f"no answer within {timeout_s:.1f}s")
            try:
                ray.cancel(ref)
            except Exception:
                pass
        return {k: a for k, a in self.answers.items() if k not in skip}


def send(fleet, calls: dict) -> Asked:
    """Send `calls` ({key: (node id, method, *args)}) to the probes of `fleet` (anything with
    `actors` and `failed`, such as `Fleet` or a stand-in without probes); returns at once."""
    return Asked(getattr(fleet, "actors", None) or {}, getattr(fleet, "failed", None) or {}, calls)


def ask(fleet, calls: dict, timeout_s: float, **wait) -> dict:
    """The probe fan-out: send `calls` to the nodes' probes, wait at most `timeout_s` for all
    of them, {key: Answer}. Every caller that talks to more than one probe uses this."""
    return send(fleet, calls).wait(timeout_s, **wait)


def _wait(refs: list, wait_s: float, stragglers: bool) -> tuple[dict, list]:
    """({ref: when it was seen ready, as time.perf_counter()}, [refs not ready by the end]).

    Refs are taken one at a time as they come, so each answer's time is its own (a ping's
    round trip, a stack dump's duration), not the time the last one came.
    """
    import ray

    if not refs:
        return {}, []
    started = time.monotonic()
    deadline = started + max(0.0, wait_s)
    ready, not_ready, last_answer = {}, list(refs), None
    while not_ready:
        now = time.monotonic()
        end = wait_end(started, deadline, len(ready), len(refs), last_answer) if stragglers \
            else deadline
        if end <= now:
            break
        done, not_ready = ray.wait(not_ready, num_returns=1, timeout=end - now)
        if done:
            seen = time.perf_counter()
            ready.update((ref, seen) for ref in done)
            last_answer = time.monotonic()
    if not_ready:  # what came at the very end (or was there already, for a timeout of 0)
        done, not_ready = ray.wait(not_ready, num_returns=len(not_ready), timeout=0)
        seen = time.perf_counter()
        ready.update((ref, seen) for ref in done)
    return ready, not_ready


class Fleet:
    def __init__(self):
        self.actors: dict[str, object] = {}  # node id -> actor handle (answered this round)
        self.facts: dict[str, dict] = {}
        self.failed: dict[str, dict] = {}
        self._by_node: dict[str, object] = {}  # every probe started and not yet killed
        self._actor_cls = None
        self._asked: Asked | None = None

    def start(self, node_ids: list[str]) -> None:
        """One probe per node (kept from the last round where it still serves) and a request
        for each one's facts; returns at once."""
        import ray

        from rldoctor.node.placement import on_node

        self.actors.clear()
        self.facts.clear()
        self.failed.clear()
        for node_id in [n for n in self._by_node if n not in set(node_ids)]:  # the node is gone
            self._kill(self._by_node.pop(node_id))
        if self._actor_cls is None:
            probes.register()
            self._actor_cls = ray.remote(num_cpus=0, max_restarts=0)(probes.NodeProbe)
        for node_id in node_ids:
            if node_id not in self._by_node:
                self._by_node[node_id] = on_node(self._actor_cls, node_id).remote()
        self._asked = Asked(self._by_node, {}, {n: (n, "facts") for n in node_ids})

    @property
    def probe_count(self) -> int:
        """Probes alive or starting (at most one per node)."""
        return len(self._by_node)

    def _retire(self, node_id: str) -> None:
        """A probe that failed its round is killed; the next round starts a fresh one."""
        actor = self._by_node.pop(node_id, None)
        if actor is not None:
            self._kill(actor)

    @staticmethod
    def _kill(actor) -> None:
        import ray

        try:
            ray.kill(actor, no_restart=True)
        except Exception:
            pass

    def gather(self, budget, silent: dict[str, str] | None = None) -> None:
        """Wait for the facts, all within one deadline; a node that does not answer is noted.

        Nodes in `silent` (whose raylet did not answer a ping: {node id: why}) are not
        waited for: their probes are noted as not started, with the raylet's silence.
        """
        silent = silent or {}
        for node_id, why in silent.items():
            self.failed[node_id] = {"kind": "silent", "error": "not waited for: its raylet is "
                                    "not answering", "raylet": why}
        started = time.monotonic()
        answers = self._asked.wait(probe_wait_s(budget), stragglers=True, skip=silent) \
            if self._asked else {}
        waited = time.monotonic() - started
        peers_answered = any(a.kind != "timeout" for a in answers.values())
        for node_id, answer in answers.items():
            if answer.ok:
                self.facts[node_id] = answer.value
                self.actors[node_id] = self._by_node[node_id]
                continue
            if answer.kind == "timeout":
                self.failed[node_id] = {"kind": "timeout", "error": f"no answer within {waited:.0f}s"
                                        + (" (its peers answered long before)" if peers_answered else "")}
            else:  # the node died under the probe, or killed it for memory
                self.failed[node_id] = {"kind": "error", "error": answer.error}
            self._retire(node_id)

    def ask(self, calls: dict, timeout_s: float, **wait) -> dict:
        """`ask(calls, timeout_s)` on this fleet's probes (the ones that answered this round)."""
        return ask(self, calls, timeout_s, **wait)

    def confirm_silent_nodes(self, budget, nodes: list[dict] | None) -> None:
        """Ask the raylet of every node whose probe failed whether it still answers.

        Two independent paths failing (the probe and the raylet's own gRPC port) is
        what tells a dead node from a busy one before the GCS notices.
        """
        from rldoctor.cluster.private import raylet_node_stats
        from rldoctor.cluster.raylets import addresses

        ports = addresses(nodes)  # of the nodes section
        for node_id, failure in self.failed.items():
            if node_id not in ports or failure.get("kind") == "silent":
                continue
            try:
                raylet_node_stats(*ports[node_id], timeout_s=budget.left(2.0))
                failure["raylet"] = "answers"
            except Exception as exc:
                failure["raylet"] = _rpc_error(exc)
                if "UNAUTHENTICATED" in failure["raylet"]:
                    failure["kind"] = "auth"
                    failure["auth"] = ("its raylet refused rldoctor's credentials (the node runs "
                                       "in token mode and rldoctor joined without a token)")

    def shutdown(self) -> None:
        for actor in self._by_node.values():
            self._kill(actor)
        self._by_node.clear()
        self.actors.clear()


@section("probe_fleet", needs=("nodes",), keep=False, alone=True)
def probe_fleet_step(ctx) -> None:
    """One probe worker started on every alive node, while the rest is read.

    The probes' start is the longest path of a snapshot, so it comes first; Ray's state API
    and autoscaler SDK are imported after it, while the probe workers boot, and before any
    section beside it runs (this step runs alone): on some releases (2.40) threads that import
    them side by side see a partially initialized module (ImportError)."""
    from rldoctor.cluster.nodes import alive_ids

    try:
        ctx.fleet.start(alive_ids(ctx.doc.get("nodes")))
        ctx.timing["probes_started_s"] = ctx.budget.elapsed()
    finally:
        _import_state_api()


def _import_state_api() -> None:
    import importlib

    for name in ("ray.util.state", "ray.autoscaler.v2.sdk"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


@section("probes", needs=("probe_fleet", "silent_raylets"), keep=False)
def probes_step(ctx) -> None:
    """Each probe's facts of its node; one round fills `versions` and `hosts`."""
    ctx.fleet.gather(ctx.budget, ctx.value("silent_raylets"))


@section("probe_followup", follows=("network",), requires=("probes",), keep=False)
def probe_followup_step(ctx) -> None:
    """A second look at the nodes whose probe went quiet, and Ray's words about them."""
    from rldoctor.cluster.node_logs import read_for_failed_probes

    record = ctx.record("probes")
    for node_id, entry in ((ctx.doc.get("network") or {}).get("nodes") or {}).items():
        if "error" in entry and node_id not in ctx.fleet.failed:  # it went quiet mid-check
            ctx.fleet.failed[node_id] = {"kind": "lost", "error": f"during round trips: {entry['error']}"}
    try:
        ctx.fleet.confirm_silent_nodes(ctx.budget, ctx.doc.get("nodes"))
    except Exception as exc:  # the second look is a bonus, never a reason to fail
        record.setdefault("note", first_line(exc))
    try:
        read_for_failed_probes(ctx.doc, ctx.fleet, time.monotonic() + ctx.budget.left(3.0))
    except Exception as exc:  # Ray's words are a bonus too
        record.setdefault("note", first_line(exc))
