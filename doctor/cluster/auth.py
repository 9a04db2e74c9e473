"""Which token-auth mode rldoctor joins a cluster in: the cluster's own.

A Ray client in token mode refuses every call that carries no token, the calls the
cluster's GCS makes back to the driver included. Joined in token mode to a cluster
whose nodes run with RAY_AUTH_MODE=disabled, the driver is declared dead by the GCS
and every actor it creates dies at once ("ActorDiedError: The actor died
unexpectedly"); joined without a token to a token cluster, it is refused at the door.
So rldoctor asks the cluster first: one cheap GCS call (NodeInfoGcsService.GetClusterId)
over plain gRPC, before Ray is set up in this process, sent once without a token:

- answered: the cluster accepts clients without a token; join with auth disabled,
  whatever a stale ~/.ray/auth_token or RAY_AUTH_MODE=token says (and say so);
- refused as unauthenticated: the cluster wants a token; find one the way Ray's CLI
  does (RAY_AUTH_TOKEN, the file in RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token), send it
  once more to learn whether it is this cluster's, and join in token mode;
- anything else (an old Ray, a proxy): rldoctor cannot tell; it keeps RAY_AUTH_MODE if
  the user set it, else joins without a token, the way that cannot make the cluster
  refuse its own calls to rldoctor; the report's notes say so.

Before any of this, `reachable`: is anything listening at host:port at all (the join,
rldoctor.cluster.connect, asks it too).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass, field

from rldoctor.auth_token import find_token
from rldoctor.errors import Undiagnosable

HOW_TO_POINT = ("pass --address HOST:PORT of the head's GCS (the port `ray start --head` "
                "printed, 6379 by default) or set RAY_ADDRESS")

PROBE_METHOD = "/ray.rpc.NodeInfoGcsService/GetClusterId"
PROBE_TIMEOUT_S = 5.0
GET_TOKEN = "`ray get-auth-token` on the head prints it"


@dataclass
class AuthDecision:
    mode: str  # "token" or "disabled": what rldoctor joined with
    cluster: str  # "token", "disabled" or "unknown": what the cluster wants
    token_source: str | None = None  # where the token came from, when one is used
    why: str = ""
    notes: list[str] = field(default_factory=list)  # for the report
    gcs_ms: float | None = None  # how long the head's GCS took to answer the first call

    def to_json(self) -> dict:
        return {"mode": self.mode, "cluster": self.cluster, "token_source": self.token_source,
                "why": self.why}


def ask_gcs(address: str, token: str | None, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """'ok', 'refused' (unauthenticated), 'silent' (no answer in time) or 'other: <why>'."""
    import grpc

    channel = grpc.insecure_channel(address)
    try:
        call = channel.unary_unary(PROBE_METHOD, request_serializer=lambda b: b,
                                   response_deserializer=lambda b: b)
        metadata = (("authorization", f"Bearer {token}"),) if token else ()
        call(b"", timeout=timeout_s, metadata=metadata)
        return "ok"
    except grpc.RpcError as exc:
        code = exc.code()
        if code == grpc.StatusCode.UNAUTHENTICATED:
            return "refused"
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return "silent"
        return f"other: {code.name}: {(exc.details() or '').strip()[:200]}"
    finally:
        channel.close()


def decide(address: str) -> AuthDecision:
    """Learn what the cluster at `address` wants, choose rldoctor's mode, and apply it."""
    asked = os.environ.get("RAY_AUTH_MODE")
    asked_mode = (asked or "").strip().lower() or None
    token, source = find_token()
    started = time.perf_counter()
    answer = ask_gcs(address, None)
    gcs_ms = round((time.perf_counter() - started) * 1000, 2)
    if answer == "silent":
        reachable(address, PROBE_TIMEOUT_S)  # no connection at all: says so, blames no one
        raise Undiagnosable(
            f"no answer from a Ray GCS at {address} within {PROBE_TIMEOUT_S:g}s (something "
            "accepts connections there but does not speak Ray, or the head is frozen)")
    if answer == "ok":
        decision = AuthDecision("disabled", "disabled", why=(
            f"the cluster at {address} accepts clients without a token (token authentication "
            "is off on its head)"))
        if asked_mode == "token":
            decision.notes.append(
                f"RAY_AUTH_MODE=token is set here, but {decision.why}; rldoctor joined without a "
                "token, since a client in token mode refuses the cluster's own calls back to it "
                "and every actor it starts there dies")
        elif token and asked_mode is None:
            decision.notes.append(f"the token in {source} was not used: {decision.why}")
    elif answer == "refused":
        if not token:
            where = source or "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"
            raise Undiagnosable(
                f"the Ray cluster at {address} uses token authentication and rldoctor found no "
                f"token (looked in {where}): set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH to the "
                f"token file ({GET_TOKEN})")
        if ask_gcs(address, token) == "refused":
            raise Undiagnosable(
                f"the Ray cluster at {address} refused the token from {source} (not this "
                f"cluster's token); set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH to the token file "
                f"of this cluster ({GET_TOKEN})")
        decision = AuthDecision("token", "token", token_source=source, why=(
            f"the cluster at {address} uses token authentication; the token from {source} is "
            "accepted"))
        if asked_mode == "disabled":
            decision.notes.append(f"RAY_AUTH_MODE=disabled is set here, but {decision.why}; "
                                  "rldoctor joined with that token")
    else:
        mode = asked_mode if asked_mode in ("token", "disabled") else "disabled"
        decision = AuthDecision(mode, "unknown", token_source=source if mode == "token" else None,
                                why=f"the cluster's auth mode could not be learned ({answer})")
        decision.notes.append(
            f"{decision.why}; rldoctor joined with RAY_AUTH_MODE={mode}"
            + (" as set here" if asked_mode == mode else
               ", the mode in which the cluster never refuses its own calls to rldoctor"))
    decision.gcs_ms = gcs_ms
    apply(decision)
    return decision


def apply(decision: AuthDecision) -> None:
    """Set the mode for this process (and the Ray it starts); Ray reads it when imported."""
    os.environ["RAY_AUTH_MODE"] = decision.mode
    if "ray" in sys.modules:  # already imported (e.g. to resolve --address auto): refresh it
        from rldoctor.cluster.private import refresh_auth_config

        refresh_auth_config()


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
