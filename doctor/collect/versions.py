"""Versions of Ray, Python, RLlib, torch and gymnasium on the driver and on every alive node."""

from __future__ import annotations

import re

from rldoctor.collect import probes

PROBE_TIMEOUT_S = 8.0


def _driver_versions() -> dict:
    found = probes.node_versions()
    found.pop("node_id", None)
    return found


def driver_only(mismatch_message: str) -> dict:
    """What can be said when Ray refused the driver for a version mismatch."""
    import importlib.metadata as metadata
    import platform
    import socket

    def version_of(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    driver = {"ray": version_of("ray"), "python": platform.python_version(),
              "hostname": socket.gethostname()}
    for dist in probes.PROBED_PACKAGES:
        driver[dist] = version_of(dist)
    cluster = {}
    for key, pattern in (("ray", r"Ray:\s*([^\s]+)"), ("python", r"Python:\s*([^\s]+)")):
        match = re.search(pattern, mismatch_message)
        if match:
            cluster[key] = match.group(1)
    return {"driver": driver, "nodes": {}, "failed": {},
            "connect_error": " ".join(mismatch_message.split())[:400], "cluster": cluster}


def collect(conn, budget, nodes: list[dict] | None) -> dict:
    import ray

    probes.register()
    probe = ray.remote(num_cpus=0, max_retries=0)(probes.node_versions)
    if nodes is None:
        alive = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
    else:
        alive = [n["node_id"] for n in nodes if n.get("alive")]
    refs = {probe.options(label_selector={"ray.io/node-id": node_id},
                          name="rldoctor.node_versions").remote(): node_id
            for node_id in alive}
    wait_s = budget.left(PROBE_TIMEOUT_S)
    ready, not_ready = (ray.wait(list(refs), num_returns=len(refs), timeout=wait_s)
                        if refs else ([], []))
    result = {"driver": _driver_versions(), "nodes": {}, "failed": {}}
    for ref in ready:
        node_id = refs[ref]
        try:
            found = ray.get(ref, timeout=1)
        except Exception as exc:  # the node died under the probe, for example
            result["failed"][node_id] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            continue
        found.pop("node_id", None)
        result["nodes"][node_id] = found
    for ref in not_ready:
        result["failed"][refs[ref]] = f"no answer within {wait_s:.0f}s"
        try:
            ray.cancel(ref, force=True)
        except Exception:
            pass
    return result
