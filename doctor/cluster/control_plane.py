"""How fast the control plane answers: the GCS, the dashboard, and every node's raylet.

A raylet answers a cheap RPC (GetSystemConfig) in milliseconds, so a couple of seconds
of silence is already abnormal: the process is frozen (SIGSTOP, a hung kernel call, a
paused VM) or cut off, while the GCS may list the node as alive for tens of seconds
more. Every raylet is pinged at once, right after the nodes are known; the rest of the
collection waits at most PING_DEADLINE_S for the answers and leaves out the nodes that
have not answered by then, instead of waiting on their probes and their store figures.
A ping that answers late (before LATE_DEADLINE_S) marks a slow raylet, not a silent one.
"""

from __future__ import annotations

import time

from rldoctor.cluster.raylets import addresses, fan_out
from rldoctor.errors import first_line
from rldoctor.cluster.sections import section

PING_DEADLINE_S = 2.0
# `_system_config` entries a check needs, kept from each raylet's answer (never the rest).
KEPT_SYSTEM_CONFIG = ("local_fs_capacity_threshold",)
LATE_DEADLINE_S = 6.0


class RayletPings:
    """GetSystemConfig to every alive raylet, in the background."""

    def __init__(self, nodes: list[dict] | None):
        self.targets = addresses(nodes)
        self.started = time.perf_counter()
        self._pool, self._futures = fan_out(self.targets, self._ping, name="rldoctor-ping")

    @staticmethod
    def _ping(ip: str, port: int) -> tuple[float, dict]:
        from rldoctor.cluster.private import raylet_ping

        started = time.perf_counter()
        config = raylet_ping(ip, port, LATE_DEADLINE_S)
        return (time.perf_counter() - started) * 1000, _kept_config(config)

    def silent(self) -> set[str]:
        """The nodes whose raylet has not answered within PING_DEADLINE_S of the start."""
        from concurrent.futures import wait

        left = max(0.0, PING_DEADLINE_S - (time.perf_counter() - self.started))
        wait(list(self._futures.values()), timeout=left)
        return {n for n, f in self._futures.items()
                if not f.done() or (f.exception() is not None and not _refused(f.exception()))}

    def section(self) -> dict:
        """{node id: {"ms": ..} or {"error": .., "waited_s": ..}}, without waiting any longer."""
        out = {}
        waited = round(time.perf_counter() - self.started, 2)
        for node_id, future in self._futures.items():
            if not future.done():
                out[node_id] = {"error": f"no answer to GetSystemConfig within {waited:g}s",
                                "waited_s": waited, "rpc": "GetSystemConfig"}
            elif future.exception() is not None:
                out[node_id] = {"error": first_line(future.exception(), 200), "rpc": "GetSystemConfig",
                                "refused": _refused(future.exception())}
            else:
                ms, config = future.result()
                out[node_id] = {"ms": round(ms, 2), "rpc": "GetSystemConfig",
                                "system_config": config}
        self._pool.shutdown(wait=False, cancel_futures=True)
        return out


def _kept_config(text: str) -> dict:
    """The KEPT_SYSTEM_CONFIG entries of a raylet's system config JSON ({} when unset)."""
    import json

    try:
        config = json.loads(text or "{}")
    except ValueError:
        return {}
    return {k: config[k] for k in KEPT_SYSTEM_CONFIG if isinstance(config, dict) and k in config}


def _refused(exc: BaseException) -> bool:
    """The raylet answered, refusing rldoctor's credentials: it is up (RLD105), not silent."""
    code = getattr(exc, "code", None)
    try:
        return callable(code) and code().name == "UNAUTHENTICATED"
    except Exception:
        return False


@section("raylet_pings", needs=("nodes",), keep=False)
def raylet_pings_step(ctx) -> RayletPings:
    """Every alive raylet pinged in the background while the rest is read."""
    return RayletPings(ctx.doc.get("nodes"))


@section("silent_raylets", needs=("raylet_pings",), keep=False)
def silent_raylets_step(ctx) -> dict[str, str]:
    """{node id: why}: the raylets that did not answer their ping in time."""
    pings = ctx.value("raylet_pings")
    silent = {node_id: f"no answer to a ping (GetSystemConfig) within {PING_DEADLINE_S:g}s"
              for node_id in (pings.silent() if pings else ())}
    ctx.timing["raylets_pinged_s"] = ctx.budget.elapsed()
    return silent


@section("control_plane", needs=("silent_raylets", "cluster", "actors", "workers", "demands"))
def control_plane_section(ctx) -> dict:
    """What the GCS, the dashboard and every raylet took to answer (RLD104, RLD101)."""
    cluster = ctx.doc.get("cluster") or {}
    state_api = {name: ctx.record(name).get("duration_s") for name in ("actors", "workers", "demands")}
    pings = ctx.value("raylet_pings")
    return {"gcs": {"first_call_ms": cluster.get("gcs_ms"), "rpc": "GetClusterId"},
            "dashboard": {"ms": cluster.get("dashboard_ms"), "error": cluster.get("dashboard_error"),
                          "waited_s": cluster.get("dashboard_waited_s"),
                          "url": cluster.get("dashboard_url"), "state_api_calls_s": state_api},
            "raylets": pings.section() if pings else {}}
