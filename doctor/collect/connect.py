"""Joining a cluster as a short-lived, well-behaved driver.

Every way this can go wrong that a user can cause (nothing at the address, a
port that never answers, a missing auth token, a Ray version mismatch) ends in
one Undiagnosable line, within a bounded time.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from dataclasses import dataclass

from rldoctor.collect.auth import AuthDecision, decide
from rldoctor.errors import Undiagnosable

CONNECT_TIMEOUT_S = 10.0
HOW_TO_POINT = ("pass --address HOST:PORT of the head's GCS (the port `ray start --head` "
                "printed, 6379 by default) or set RAY_ADDRESS")


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
        from rldoctor.collect.private import resolve_local_address

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


def reachable(address: str, timeout_s: float = 3.0) -> None:
    """Fail fast when nothing listens at host:port."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except ValueError:
        raise Undiagnosable(f"--address {address!r}: port is not a number; {HOW_TO_POINT}") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise Undiagnosable(
            f"cannot reach a Ray cluster at {address}: {reason}; is the head running? "
            f"Start one with `ray start --head`, or {HOW_TO_POINT}") from None


def _explain_init_error(address: str, exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
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

    The auth mode is the cluster's own, learned before Ray is set up (rldoctor.collect.auth).
    """
    reachable(address)
    auth = decide(address)
    namespace = f"rldoctor-{uuid.uuid4().hex[:12]}"
    outcome: dict = {}

    def target():
        try:
            import logging

            import ray

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
            f"no answer from a Ray GCS at {address} within {timeout_s:g}s (something accepts "
            f"connections there but does not speak Ray); {HOW_TO_POINT}")
    if "error" in outcome:
        exc = outcome["error"]
        if "version mismatch" in str(exc).lower():
            raise VersionMismatch(str(exc), auth)
        raise Undiagnosable(_explain_init_error(address, exc))
    ctx = outcome["ctx"]
    gcs = ctx.address_info.get("gcs_address") or address
    dashboard = ctx.dashboard_url or None
    return Connection(address=address, gcs_address=gcs, dashboard_url=dashboard,
                      namespace=namespace, auth=auth)


class VersionMismatch(Exception):
    """Ray refused this driver because its Ray or Python differs from the cluster's.

    `auth` is the mode rldoctor had chosen to join in: the GCS, the raylets and the state
    API still answer a client in that mode (rldoctor.collect.driverless).
    """

    def __init__(self, message: str, auth: AuthDecision | None = None):
        super().__init__(message)
        self.auth = auth


def leave() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()
