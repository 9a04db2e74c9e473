"""The node-side fact `versions`: Ray, Python, RLlib, torch and gymnasium of the probe's
environment, read from package metadata (never importing torch). Standard library only.
"""

from __future__ import annotations

from rldoctor.node.facts import fact

PROBED_PACKAGES = ("torch", "gymnasium")


@fact("versions", part="node")
def versions_here() -> dict:
    """Ray, Python, RLlib, torch and gymnasium versions of this process's environment."""
    import importlib.metadata as metadata
    import importlib.util
    import platform

    def version_of(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    ray_version = version_of("ray")
    try:
        has_rllib = importlib.util.find_spec("ray.rllib") is not None
    except (ImportError, ValueError):
        has_rllib = False
    found = {"ray": ray_version, "python": platform.python_version(),
             "rllib": ray_version if has_rllib else None}
    for dist in PROBED_PACKAGES:
        found[dist] = version_of(dist)
    return found
