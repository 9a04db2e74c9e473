"""The autoscaler: which one runs (none, v1, v2), its node types, launches and idle nodes.

Read from the cluster, never from this process's environment (`RAY_enable_autoscaler_v2`
in the client's env says nothing about the head):
- the GCS: the v2 flag Ray's GCS writes at start, v1's status JSON and error text, v1's
  request_resources() bundles, and the cluster status reply (node states with their idle
  time on both versions; v2's pending, failed and infeasible requests)
  (rldoctor.cluster.private.autoscaler_state);
- the head, through its probe (`monitor_here`, pickled by value): the monitor process, the
  autoscaling config it was started with (node types with min/max exist nowhere else), and
  the autoscaler's own event log (launch failures with their times, nodes removed as idle).

Stdlib and the cluster's own Ray only: this module runs inside the cluster on the dashboard
path too (Ray 2.40-2.60).
"""

from __future__ import annotations

import json
import re
import time
from rldoctor.cluster.sections import section

EVENTS_TAIL_BYTES = 256 * 1024
MAX_EVENTS = 50
# A v1 status older than this means its monitor stopped writing (it writes every 5 s).
V1_STALE_S = 60.0


def monitor_here(gcs_address: str | None = None, events_tail_bytes: int = EVENTS_TAIL_BYTES) -> dict:
    """On the head: the autoscaler's monitor process of the cluster at `gcs_address` (a machine
    may run several clusters' heads), its config and its event log. Never raises."""
    import os

    out: dict = {"monitor": None, "config": None, "events": [], "errors": []}
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        script = next((a for a in args[:3] if a.endswith("monitor.py") and "autoscaler" in a), None)
        kuberay = any(a == "kuberay-autoscaler" for a in args[:4])
        if not script and not kuberay:
            continue
        flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
        if gcs_address and flags.get("gcs-address") not in (None, gcs_address) and \
                flags.get("gcs-address", "").rsplit(":", 1)[-1] != gcs_address.rsplit(":", 1)[-1]:
            continue  # another cluster's monitor
        out["monitor"] = {"pid": int(pid),
                          "entrypoint": ("kuberay" if kuberay else
                                         "v2" if "/v2/" in script else "v1"),
                          "config_path": flags.get("autoscaling-config"),
                          "logs_dir": flags.get("logs-dir")}
        break
    monitor = out["monitor"] or {}
    path = monitor.get("config_path")
    if path:
        try:  # `ray up` writes ~/ray_bootstrap_config.yaml as JSON (autoscaler/_private/commands.py)
            with open(os.path.expanduser(path)) as f:
                out["config"] = json.loads(f.read(1024 * 1024))
        except ValueError:
            out["errors"].append(f"config {path}: written as YAML by hand, not read here (stdlib "
                                 "only on the cluster); `rldoctor lint` reads it")
        except Exception as exc:
            out["errors"].append(f"config {path}: {type(exc).__name__}: {exc}"[:300])
    logs = monitor.get("logs_dir")
    if logs:
        path = os.path.join(logs, "events", "event_AUTOSCALER.log")
        try:
            with open(path, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - events_tail_bytes))
                lines = f.read().decode(errors="replace").splitlines()[1 if size > events_tail_bytes else 0:]
            for line in lines:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                out["events"].append({"ts": event.get("timestamp"), "severity": event.get("severity"),
                                      "message": str(event.get("message") or "")[:500]})
        except FileNotFoundError:
            pass
        except OSError as exc:
            out["errors"].append(f"events {path}: {exc}"[:300])
        logged, out["terminated"] = monitor_log(os.path.join(logs, "monitor.log"), events_tail_bytes)
        out["events"] += logged
        seen = set()
        out["events"] = [e for e in out["events"] if not ((e["ts"], e["message"]) in seen
                                                          or seen.add((e["ts"], e["message"])))]
        out["events"].sort(key=lambda e: float(e.get("ts") or 0))
    out["summary"] = _launch_events(out["events"])  # over every event read, before the cut
    out["events"] = out["events"][-MAX_EVENTS:]
    return out


_V2_FAILED = re.compile(r"Failed to launch (\d+) nodes of type (\S+): (?:Node Launch Exception \((.*?)\): )?(.*)")
_TERMINATING = re.compile(r"Terminating the node with id (\S+) and ip (\S+)\. \((.*)\)")


def monitor_log(path: str, tail_bytes: int) -> tuple[list, list]:
    """From the tail of the autoscaler's monitor.log, with their times (never raises):
    - launch failures as v1-style event messages: v1's `:event_summary:` lines (v1 sends them
      only to drivers and this log) and v2's "Failed to launch 1 nodes of type T: Node Launch
      Exception (Category): description" (only this log keeps the provider's words);
    - the nodes it terminated, {ts, id, ip, reason}: "StandardAutoscaler: Terminating the node
      with id X and ip Y. (idle)" (v1 drains them without a reason, so the GCS records only
      "Terminated by autoscaler."; the provider's id is the Ray node id on the fake provider,
      the ip the node's address on a cloud)."""
    import datetime

    events, terminated = [], []
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - tail_bytes))
            text = f.read().decode(errors="replace")
    except OSError:
        return events, terminated
    for line in text.splitlines():
        summary = line.find(":event_summary:")
        failed = _V2_FAILED.search(line) if "node_provider.py" in line else None
        ended = _TERMINATING.search(line) if summary < 0 else None
        if summary < 0 and not failed and not ended:
            continue
        try:
            when = str(int(datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()))
        except ValueError:
            continue
        if ended:
            terminated.append({"ts": when, "id": ended.group(1), "ip": ended.group(2),
                               "reason": ended.group(3)[:200]})
        elif failed:
            reason = f"({failed.group(3)}): {failed.group(4)}" if failed.group(3) else f"(error): {failed.group(4)}"
            events.append({"ts": when, "severity": "ERROR", "message": f"Failed to launch {failed.group(1)} "
                           f"node(s) of type {failed.group(2)}. {reason}"[:500]})
        else:
            message = line[summary + len(":event_summary:"):].strip()
            if message.startswith("Failed to launch"):
                events.append({"ts": when, "severity": "ERROR", "message": message[:500]})
    return events, terminated[-MAX_EVENTS:]


def _bundle(request: dict) -> dict:
    return {k: float(v) for k, v in (request.get("resources_bundle") or {}).items()}


def _node_types(config: dict | None) -> dict:
    """{name: {resources, min_workers, max_workers, idle_timeout_s?}} from an autoscaling config."""
    types = {}
    for name, spec in ((config or {}).get("available_node_types") or {}).items():
        spec = spec or {}
        resources = {k: float(v) for k, v in (spec.get("resources") or {}).items()
                     if isinstance(v, (int, float))}
        entry = {"resources": resources, "min_workers": int(spec.get("min_workers") or 0),
                 "max_workers": spec.get("max_workers")}
        if spec.get("idle_timeout_s") is not None:
            entry["idle_timeout_s"] = spec["idle_timeout_s"]
        types[name] = entry
    return types


def config_summary(config: dict | None, source: str | None) -> dict | None:
    """The parts of an autoscaling config the checks read (never the provider's credentials)."""
    if not isinstance(config, dict):
        return None
    provider = config.get("provider") or {}
    head_type = config.get("head_node_type")
    return {"source": source, "max_workers": config.get("max_workers"),
            "idle_timeout_minutes": config.get("idle_timeout_minutes", 5),
            "upscaling_speed": config.get("upscaling_speed"),
            "provider_type": provider.get("type"), "head_node_type": head_type,
            "node_types": _node_types(config)}


def _v1(raw: dict, now: float) -> dict:
    """v1's status JSON: active, pending and failed nodes, the launch failures' reasons."""
    try:
        status = json.loads(raw["status"]) if raw.get("status") else None
    except ValueError:
        status = None
    out: dict = {"status_age_s": None, "active": {}, "pending_launches": [], "pending_nodes": [],
                 "failed_nodes": [], "unavailable_types": [], "node_type_of": {}}
    if not status:
        return out
    out["status_age_s"] = round(max(0.0, now - float(status.get("time") or now)), 1)
    report = status.get("autoscaler_report") or {}
    out["active"] = dict(report.get("active_nodes") or {})
    out["pending_launches"] = [{"node_type": t, "count": int(n)}
                               for t, n in sorted((report.get("pending_launches") or {}).items())]
    out["pending_nodes"] = [{"ip": p[0], "node_type": p[1], "status": p[2]}
                            for p in report.get("pending_nodes") or [] if len(p) >= 3]
    out["failed_nodes"] = [{"ip": p[0], "node_type": p[1]} for p in report.get("failed_nodes") or []
                           if len(p) >= 2]
    summary = (report.get("node_availability_summary") or {}).get("node_availabilities") or {}
    for name, entry in sorted(summary.items()):
        info = entry.get("unavailable_node_information") or {}
        if entry.get("is_available") is False or info:
            out["unavailable_types"].append({
                "node_type": name, "category": info.get("category"),
                "reason": info.get("description"),
                "last_checked": entry.get("last_checked_timestamp")})
    out["node_type_of"] = dict(report.get("node_type_mapping") or {})
    return out


def _v2(state: dict) -> dict:
    """v2's AutoscalingState: pending and failed instance requests, infeasible requests."""
    def shapes(items, key="resource_requests"):
        out = []
        for item in items or []:
            request = item.get("request") or item
            out.append({"shape": _bundle(request), "count": int(item.get("count") or 1)})
        return out

    return {
        "pending_launches": [{"node_type": r.get("ray_node_type_name"), "count": int(r.get("count") or 0),
                              "since": int(r.get("request_ts") or 0) or None}
                             for r in state.get("pending_instance_requests") or []],
        "pending_nodes": [{"instance_id": p.get("instance_id"), "node_type": p.get("ray_node_type_name"),
                           "ip": p.get("ip_address"), "details": p.get("details")}
                          for p in state.get("pending_instances") or []],
        "failed_launches": [{"node_type": f.get("ray_node_type_name"), "count": int(f.get("count") or 0),
                             "reason": f.get("reason"), "since": int(f.get("start_ts") or 0) or None,
                             "failed_at": int(f.get("failed_ts") or 0) or None}
                            for f in state.get("failed_instance_requests") or []],
        "infeasible": {
            "task_actor": shapes(state.get("infeasible_resource_requests")),
            "placement_groups": [{"bundles": [_bundle(b) for b in g.get("requests") or []],
                                  "details": g.get("details")}
                                 for g in state.get("infeasible_gang_resource_requests") or []],
            "constraints": [{"bundles": [{"shape": _bundle(b.get("request") or {}),
                                          "count": int(b.get("count") or 1)}
                                         for b in c.get("resource_requests") or []]}
                            for c in state.get("infeasible_cluster_resource_constraints") or []]},
    }


def _launch_events(events: list) -> dict:
    """From the autoscaler's event log: launch failures per node type (count, first, last, the
    reason as the log gives it) and nodes removed per cause."""
    failed: dict = {}
    removed: list = []
    added: dict = {}
    for event in events:
        message, ts = event.get("message") or "", event.get("ts")
        m = re.match(r"Failed to launch (\d+) node\(s\) of type (\S+?)\.(?: \((.*?)\): (.*))?$", message)
        if m:
            entry = failed.setdefault(m.group(2), {"node_type": m.group(2), "times": 0, "nodes": 0,
                                                   "first": ts, "last": ts, "reason": None})
            entry["times"] += 1
            entry["nodes"] += int(m.group(1))
            entry["last"] = ts
            if m.group(3):
                entry["category"], entry["reason"] = m.group(3), m.group(4)
            continue
        m = re.match(r"Removing (\d+) nodes? of type (\S+) \((.*?)\)\.?", message)
        if m:
            removed.append({"node_type": m.group(2), "count": int(m.group(1)), "cause": m.group(3),
                            "ts": ts})
            continue
        m = re.match(r"Adding (\d+) node\(s\) of type (\S+?)\.", message)
        if m:
            entry = added.setdefault(m.group(2), {"node_type": m.group(2), "times": 0, "nodes": 0,
                                                  "first": ts, "last": ts})
            entry["times"] += 1
            entry["nodes"] += int(m.group(1))
            entry["last"] = ts
    return {"failed": sorted(failed.values(), key=lambda e: e["node_type"]), "removed": removed,
            "added": sorted(added.values(), key=lambda e: e["node_type"])}


def _head_probe(fleet, nodes, budget, gcs_address: str) -> tuple[dict | None, str | None]:
    """What monitor_here finds on the head, through the head's probe; when the probe cannot
    answer, here, if this process runs on the head (the dashboard path's job does)."""
    head = next((n for n in nodes or [] if n.get("is_head") and n.get("alive")), None)
    if head is None:
        return None, "no alive head node in the node table"
    import sys

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    answer = fleet.ask({"head": (head["node_id"], "call_here", monitor_here, gcs_address)},
                       budget.left(4.0))["head"]
    if answer.ok:
        return answer.value, None
    local = monitor_here(gcs_address)
    if local.get("monitor"):
        return local, None
    return None, f"the head's probe: {answer.kind}: {answer.error}"


def assemble(raw: dict, head: dict | None, head_error: str | None, nodes: list | None,
             now: float | None = None) -> dict:
    """The `autoscaler` section from what the GCS and the head gave (pure: unit-tested)."""
    now = time.time() if now is None else now
    head = head or {}
    monitor = head.get("monitor")
    v1 = _v1(raw.get("v1") or {}, now)
    flag = raw.get("v2_flag")
    status = raw.get("cluster_status") or {}
    state = status.get("autoscaling_state") or {}
    resource_state = status.get("cluster_resource_state") or {}
    v2_flag = flag in (b"1", "1")
    readonly = False
    if monitor:
        readonly = monitor["entrypoint"] != "kuberay" and not monitor.get("config_path")
        version = "v2" if v2_flag or monitor["entrypoint"] == "v2" else "v1"
        running = not readonly
    else:  # the head was not read: what the GCS says
        active = list(v1["active"])
        v1_live = v1["status_age_s"] is not None and v1["status_age_s"] < V1_STALE_S and \
            any(not t.startswith("node_") for t in active)
        v2_live = v2_flag and bool(state.get("autoscaler_state_version"))
        version = "v2" if v2_live else "v1" if v1_live else None
        running = bool(version)
    why = []
    why.append(f"GCS flag __autoscaler_v2_enabled={flag.decode() if isinstance(flag, bytes) else flag}")
    if v1["status_age_s"] is not None:
        why.append(f"v1 status written {v1['status_age_s']:g}s ago")
    if monitor:
        why.append(f"monitor process {monitor['entrypoint']} (pid {monitor['pid']}) on the head"
                   + (", read-only: started without --autoscaling-config, it adds and removes no "
                      "nodes" if readonly else ""))
    elif head_error:
        why.append(f"head not read ({head_error})")
    else:
        why.append("no monitor process on the head")
    if raw.get("cluster_status_error"):
        why.append(f"cluster status not read ({raw['cluster_status_error']})")
    section: dict = {"version": version if running else None, "configured_version": version,
                     "running": running, "decided_from": "; ".join(why),
                     "v1_status_age_s": v1["status_age_s"],
                     "head_read": head_error is None, "head_error": head_error,
                     "monitor": monitor, "error": None}
    if raw.get("v1", {}).get("error"):
        section["error"] = raw["v1"]["error"].decode(errors="replace")[:2000] \
            if isinstance(raw["v1"]["error"], bytes) else str(raw["v1"]["error"])[:2000]
    source = (monitor or {}).get("config_path")
    if monitor and monitor.get("entrypoint") == "kuberay":
        source = "KubeRay RayCluster (read by the autoscaler from the Kubernetes API)"
    config = config_summary(head.get("config"), source)
    section["config"] = config
    section["config_error"] = "; ".join(head.get("errors") or []) or (
        None if config or not running else
        "the node types are in the autoscaling config only, which was not readable here"
        + (": on KubeRay it is the RayCluster CR (`rldoctor lint raycluster.yaml`)"
           if monitor and monitor.get("entrypoint") == "kuberay" else ""))
    # Node states from the GCS (both versions): type, status, idle time.
    node_states = []
    for state_entry in resource_state.get("node_states") or []:
        node_id = state_entry.get("node_id") or None  # hex already (private.message_dict)
        node_type = state_entry.get("ray_node_type_name") or v1["node_type_of"].get(
            state_entry.get("instance_id") or "") or v1["node_type_of"].get(
            state_entry.get("node_ip_address") or "")
        node_states.append({"node_id": node_id, "instance_id": state_entry.get("instance_id"),
                            "ip": state_entry.get("node_ip_address"), "node_type": node_type,
                            "status": state_entry.get("status", "RUNNING"),
                            "idle_s": round(int(state_entry.get("idle_duration_ms") or 0) / 1000, 1),
                            "activity": list(state_entry.get("node_activity") or [])[:5]})
    section["node_states"] = node_states
    dead = [n for n in nodes or [] if not n.get("alive")]
    section["terminated_nodes"] = []
    for entry in head.get("terminated") or []:  # tied to the dead Ray node they ended
        match = [n for n in dead if n.get("node_id") == entry["id"]] or \
            [n for n in dead if n.get("ip") == entry["ip"]]
        section["terminated_nodes"].append({**entry, "node_id": match[0]["node_id"] if len(match) == 1 else None})
    section["idle_nodes"] = [s for s in node_states if s["status"] == "IDLE"]
    current: dict = {}
    for s in node_states:
        if s["status"] != "DEAD" and s["node_type"]:
            current[s["node_type"]] = current.get(s["node_type"], 0) + 1
    events = head.get("summary") or _launch_events(head.get("events") or [])
    section["events"] = events
    section["recent_events"] = (head.get("events") or [])[-20:]
    if version == "v2":
        section.update(_v2(state))
        for logged in events["failed"]:  # v2 keeps a failed request briefly; its log keeps them all
            reason = (f"{logged['category']}: {logged['reason']}" if logged.get("category")
                      else logged.get("reason"))
            known = [f for f in section["failed_launches"] if f["node_type"] == logged["node_type"]]
            for entry in known:  # v2's own record carries no reason (its text ends at the request id)
                entry["reason"] = entry.get("reason") or reason
                entry["count"] = max(entry.get("count") or 0, logged["times"])
                entry["since"] = logged["first"]
            if not known:
                section["failed_launches"].append({
                    "node_type": logged["node_type"], "count": logged["times"],
                    "reason": (f"{logged['category']}: {logged['reason']}" if logged.get("category")
                               else logged.get("reason")), "since": logged["first"],
                    "failed_at": logged["last"]})
    else:
        section["pending_launches"] = v1["pending_launches"]
        section["pending_nodes"] = v1["pending_nodes"]
        section["failed_launches"] = []
        for entry in v1["unavailable_types"]:
            logged = next((e for e in events["failed"] if e["node_type"] == entry["node_type"]), {})
            section["failed_launches"].append({
                "node_type": entry["node_type"], "count": logged.get("times"),
                "reason": (f"{entry['category']}: {entry['reason']}" if entry.get("category")
                           else entry.get("reason")),
                "since": logged.get("first"), "failed_at": entry.get("last_checked") or logged.get("last")})
        for logged in events["failed"]:  # a plain exception: only the event log has it
            if not any(f["node_type"] == logged["node_type"] for f in section["failed_launches"]):
                section["failed_launches"].append({
                    "node_type": logged["node_type"], "count": logged["times"],
                    "reason": (f"{logged['category']}: {logged['reason']}" if logged.get("category")
                               else None), "since": logged["first"], "failed_at": logged["last"]})
        section["failed_nodes"] = v1["failed_nodes"]
        section["infeasible"] = None  # v1 does not publish it: the checks judge against the node types
        section["v1_active"] = v1["active"]
        section["v1_launched"] = dict(v1["active"])
        section["v1_node_ids"] = v1["node_type_of"]
    types = []
    for name, spec in sorted(((config or {}).get("node_types") or {}).items()):
        types.append({"name": name, "resources": spec["resources"],
                      "min_workers": spec["min_workers"], "max_workers": spec["max_workers"],
                      "current": current.get(name, 0),
                      "head": name == (config or {}).get("head_node_type")})
    for name, count in sorted(current.items()):
        if not any(t["name"] == name for t in types):
            types.append({"name": name, "resources": None, "min_workers": None,
                          "max_workers": None, "current": count, "head": None})
    section["node_types"] = types
    return section


def collect(conn, budget, fleet, nodes: list | None) -> dict:
    from rldoctor.cluster.private import autoscaler_state

    raw = autoscaler_state(conn.gcs_address, budget.left(3.0))
    head, head_error = _head_probe(fleet, nodes, budget, conn.gcs_address)
    return assemble(raw, head, head_error, nodes)


def v1_request_resources(raw: bytes | None) -> list[dict]:
    """v1's request_resources() bundles (KV autoscaler_resource_request, a JSON list) as shapes
    with counts; [] when there is none or it was cleared."""
    if not raw:
        return []
    try:
        bundles = json.loads(raw)
    except ValueError:
        return []
    counted: list[dict] = []
    for bundle in bundles if isinstance(bundles, list) else []:
        shape = {k: float(v) for k, v in (bundle or {}).items()}
        same = next((c for c in counted if c["shape"] == shape), None)
        if same:
            same["count"] += 1
        else:
            counted.append({"shape": shape, "count": 1})
    return counted


@section("autoscaler", needs=("nodes", "probe_followup"))  # the probes answer one call at a time
def autoscaler_section(ctx) -> dict:
    return collect(ctx.conn, ctx.budget, ctx.fleet, ctx.doc.get("nodes"))
