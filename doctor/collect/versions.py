"""Per-node facts from the probe fleet: versions and host memory.

Fills two snapshot sections: `versions` (Ray, Python, RLlib, torch, gymnasium on
the driver and every node) and `hosts` (memory, kernel OOM kills, Ray's memory
monitor settings, object store placement, /dev/shm, the listening ports, and the disks,
open-files limits and Ray's own log lines of probes.node_limits_here).
"""

from __future__ import annotations

import re

from rldoctor.collect import probes


def driver_only(mismatch_message: str) -> dict:
    """What can be said when Ray refused the driver for a version mismatch."""
    cluster = {}
    for key, pattern in (("ray", r"Ray:\s*([^\s]+)"), ("python", r"Python:\s*([^\s]+)")):
        match = re.search(pattern, mismatch_message)
        if match:
            cluster[key] = match.group(1)
    return {"driver": probes.versions_here(), "nodes": {}, "failed": {},
            "connect_error": " ".join(mismatch_message.split())[:400], "cluster": cluster}


def versions_section(fleet) -> dict:
    return {"driver": probes.versions_here(),
            "nodes": {nid: f["versions"] for nid, f in fleet.facts.items()},
            "failed": dict(fleet.failed)}


def hosts_section(fleet) -> dict:
    return {nid: f["host"] for nid, f in fleet.facts.items()}
