"""The probe fleet: one zero-CPU actor pinned to each alive node, and its cleanup.

Guests on a production cluster: no CPUs reserved, a bounded number of calls with
hard timeouts, and every actor killed when the collection ends (they would also
die with the driver, which is not detached).
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
        self.actors: dict[str, object] = {}  # node id -> actor handle (answered the first call)
        self.facts: dict[str, dict] = {}
        self.failed: dict[str, dict] = {}
        self._all: list = []

    def start(self, node_ids: list[str]) -> None:
        """Start one probe per node and ask each for its facts; returns at once."""
        import ray

        probes.register()
        actor_cls = ray.remote(num_cpus=0, max_restarts=0)(probes.NodeProbe)
        self._pending = {}
        for node_id in node_ids:
            actor = actor_cls.options(label_selector={"ray.io/node-id": node_id}).remote()
            self._all.append(actor)
            self._pending[actor.facts.remote()] = (node_id, actor)

    def gather(self, budget, silent: dict[str, str] | None = None) -> None:
        """Wait for the facts, all within one deadline; a node that does not answer is noted.

        Nodes in `silent` (whose raylet did not answer a ping: {node id: why}) are not
        waited for: their probes are noted as not started, with the raylet's silence.
        """
        import ray

        silent = silent or {}
        pending = {ref: where for ref, where in self._pending.items() if where[0] not in silent}
        for node_id, why in silent.items():
            self.failed[node_id] = {"kind": "silent", "error": "not waited for: its raylet is "
                                    "not answering", "raylet": why}
        import time

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
        waited = time.monotonic() - started
        for ref in not_ready:
            self.failed[pending[ref][0]] = {"kind": "timeout", "error": f"no answer within {waited:.0f}s"
                                            + (" (its peers answered long before)" if ready else "")}

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
        import ray

        for actor in self._all:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:
                pass
        self._all.clear()
        self.actors.clear()
