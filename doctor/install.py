"""Which install of rldoctor this is: the client only (`pip install rldoctor-ray`) or with the
cluster extra (`pip install 'rldoctor-ray[cluster]'`: Ray, torch, gymnasium, psutil, py-spy,
matplotlib).

The client does everything that needs no Ray on this machine: the dashboard address
(`http(s)://`, the collectors run inside the cluster with its own Ray), `check --from`,
`--run`, `lint`, `list`, `explain`. What needs a local Ray (a GCS address, `--address auto`,
`smoke-train`, `--target`) is refused by `require_ray` with one line and exit 2, naming the
extra to install or the dashboard address to use instead. Nothing here imports ray.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re

from rldoctor.errors import UsageError

# The distribution's name on the package index (`rldoctor` there is an unrelated project); the
# command and the import package stay `rldoctor`. tests/test_install_name.py keeps pyproject.toml,
# the README's install lines and this in step.
DISTRIBUTION = "rldoctor-ray"
CLUSTER_EXTRA = f"pip install '{DISTRIBUTION}[cluster]'"
CLIENT_ONLY = "none: client only"
NO_RAY_HERE = "Ray is not installed here (the client-only rldoctor)"  # how notes begin
USE_DASHBOARD = ("give the head's dashboard instead, --address http://HEAD:8265 (e.g. through "
                 "`kubectl port-forward svc/<cluster>-head-svc 8265:8265`)")


def ray_version() -> str | None:
    """The installed Ray's version, read from ray/_version.py (never imported); None without Ray."""
    spec = importlib.util.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "_version.py")
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            found = re.search(r'^version\s*=\s*"([^"]+)"', handle.read(), re.M)
    except OSError:  # a folder named ray (e.g. a checkout of Ray's sources) is not a Ray
        return None
    return found.group(1) if found else "unknown"


def installed_version() -> str | None:
    """The version pip installed under DISTRIBUTION; None when run from a checkout without one."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def version_text(version: str) -> str:
    """`rldoctor --version`: rldoctor's version (and the package it was installed as), the Ray
    it has, and Python."""
    ray = ray_version() or CLIENT_ONLY
    installed = installed_version()
    package = f" (package {DISTRIBUTION} {installed})" if installed else ""
    return (f"rldoctor {version}{package}\nray {ray}\n"
            f"python {platform.python_version()} ({platform.python_implementation()})")


def require_ray(what: str, dashboard: bool = False) -> None:
    """Refuse `what` in one line (exit 2) when this install has no Ray. `dashboard`: the
    dashboard address would do the same job, so the line names it first."""
    if ray_version() is not None:
        return
    instead = f"{USE_DASHBOARD}, or install the extra: {CLUSTER_EXTRA}" if dashboard \
        else f"install the extra: {CLUSTER_EXTRA}"
    raise UsageError(f"{what} needs Ray on this machine, and this rldoctor is the client only "
                     f"(no Ray): {instead}")


def require_ray_for_address(address: str | None) -> None:
    """A GCS address, `auto` or no address at all joins the cluster through a local Ray."""
    from rldoctor.dashboard import is_dashboard_address

    from rldoctor.address import check

    if address is not None and not address.strip():
        check(address)  # --address '': said, not taken for auto
    chosen = address or os.environ.get("RAY_ADDRESS") or None
    check(chosen, "--address" if address else "RAY_ADDRESS")  # not an address at all: exit 3
    if is_dashboard_address(chosen):
        return
    if chosen and chosen.strip().lower() != "auto":
        given = f"--address {chosen}" if address else f"RAY_ADDRESS={chosen}"
        what = f"{given} (a GCS address)"
    else:
        what = "finding the cluster on this machine (no --address, or auto)"
    require_ray(what, dashboard=True)
