"""Code that runs on the cluster's nodes.

These functions are shipped to the workers by value (see `register`), so a
production cluster needs nothing of rldoctor installed. They import only the
standard library and ray, and read package versions from metadata instead of
importing torch.
"""

from __future__ import annotations

PROBED_PACKAGES = ("torch", "gymnasium")


def node_versions() -> dict:
    """Versions on the node this runs on, plus the node id it really ran on."""
    import importlib.metadata as metadata
    import importlib.util
    import platform
    import socket

    import ray

    def version_of(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    try:
        has_rllib = importlib.util.find_spec("ray.rllib") is not None
    except (ImportError, ValueError):
        has_rllib = False
    found = {
        "ray": ray.__version__,
        "python": platform.python_version(),
        "rllib": ray.__version__ if has_rllib else None,
        "hostname": socket.gethostname(),
        "node_id": ray.get_runtime_context().get_node_id(),
    }
    for dist in PROBED_PACKAGES:
        found[dist] = version_of(dist)
    return found


def register() -> None:
    """Pickle this module's functions by value, so nodes need not have rldoctor."""
    import sys

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
