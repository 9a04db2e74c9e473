"""Ray's own words from a node whose probe could not start (RLD106).

A node whose raylet answers but whose workers never register cannot run rldoctor's
probe, so its raylet log is read from outside, through the dashboard's log route
(the node's dashboard agent is not a worker and still serves it). The lines are matched
against the catalogue of Ray's lines the probes read with (fact_ray_logs.log_signals).
"""

from __future__ import annotations

import time

from rldoctor.errors import first_line
from rldoctor.node import fact_ray_logs

TAIL_LINES = 2000
RAYLET_LOGS = ("raylet", ".out", ".err")


def _raylet_files(names: list[str]) -> list[str]:
    return [n for n in names if "/" not in n and n.startswith(RAYLET_LOGS[0])
            and n.endswith(RAYLET_LOGS[1:])]


def raylet_signals(route, node_id: str, deadline: float, own: str | None = None) -> dict:
    """{"signals": {...}, "files": [...]} from the raylet log(s) of `node_id`, or {"error"}.

    Nodes that share one log folder (several nodes on one host) each write raylet.N.out and
    raylet.N.err, N as in the name of their raylet's socket (`own`: raylet, raylet.1, ...,
    from the GCS's node table): those two are read, first and alone. Without that name, a
    file is this node's when it names the node (its periodic state dump: "Node ID: <id>").
    """
    try:
        names = _raylet_files(route.list_files(node_id))
    except Exception as exc:
        return {"error": f"log listing: {first_line(exc, 200)}"}
    mine = [n for n in names if own and n in (f"{own}.out", f"{own}.err")]
    if mine:
        names = sorted(mine, key=lambda n: not n.endswith(".err"))  # .err: ERROR lines only, short
    texts = {}
    for name in names:
        if time.monotonic() > deadline:
            break
        try:
            data, _ = route.tail(node_id, name, TAIL_LINES, fact_ray_logs.LOG_TAIL_BYTES)
        except Exception as exc:
            texts[name] = ("", first_line(exc, 200))
            continue
        texts[name] = (data.decode("utf-8", errors="replace"), None)
    outs = [n for n in texts if n.endswith(".out")]
    if len(outs) > 1 and not mine:  # a shared folder: keep the files of the raylet naming this node
        mine = [n for n in outs if f"Node ID: {node_id}" in texts[n][0]]
        suffixes = {n[:-4] for n in mine}
        texts = {n: t for n, t in texts.items() if n[:-4] in suffixes}
    signals, files, errors = {}, [], []
    for name, (text, error) in sorted(texts.items()):
        if error:
            errors.append(f"{name}: {error}")
            continue
        files.append(name)
        for key, found in fact_ray_logs.log_signals(text).items():
            if key not in signals or found["count"] > signals[key]["count"]:
                signals[key] = dict(found, file=name)
    out = {"signals": signals, "files": files}
    if errors:
        out["errors"] = errors[:5]
    return out


def read_for_failed_probes(doc: dict, fleet, deadline: float) -> None:
    """Add `ray_logs` to every probe failure whose node's raylet still answers."""
    from rldoctor.cluster.logs import LogRoute
    from rldoctor.cluster.private import http_auth_headers

    url = (doc.get("cluster") or {}).get("dashboard_url")
    targets = [n for n, f in fleet.failed.items() if f.get("raylet") == "answers"]
    sockets = {n.get("node_id"): n.get("raylet_socket") for n in doc.get("nodes") or []}
    if not targets:
        return
    if not url:
        for node_id in targets:
            fleet.failed[node_id]["ray_logs"] = {"error": "no dashboard: its logs cannot be read"}
        return
    route = LogRoute(url, http_auth_headers(), timeout_s=min(3.0, max(0.5, deadline - time.monotonic())))
    for node_id in targets:
        fleet.failed[node_id]["ray_logs"] = raylet_signals(route, node_id, deadline,
                                                           sockets.get(node_id))
