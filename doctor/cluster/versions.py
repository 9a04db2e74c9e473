"""Per-node facts from the probe fleet: versions and host memory.

Fills two snapshot sections: `versions` (Ray, Python, RLlib, torch, gymnasium on
the driver and every node) and `hosts` (memory, kernel OOM kills, Ray's memory
monitor settings, object store placement, /dev/shm, the listening ports, and the disks,
open-files limits and Ray's own log lines: every node-side fact, rldoctor.node.facts).
"""

from __future__ import annotations

from rldoctor.node.fact_versions import versions_here
from rldoctor.cluster.sections import section


def versions_section(fleet) -> dict:
    return {"driver": versions_here(),
            "nodes": {nid: f["versions"] for nid, f in fleet.facts.items()},
            "failed": dict(fleet.failed)}


def hosts_section(fleet) -> dict:
    """Each node's host facts; the hits of its Ray lines go to the `log_lines` section
    (rldoctor.cluster.log_lines), not here a second time."""
    return {nid: _without_hits(f["host"]) for nid, f in fleet.facts.items()}


def _without_hits(host: dict) -> dict:
    logs = host.get("ray_logs")
    if not isinstance(logs, dict) or "log_lines" not in logs:
        return host
    return {**host, "ray_logs": {k: v for k, v in logs.items() if k != "log_lines"}}


@section("versions", needs=("probe_followup",), record_of="probes")
def versions_of_the_probes(ctx) -> dict:
    return versions_section(ctx.fleet)


@section("hosts", needs=("probe_followup",), record_of="probes")
def hosts_of_the_probes(ctx) -> dict:
    return hosts_section(ctx.fleet)
