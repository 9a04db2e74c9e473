"""Joining a cluster as a short-lived, well-behaved driver.

Every way this can go wrong that a user can cause (nothing at the address, a
port that never answers, a missing auth token, a Ray version mismatch) ends in
one Undiagnosable line, within a bounded time.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from dataclasses import dataclass

from rldoctor.cluster import private
from rldoctor.cluster.auth import HOW_TO_POINT, AuthDecision, decide, reachable
from rldoctor.errors import Undiagnosable
from rldoctor.words import first_text_line, shorten

CONNECT_TIMEOUT_S = 10.0
PREFLIGHT_TIMEOUT_S = 3.0


def tell(kind: str, text: str = "") -> None:
    """What the join's time keeper is told (the node Ray joins, a file to remove, "settled");
    the client's rldoctor.joinwatch.tell once it keeps one, else nothing."""
    pass



@dataclass
class Connection:
    address: str  # host:port of the GCS
    gcs_address: str
    dashboard_url: str | None
    namespace: str
    auth: AuthDecision

    @property
    def auth_token_in_use(self) -> bool:
        return self.auth.mode == "token"


def resolve(address: str | None) -> str:
    """The user's address (or RAY_ADDRESS, or auto) as host:port."""
    address = address or os.environ.get("RAY_ADDRESS") or "auto"
    if address.startswith(("ray://", "http://", "https://")):
        raise Undiagnosable(
            f"--address {address}: this command joins through the GCS (only `check` and "
            f"`collect` take the dashboard's http(s):// address); {HOW_TO_POINT}")
    if address in ("auto", "local"):
        from rldoctor.cluster.private import resolve_local_address

        try:
            return resolve_local_address("auto")
        except ConnectionError as exc:
            first = str(exc).split(". ")[0]
            raise Undiagnosable(
                f"no Ray cluster found on this machine for --address auto ({first}); start one "
                f"with `ray start --head` or {HOW_TO_POINT}") from None
    if ":" not in address:
        raise Undiagnosable(f"--address {address!r} is not HOST:PORT; {HOW_TO_POINT}")
    return address


def _explain_init_error(address: str, exc: BaseException) -> str:
    text = first_text_line(exc, 1000, type(exc).__name__)
    name = type(exc).__name__
    if name in ("AuthenticationError", "PermissionError") or "authentication" in text.lower() \
            or "unauthenticated" in text.lower():
        return (f"the Ray cluster at {address} refused rldoctor's credentials ({name}); it uses "
                "token authentication: set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH to the token "
                "file (`ray get-auth-token` on the head prints it)")
    return f"could not join the Ray cluster at {address}: {name}: {text}"


def _auth_refused(ray_log: str | None) -> bool:
    """Did Ray's client log that the GCS rejected us for a missing or wrong token?"""
    if not ray_log:
        return False
    try:
        with open(ray_log, errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    return "InvalidAuthToken" in text or "Unauthenticated" in text


def join(address: str, timeout_s: float = CONNECT_TIMEOUT_S, ray_log: str | None = None) -> Connection:
    """ray.init against `address`, bounded by `timeout_s` even if the peer never answers.

    The auth mode is the cluster's own, learned before Ray is set up (rldoctor.cluster.auth).
    """
    tell("gcs", address)  # the join's time keeper names this cluster's node on this machine
    reachable(address)
    auth = decide(address)
    preflight(address, auth)
    namespace = f"rldoctor-{uuid.uuid4().hex[:12]}"
    outcome: dict = {}

    def target():
        try:
            import logging

            import ray

            private.silence_driver_relay()
            ctx = ray.init(address=address, namespace=namespace, log_to_driver=False,
                           logging_level=logging.ERROR, configure_logging=True,
                           include_dashboard=None)
            outcome["ctx"] = ctx
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="rldoctor-join", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        if _auth_refused(ray_log):  # Ray retries a refused token for a long time
            raise Undiagnosable(_explain_init_error(address, PermissionError("Unauthenticated")))
        raise Undiagnosable(
            f"no answer from a Ray GCS at {address} within {timeout_s:.0f}s (something accepts "
            f"connections there but does not speak Ray); {HOW_TO_POINT}")
    if "error" in outcome:
        exc = outcome["error"]
        if "version mismatch" in str(exc).lower():
            raise VersionMismatch(str(exc), auth, cluster=versions_in_refusal(str(exc)),
                                  address=address)
        raise Undiagnosable(_explain_init_error(address, exc))
    ctx = outcome["ctx"]
    gcs = ctx.address_info.get("gcs_address") or address
    dashboard = ctx.dashboard_url or None
    return Connection(address=address, gcs_address=gcs, dashboard_url=dashboard,
                      namespace=namespace, auth=auth)


def versions_in_refusal(message: str) -> dict:
    """The cluster's Ray and Python as Ray's "Version mismatch" error names them."""
    found = {}
    for key, pattern in (("ray", r"Ray:\s*([^\s]+)"), ("python", r"Python:\s*([^\s]+)")):
        match = re.search(pattern, message)
        if match:
            found[key] = match.group(1)
    return found


class CannotJoin(Exception):
    """Ray would not take (or refused) rldoctor as a driver of this cluster.

    `auth` is the mode rldoctor had chosen to join in; `cluster` the versions the head
    recorded ({"ray", "python"}, empty when unknown); `here` this machine's.
    """

    def __init__(self, message: str, auth: AuthDecision | None = None,
                 cluster: dict | None = None, here: dict | None = None,
                 address: str | None = None):
        super().__init__(message)
        self.address = address or "this address"
        self.auth = auth
        self.cluster = cluster or {}
        self.here = here or versions_here()

    def why(self) -> str:
        """What kept rldoctor from joining, for the report's notes."""
        return shorten(self, 400)

    def one_line(self) -> str:
        """The error when the cluster has no dashboard to go through instead."""
        return (f"cannot join the Ray cluster at {self.address} as a driver: {self.why()}, and "
                "no dashboard of the cluster answers to go through instead (none where its head "
                "records one: started with --include-dashboard=false?); start the head with its "
                "dashboard, or forward its port (`kubectl port-forward "
                "svc/<cluster>-head-svc 8265`), and pass --address http://HOST:PORT")


def _both(there: dict, here: dict) -> str:
    return (f"the cluster runs Ray {there['ray']} with Python {there.get('python', '?')} and "
            f"rldoctor runs Ray {here['ray']} with Python {here['python']}")


class VersionMismatch(CannotJoin):
    """Ray refuses a driver whose Ray or Python differs from the cluster's.

    Raised before `ray.init` when the versions the head recorded in the GCS differ from
    this machine's (`preflight`), or by `ray.init` itself.
    """

    def why(self) -> str:
        if not self.cluster.get("ray"):
            return shorten(self, 400)
        return (f"{_both(self.cluster, self.here)}; Ray refuses a driver whose versions differ "
                "from the cluster's")


class NotANode(CannotJoin):
    """This machine runs none of the cluster's raylets, which a Ray driver needs on its host."""

    def why(self) -> str:
        versions = f" ({_both(self.cluster, self.here)})" if self.cluster.get("ray") else ""
        return ("this machine is not one of the cluster's nodes, and a Ray driver needs one of "
                f"its raylets on its own host{versions}")


def versions_here() -> dict:
    """This process's Ray and Python versions, as Ray computes them for its comparison."""
    try:
        from ray._private.utils import compute_version_info

        ray_version, python_version = compute_version_info()
        return {"ray": ray_version, "python": python_version}
    except (ImportError, AttributeError, ValueError, TypeError):
        import platform

        import ray

        return {"ray": ray.__version__, "python": platform.python_version()}


def _versions_differ(there: dict, here: dict) -> bool:
    """As Ray's check_version_info: the Ray version exactly, Python to the patch level
    (or the minor one, with RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL=minor)."""
    if there.get("ray") and there["ray"] != here["ray"]:
        return True
    theirs, ours = there.get("python"), here["python"]
    if not theirs:
        return False
    if os.environ.get("RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL", "patch") == "minor":
        return theirs.split(".")[:2] != ours.split(".")[:2]
    return theirs != ours


def preflight(address: str, auth: AuthDecision | None = None,
              timeout_s: float = PREFLIGHT_TIMEOUT_S) -> None:
    """What `ray.init` would refuse, found before calling it and in a few GCS calls.

    A driver of another Ray or Python than the cluster's is refused after the handshake
    (VersionMismatch), and one on a machine without a raylet of the cluster waits 60s for
    one first (NotANode). Both are read without a driver: the versions the head recorded
    in the GCS, the cluster's node table and the raylets running here. What cannot be read
    (an older GCS, no answer) leaves the decision to `ray.init`, as before.
    """
    from rldoctor.cluster.nodes import alive_ids, read_without_driver
    from rldoctor.cluster.private import local_raylet_node_ids, recorded_cluster_versions

    here = versions_here()
    try:
        there = recorded_cluster_versions(address, timeout_s)
    except Exception:
        there = {}
    if there and _versions_differ(there, here):
        raise VersionMismatch(
            f"Version mismatch: The cluster was started with: Ray: {there.get('ray')} Python: "
            f"{there.get('python')} This process was started with: Ray: {here['ray']} Python: "
            f"{here['python']}", auth, cluster=there, here=here, address=address)
    if not there:  # the GCS did not answer that: ray.init, bounded, will say what is wrong
        return
    try:
        alive = set(alive_ids(read_without_driver(address)))
        local = local_raylet_node_ids()
    except Exception:
        return
    if alive and not alive & local:
        raise NotANode(f"no raylet of the cluster at {address} runs here", auth,
                       cluster=there, here=here, address=address)


def leave() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()
