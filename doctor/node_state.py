"""The state of one node, decided once from the snapshot: every reader asks here.

The cluster overview's state column, RLD101 (node-dead), RLD104's raylet pings and the bundle
manifest's node rows all read `of(snap, node)`, so one report never calls a node two things.
Pure: `snap` is a snapshot document (a dict or `Snapshot`), `node` one entry of its `nodes`.

States, worst first (`RANK`), with the finer `kind` that says which evidence decided it:

    DEAD            the GCS lists it dead                               kind "dead"
    NOT ANSWERING   its raylet did not answer a ping in time            kind "silent"
                    raylet unreachable and the probe failed too         kind "gone"
                    the probe got no answer / its worker vanished       kind "no_probe"
    AUTH MISMATCH   it refused rldoctor's credentials or vice versa     kind "auth"
    ALIVE           its raylet answered the ping, after rldoctor stopped
                    waiting for it (its figures are "-")                kind "late"
                    nothing against it                                  kind "alive"

A raylet that answered late is up: RLD101 leaves it alone, RLD104 warns when the ping took
longer than its bar. (The overview used to call it NOT ANSWERING while RLD101 skipped it.)
A node whose probe answered is up even when its object store figures were not read (that
is a `not_collected` figure, not a node state).
"""

from __future__ import annotations

from dataclasses import dataclass

DEAD, NOT_ANSWERING, AUTH_MISMATCH, ALIVE = "DEAD", "NOT ANSWERING", "AUTH MISMATCH", "ALIVE"
RANK = {DEAD: 4, NOT_ANSWERING: 3, AUTH_MISMATCH: 2, ALIVE: 0}

# Words in a probe's error that say its node or worker went away under it.
_GONE_WORDS = ("NodeDied", "WorkerCrashed", "LocalRayletDied", "ActorDied")


@dataclass(frozen=True)
class NodeState:
    state: str               # one of RANK's keys
    kind: str                # which evidence decided it (see the module docstring)
    why: str | None = None   # one line for the overview's state_reason
    probe_failure: dict | None = None  # versions.failed[node], when there is one
    raylet_error: str | None = None    # the raylet's own failure, when there is one
    ping: dict | None = None            # control_plane.raylets[node], when measured


def probe_lost(failure: dict) -> bool:
    """A probe that got no answer, or whose node or worker vanished under it.

    A probe the node answered with an error (killed for memory, say) is not a sign of a
    dead node; other checks report those causes.
    """
    text = failure.get("error", "") or ""
    return failure.get("kind") in ("timeout", "lost") or any(w in text for w in _GONE_WORDS)


def of(snap, node: dict) -> NodeState:
    """The state of `node` in `snap`."""
    node_id = node.get("node_id")
    if not node.get("alive"):
        return NodeState(DEAD, "dead", node.get("death_reason") or "UNSPECIFIED")
    failure = ((snap.get("versions") or {}).get("failed") or {}).get(node_id)
    ping = ((snap.get("control_plane") or {}).get("raylets") or {}).get(node_id) or None
    if not failure:
        store = ((snap.get("object_store") or {}).get("failed") or {}).get(node_id)
        # Its probe answered, so it is up even when its store figures did not come.
        return NodeState(ALIVE, "alive", f"object store not read: {store}" if store else None,
                         raylet_error=store, ping=ping)
    kind = failure.get("kind")
    error = failure.get("error")
    if kind == "auth":
        return NodeState(AUTH_MISMATCH, "auth", error, failure)
    confirmed = failure.get("raylet")
    raylet = ((snap.get("object_store") or {}).get("failed") or {}).get(node_id) or (
        confirmed if confirmed and confirmed != "answers" else None)
    if kind == "silent":
        if ping and ping.get("ms") is not None:
            return NodeState(ALIVE, "late", f"its raylet answered a ping after {ping['ms']:.0f} "
                             "ms, too late for its figures", failure, ping=ping)
        return NodeState(NOT_ANSWERING, "silent", error, failure, raylet, ping)
    if raylet:  # two independent paths to the node failed: it is gone
        return NodeState(NOT_ANSWERING, "gone", error or raylet, failure, raylet, ping)
    if probe_lost(failure):
        return NodeState(NOT_ANSWERING, "no_probe", error, failure, ping=ping)
    return NodeState(ALIVE, "alive", None, failure, ping=ping)  # it answered, with an error


def of_id(snap, node_id: str) -> NodeState | None:
    """The state of the node with this id, None when the snapshot does not list it."""
    for node in snap.get("nodes") or []:
        if node.get("node_id") == node_id:
            return of(snap, node)
    return None
