"""The probe fleet: one zero-CPU actor pinned to each alive node, and its cleanup.

Guests on a production cluster: no CPUs reserved, a bounded number of calls with
hard timeouts, and every actor killed when the collection ends (they would also
die with the driver, which is not detached). A fleet can serve many rounds (`rldoctor
watch`): each `start` keeps the probes of nodes still alive, kills those of nodes gone,
starts one for each new node, and a probe that failed a round is replaced in the next;
there is never more than one probe per node.
"""

from __future__ import annotations

from rldoctor.collect import error_line, probes

PROBE_TIMEOUT_S = 8.0
# Once most probes have answered, how long the rest are waited for (see Fleet._wait).
STRAGGLER_FACTOR = 2.5
STRAGGLER_MIN_S = 4.0


def _rpc_error(exc: BaseException) -> str:
    """A gRPC error as `CODE: details`, other errors as their first line."""
    code = getattr(exc, "code", None)
    if callable(code):
        try:
            return f"{code().name}: {(exc.details() or '').strip()[:160]}"
        except Exception:
            pass
    return error_line(exc, 200)


class Fleet:
    def __init__(self):
        self.actors: dict[str, object] = {}  # node id -> actor handle (answered this round)
        self.facts: dict[str, dict] = {}
        self.failed: dict[str, dict] = {}
        self._by_node: dict[str, object] = {}  # every probe started and not yet killed
        self._actor_cls = None
        self._pending: dict = {}

    def start(self, node_ids: list[str]) -> None:
        """One probe per node (kept from the last round where it still serves) and a request
        for each one's facts; returns at once."""
        import ray

        from rldoctor.collect.placement import on_node

        self.actors.clear()
        self.facts.clear()
        self.failed.clear()
        for node_id in [n for n in self._by_node if n not in set(node_ids)]:  # the node is gone
            self._kill(self._by_node.pop(node_id))
        if self._actor_cls is None:
            probes.register()
            self._actor_cls = ray.remote(num_cpus=0, max_restarts=0)(probes.NodeProbe)
        self._pending = {}
        for node_id in node_ids:
            actor = self._by_node.get(node_id)
            if actor is None:
                actor = on_node(self._actor_cls, node_id).remote()
                self._by_node[node_id] = actor
            self._pending[actor.facts.remote()] = (node_id, actor)

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
        import time

        import ray

        silent = silent or {}
        pending = {ref: where for ref, where in self._pending.items() if where[0] not in silent}
        for node_id, why in silent.items():
            self.failed[node_id] = {"kind": "silent", "error": "not waited for: its raylet is "
                                    "not answering", "raylet": why}
        wait_s = budget.left(PROBE_TIMEOUT_S)
        started = time.monotonic()
        ready, not_ready = self._wait(pending, wait_s)
        for ref in ready:
            node_id, actor = pending[ref]
            try:
                self.facts[node_id] = ray.get(ref, timeout=1)
                self.actors[node_id] = actor
            except Exception as exc:  # the node died under the probe, or killed it for memory
                self.failed[node_id] = {"kind": "error", "error": error_line(exc)}
                self._retire(node_id)
        waited = time.monotonic() - started
        for ref in not_ready:
            self.failed[pending[ref][0]] = {"kind": "timeout", "error": f"no answer within {waited:.0f}s"
                                            + (" (its peers answered long before)" if ready else "")}
            self._retire(pending[ref][0])

    @staticmethod
    def _wait(pending: dict, wait_s: float) -> tuple[list, list]:
        """Wait for the probes' answers, at most `wait_s`; once most have answered, stragglers
        get STRAGGLER_FACTOR times the time the others took (at least STRAGGLER_MIN_S) and
        no more: a node that cannot start a worker must not hold the whole check."""
        import time

        import ray

        if not pending:
            return [], []
        started = time.monotonic()
        deadline = started + wait_s
        ready, not_ready, last_answer = [], list(pending), None
        while not_ready:
            now, end = time.monotonic(), deadline
            if last_answer is not None and len(ready) >= len(pending) / 2:  # the peers answered
                end = min(end, started + max(STRAGGLER_MIN_S,
                                             STRAGGLER_FACTOR * (last_answer - started)))
            if end <= now:
                break
            done, not_ready = ray.wait(not_ready, num_returns=1, timeout=end - now)
            if done:
                ready += done
                last_answer = time.monotonic()
        return ready, not_ready

    def confirm_silent_nodes(self, budget) -> None:
        """Ask the raylet of every node whose probe failed whether it still answers.

        Two independent paths failing (the probe and the raylet's own gRPC port) is
        what tells a dead node from a busy one before the GCS notices.
        """
        import ray

        from rldoctor.collect.private import raylet_node_stats

        ports = {n["NodeID"]: (n["NodeManagerAddress"], n["NodeManagerPort"]) for n in ray.nodes()}
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
