"""Reading the snapshot's `reach` section (TCP connects between nodes): which Ray ports of
which node the other nodes cannot open. RLD204 reports it; RLD101 defers to it."""

from __future__ import annotations

from rldoctor.snapshot import dig

# Ray's ports of a node: name -> (what owns it, what needs it open, the `ray start` flag).
COMPONENTS = {
    "gcs": ("the GCS", "every node and driver registers with it and keeps calling it",
            "--port on the head"),
    "node_manager": ("the raylet's node manager", "task and actor leases, the GCS's health checks",
                     "--node-manager-port"),
    "object_manager": ("the raylet's object manager", "objects moving between nodes",
                       "--object-manager-port"),
    "worker": ("the worker processes", "task pushes and actor calls; a port of the worker range",
               "--min-worker-port/--max-worker-port"),
    "runtime_env_agent": ("the runtime-env agent", "setting up runtime environments",
                          "--runtime-env-agent-port"),
    "dashboard_agent_http": ("the dashboard agent (HTTP)", "jobs, logs and the state API",
                             "--dashboard-agent-listen-port"),
    "metrics_agent": ("the dashboard agent (gRPC)", "the dashboard's calls to the node",
                      "--dashboard-agent-grpc-port"),
    "metrics_export": ("the metrics exporter", "Prometheus scraping", "--metrics-export-port"),
}
# A closed port of these stops work between the nodes (tasks, actors, objects, membership).
CORE = ("gcs", "node_manager", "object_manager", "worker")
STATUS_WORDS = {
    "timeout": "timed out (something drops the packets: a firewall or security-group rule)",
    "refused": "refused (nothing listens there, or a reject rule)",
    "no-route": "no route to that address from there",
    "unreachable": "host unreachable (no answer to ARP, or a router said so)",
}


def status_words(status: str) -> str:
    return STATUS_WORDS.get(status, status)


def failures_by_target(reach: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for failure in reach.get("failures") or []:
        out.setdefault(failure["target"], []).append(failure)
    return out


def _probe_answered(snap, node_id: str, reach: dict) -> bool:
    return node_id in (reach.get("sources") or []) or node_id in (snap.get("hosts") or {})


def reach_state(snap, node_id: str) -> str | None:
    """How the connects to `node_id` went: None (no failure, or not tried), "closed" (some of
    its ports or some pairs fail while others connect: a firewall, or a port nothing listens
    on), "address" (no connect to any of its ports got through, yet its own probe ran, or no
    node even has a route to it: the address it registered with is not one the others
    reach), or "gone" (nothing got through
    and its probe did not answer either: a dead or vanished host, which RLD101 reports)."""
    reach = snap.get("reach") or {}
    if not dig(reach, "failed", node_id):
        return None
    if dig(reach, "open", node_id, default=0) > 0:
        return "closed"
    statuses = {f["status"] for f in failures_by_target(reach).get(node_id, [])}
    if _probe_answered(snap, node_id, reach) or statuses == {"no-route"}:
        return "address"  # no route to it from anywhere is an address, never a dead host
    return "gone"


def explains_silence(snap, node_id: str, kind: str | None = None) -> bool:
    """RLD204 explains why this node did not answer: no one reaches it at its address, or a
    port closed to it is one the silence needs (its node manager for a raylet that did not
    answer a ping, kind "silent"; any of CORE for a probe that did not start or answer).
    A closed metrics port does not explain a frozen raylet."""
    state = reach_state(snap, node_id)
    if state == "address":
        return True
    if state != "closed":
        return False
    closed = set(snap.field("reach", "failed", node_id) or {})
    return bool(closed & ({"node_manager"} if kind == "silent" else set(CORE)))


def own_addresses(snap, node_id: str) -> list[str] | None:
    listening = snap.host(node_id).get("listening") or {}
    return listening.get("host_addresses")
