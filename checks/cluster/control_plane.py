"""The control plane: GCS, raylets and dashboard answering slowly or not at all: RLD104."""

from __future__ import annotations

from rldoctor.registry import check, fail, warn


_SLOW = "the GCS, the dashboard, Ray's state API or a raylet answers slowly"
CONTROL_PLANE_FIXES = {_SLOW: (
    "The head is the usual cause: it runs the GCS and the dashboard, and training placed on it "
    "starves them (start the head with `ray start --head --num-cpus=0` so no env runner or "
    "learner lands there, or give it a bigger machine); a dashboard that ran out of memory or is "
    "stuck (its `dashboard.log` on the head; a stopped or defunct process in `ps`) needs a "
    "restart of the head; and very many tasks and actors make the GCS tables and the state API "
    "slow (keep fewer: RAY_task_events_max_num_task_in_gcs and "
    "RAY_maximum_gcs_destroyed_actor_cached_count on the head, or "
    "RAY_enable_task_events=0 for jobs that do not need task history). A slow raylet is a "
    "starved node: check its load and memory."
)}


@check("RLD104", "control-plane-slow", area="cluster", requires=("control_plane",),
       params={"gcs_warn_ms": 500.0, "gcs_fail_ms": 3000.0, "dashboard_warn_ms": 1000.0,
               "state_api_warn_s": 5.0, "raylet_warn_ms": 1000.0},
       fixes=CONTROL_PLANE_FIXES)
def control_plane_slow(snap, params):
    """GCS, raylet or dashboard answering slowly or not at all, with the latency measured per call.

    Symptom:
        `ray status`, `ray list actors` or the dashboard hang or time out; drivers take
        long to connect; tasks and actors are slow to be scheduled; `rldoctor check`
        skips the state-API checks because the dashboard did not answer.

    Cause:
        The control plane is overloaded or stuck: a head whose CPUs or memory are taken by
        training, a dashboard process that ran out of memory or is frozen, GCS tables
        grown large with task and actor history, or a node whose raylet is starved.

        Bars: the GCS's first answer over 0.5 s is a warn and over 3 s a fail; the
        dashboard's health route over 1 s a warn and no answer within 3 s a fail; a
        state-API listing over 5 s a warn; a raylet ping over 1 s a warn (a raylet that
        does not answer at all is RLD101).
    """
    plane = snap["control_plane"]
    fix = CONTROL_PLANE_FIXES[_SLOW].format()
    gcs = plane.get("gcs") or {}
    ms = gcs.get("first_call_ms")
    if ms is not None and ms > params["gcs_warn_ms"]:
        severity = fail if ms > params["gcs_fail_ms"] else warn
        yield severity("cluster", f"the GCS took {ms:.0f} ms to answer rldoctor's first call "
                       f"({gcs.get('rpc')}); a healthy GCS answers in a few ms",
                       {"component": "gcs", "ms": ms, "rpc": gcs.get("rpc")}, fix)
    dash = plane.get("dashboard") or {}
    if dash.get("error") and dash.get("url"):
        yield fail("dashboard", f"the dashboard at {dash['url']} did not answer its health route "
                   f"(/api/authentication_mode): {dash['error']}; Ray's state API is served by "
                   "it, so the checks that need it (RLD401-RLD403, RLD605-RLD608) were skipped",
                   {"component": "dashboard", **dash}, fix)
    elif dash.get("ms") is not None and dash["ms"] > params["dashboard_warn_ms"]:
        yield warn("dashboard", f"the dashboard at {dash.get('url')} took {dash['ms']:.0f} ms to "
                   "answer its health route; a healthy one answers in milliseconds",
                   {"component": "dashboard", **dash}, fix)
    slow_calls = {name: s for name, s in (dash.get("state_api_calls_s") or {}).items()
                  if s is not None and s > params["state_api_warn_s"]}
    if slow_calls and not dash.get("error"):
        shown = ", ".join(f"{name} {s:.1f} s" for name, s in sorted(slow_calls.items()))
        yield warn("dashboard", f"Ray's state API is slow: listing {shown}",
                   {"component": "state_api", "calls_s": dash.get("state_api_calls_s")},
                   fix)
    for node_id, ping in sorted((plane.get("raylets") or {}).items()):
        if ping.get("ms") is not None and ping["ms"] > params["raylet_warn_ms"]:
            node = snap.node(node_id) or {}
            late = bool(node) and snap.state(node_id).kind == "late"  # the overview's why
            yield warn(f"node:{node_id}", f"the raylet of {snap.label(node_id)} "
                       f"took {ping['ms']:.0f} ms to answer a ping ({ping.get('rpc')}); a healthy "
                       "raylet answers in milliseconds" + (
                           ", too late for its probe, object store and network figures, which "
                           "were not waited for" if late else ""),
                       {"component": "raylet", "node_id": node_id, **ping}, fix)
