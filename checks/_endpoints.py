"""Which Ray port a listening socket is, who can reach it, and what it gives them.

The pure half of RLD701 and RLD702: the probes read each node's own socket table
(`hosts.<node>.listening`: address, port and the Ray process that owns each port);
this module names the port from the node's record (`nodes[].ports`) and the cluster's
GCS and dashboard addresses, and tells loopback, private, all-interface and public
binds apart.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

# Fixed ports of two Prometheus endpoints on the head (Ray's DASHBOARD_METRIC_PORT and
# AUTOSCALER_METRIC_PORT defaults).
DASHBOARD_METRICS_PORT = 44227


@dataclass(frozen=True)
class Kind:
    label: str
    harm: str  # "code": runs code or moves data; "read": metrics; "other"; "user": not Ray's
    gives: str  # what whoever reaches it gets when the cluster takes clients without a token
    everywhere_by_default: bool  # Ray itself binds it to every interface


KINDS = {
    "gcs": Kind("GCS", "code", "joins the cluster as a driver and runs any code on every node",
                True),
    "dashboard": Kind("dashboard", "code",
                      "submits jobs (any shell command) through the Jobs API and reads every "
                      "log, the way the ShadowRay campaign (CVE-2023-48022) took over clusters",
                      False),
    "client_server": Kind("Ray Client server", "code",
                          "connects with ray:// and runs any Python on the cluster", False),
    "dashboard_agent_http": Kind("dashboard agent HTTP", "code",
                                 "submits jobs through the agent's job API", False),
    "runtime_env_agent": Kind("runtime env agent", "code",
                              "has runtime environments (pip packages, working directories) "
                              "installed for the node's workers", False),
    "node_manager": Kind("raylet node manager", "code",
                         "leases workers and runs tasks on the node", True),
    "object_manager": Kind("object manager", "code",
                           "reads and writes the node's objects (sample batches, weights)", True),
    "worker": Kind("worker", "code", "pushes tasks to the worker process, which runs them", True),
    "metrics_agent": Kind("dashboard agent gRPC", "code", "calls the agent's internal services",
                          True),
    "metrics_export": Kind("metrics export", "read",
                           "reads the node's Prometheus metrics (job, actor and node names, "
                           "resource use); Ray's token does not cover them", True),
    "dashboard_metrics": Kind("dashboard metrics", "read",
                              "reads the dashboard's Prometheus metrics", True),
    "autoscaler_metrics": Kind("autoscaler metrics", "read",
                               "reads the autoscaler's Prometheus metrics", True),
    "ray_other": Kind("other port", "other",
                      "talks to a Ray process on a port rldoctor cannot name", False),
    "user": Kind("port opened inside a Ray worker", "user",
                 "whatever the code that opened it serves; Ray's token does not protect it",
                 False),
}
ENTRY_POINTS = ("dashboard", "gcs", "client_server")  # the documented ways in


def _port_of(address: str | None) -> int | None:
    if not address or ":" not in address:
        return None
    try:
        return int(address.rsplit(":", 1)[1])
    except ValueError:
        return None


def kind_of(sock: dict, node: dict, cluster: dict, worker_ports) -> str:
    """The KINDS key of one listening socket of `node`."""
    role, port = sock.get("role"), sock.get("port")
    ports = {v: k for k, v in (node.get("ports") or {}).items() if v}
    if node.get("metrics_export_port"):
        ports.setdefault(node["metrics_export_port"], "metrics_export")
    if role == "gcs":
        gcs_port = _port_of(cluster.get("gcs_address"))
        return "gcs" if gcs_port in (None, port) else "ray_other"
    if role == "dashboard":
        if port == _port_of(cluster.get("dashboard_url")):
            return "dashboard"
        return "dashboard_metrics" if port == DASHBOARD_METRICS_PORT else "ray_other"
    if role == "client_server":
        return "client_server"
    if role == "autoscaler":
        return "autoscaler_metrics"
    if role in ("raylet", "dashboard_agent"):
        return ports.get(port, "ray_other")
    if role == "runtime_env_agent":
        return "runtime_env_agent"
    if role == "worker":
        if not worker_ports or worker_ports[0] <= port <= worker_ports[1]:
            return "worker"
        return "user"
    if role == "worker_child":
        return "user"
    return "ray_other"


def _ip(text: str):
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped or ip


def is_public(text: str) -> bool:
    ip = _ip(text)
    return bool(ip and ip.is_global)


def reach(address: str, host_addresses: list[str]) -> str:
    """"loopback", "private" (one private address), "all" (every interface, none of them
    public) or "public" (a public address, or every interface of a host that has one)."""
    ip = _ip(address)
    if ip is None:
        return "public"
    if ip.is_unspecified:
        return "public" if any(is_public(a) for a in host_addresses or []) else "all"
    if ip.is_loopback:
        return "loopback"
    return "public" if ip.is_global else "private"


def shown(address: str, port) -> str:
    """host:port, with IPv6 addresses in brackets."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def auth_state(cluster: dict) -> tuple[str, list[str]]:
    """("disabled", "token" or "unknown", how rldoctor knows it, in sentences)."""
    client = cluster.get("client_auth") or {}
    gcs = cluster.get("gcs_address") or cluster.get("address") or "the head"
    how, said = [], set()
    if client.get("cluster") == "disabled":
        how.append(f"the head's GCS at {gcs} answered rldoctor's call without a token, so "
                   f"rldoctor joined without one")
        said.add("disabled")
    elif client.get("cluster") == "token":
        how.append(f"the head's GCS at {gcs} refused a call without a token")
        said.add("token")
    dashboard = cluster.get("auth_mode") if cluster.get("state_api") else None
    if dashboard in ("disabled", "token"):
        how.append(f"the dashboard's /api/authentication_mode says \"{dashboard}\"")
        said.add(dashboard)
    if "disabled" in said:
        return "disabled", how
    if "token" in said or cluster.get("auth_mode") == "token":
        return "token", how
    return "unknown", how
