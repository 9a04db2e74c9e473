"""Security posture: RLD701 (token authentication off), RLD702 (exposed Ray ports).

A Ray cluster runs code for whoever it accepts as a client. Both checks read what the
collectors saw, and nothing else: how the head answered rldoctor's first call (with or
without a token), what the dashboard reports, and each node's own socket table, read
on the node by the probe (no traffic to any other address, no port scan).
"""

from __future__ import annotations

from rldoctor.checks._endpoints import (ENTRY_POINTS, KINDS, auth_state, is_public, kind_of, reach,
                                        shown)
from rldoctor.model import Severity
from rldoctor.registry import check, fail, finding, note, warn
from rldoctor.snapshot import dig
from rldoctor.words import has_token_auth, node_of

_WHERE = {"all": "every interface", "public": "a public address", "private": "a private address"}
SHOWN_ENDPOINTS = 6  # endpoints named in a message
MAX_EVIDENCE = 50  # endpoints listed in a finding's evidence (a node with many workers has more)

# RLD701's fixes: the cluster's Ray has token authentication, or is older than it (2.52)
_HAS_TOKENS = "token authentication is off"
_NO_TOKENS = "token authentication is off, and the cluster's Ray (older than 2.52) has none"
TOKEN_FIXES = {
    _HAS_TOKENS: (
    "Turn token authentication on for every node and every client of the cluster, in one "
    "restart window: (1) on the head, `ray get-auth-token --generate` writes a token to "
    "~/.ray/auth_token and prints it; keep it in your secret store. (2) Restart every node "
    "with RAY_AUTH_MODE=token and that token in RAY_AUTH_TOKEN, or in a file named by "
    "RAY_AUTH_TOKEN_PATH: `ray stop`, then `ray start --head ...` on the head and `ray start "
    "--address HEAD:PORT ...` on the workers, each with both variables set (set "
    "RAY_AUTH_MODE=token explicitly: `ray start` without it runs without a token when it finds "
    "none). On KubeRay v1.5.1 or newer (spec.rayVersion 2.52 or newer), set "
    "`spec.authOptions.mode: token` in the RayCluster: the operator generates the token into a "
    "Secret and sets RAY_AUTH_MODE and RAY_AUTH_TOKEN in every Ray container; on older "
    "KubeRay, set both variables in every container of the head and worker groups from one "
    "Secret. (3) Give the token to every client: drivers, `ray job submit`, `ray status`, "
    "rldoctor (RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH); the dashboard asks for it in the "
    "browser. What breaks meanwhile: a node or client in the other mode is refused (a node "
    "already in token mode refuses everything that carries no token, and tasks and actors "
    "placed across the two modes die with ActorDiedError or never start; RLD105 names such "
    "nodes), and running jobs and actors do not survive the restart: checkpoint first "
    "(`algo.save_to_path()`). The token does not encrypt traffic: keep the ports off networks "
    "you do not trust (RLD702), or turn on TLS (RAY_USE_TLS=1)."),
    _NO_TOKENS: (
    "This cluster runs Ray {old}, which has no token authentication (Ray has it from "
    "2.52 on). Until it is upgraded, keep every Ray port private to the cluster's own "
    "nodes: a firewall or security group that admits only them (the GCS port, the "
    "raylet, object manager, worker and agent ports), the dashboard and the Ray Client "
    "port reached only through a tunnel such as `kubectl port-forward` or SSH, never "
    "from the internet. Then upgrade the cluster to Ray 2.52 or newer and turn token "
    "authentication on (RAY_AUTH_MODE=token and one token on every node and client; on "
    "KubeRay, `spec.authOptions.mode: token`)."),
}

# RLD702's fixes, by the group of the exposed port (_FIX_GROUP) or what else is true of the
# node: a finding's fix is its groups' cases joined, after the token's when the cluster has none
_GROUP_CASE = {
    "old_ray": "the cluster takes clients without a token, and its Ray has no token authentication",
    "token_first": "the cluster takes clients without a token",
    "dashboard": "the dashboard listens beyond localhost",
    "client_server": "the Ray Client server's port is exposed",
    "internal": "the GCS, raylet, object manager, worker or agent gRPC ports are exposed",
    "agents": "the dashboard agent's HTTP port or the runtime env agent's port is exposed",
    "read": "a metrics port is exposed",
    "user": "a port opened by code inside a Ray worker is exposed",
    "ray_other": "another Ray port is exposed",
    "public": "a node runs on a public address",
    "tls": "token authentication guards the ports without TLS",
}
PORT_FIXES = {
    _GROUP_CASE["old_ray"]: (
        "Ray {old} has no token authentication: keep these ports private to the cluster's "
        "nodes, and upgrade (RLD701 says how)."),
    _GROUP_CASE["token_first"]: "Turn token authentication on first (RLD701 says how).",
    _GROUP_CASE["dashboard"]: (
        "Bind the dashboard to localhost again (`ray start --head --dashboard-host=127.0.0.1`, "
        "Ray's default) and reach it through a tunnel (`ssh -L 8265:localhost:8265 HEAD`, "
        "`kubectl port-forward`) or an authenticating reverse proxy with TLS; never open it "
        "to the internet."),
    _GROUP_CASE["client_server"]: (
        "Keep the Ray Client port (`--ray-client-server-port`, 10001 by default) behind the "
        "firewall and reach it through a tunnel, or submit jobs instead of connecting with "
        "ray://."),
    _GROUP_CASE["internal"]: (
        "The GCS, raylet, object manager, worker and agent gRPC ports must stay reachable from "
        "the other nodes: allow them only from the cluster's own nodes in the firewall or "
        "security group (the GCS port, `--node-manager-port`, `--object-manager-port`, "
        "`--min-worker-port`/`--max-worker-port`, `--dashboard-agent-grpc-port`), never from "
        "the internet."),
    _GROUP_CASE["agents"]: (
        "The dashboard agent HTTP port (`--dashboard-agent-listen-port`) and the runtime env "
        "agent (`--runtime-env-agent-port`) serve the head and the node itself: firewall them "
        "to the cluster's nodes."),
    _GROUP_CASE["read"]: (
        "Allow the metrics ports (`--metrics-export-port`, the head's 44227 and 44217) only "
        "from your Prometheus server: they need no token."),
    _GROUP_CASE["user"]: (
        "Ports opened by code inside Ray workers (a Serve proxy, torch.distributed's store, a "
        "web UI) are not covered by Ray's token; bind them to the node's private address or "
        "firewall them."),
    _GROUP_CASE["ray_other"]: "Firewall the remaining Ray ports to the cluster's own nodes.",
    _GROUP_CASE["public"]: (
        "A node on a public address: put the cluster on a private network (`ray start "
        "--node-ip-address=<private IP>`) and reach it through a VPN or bastion."),
    _GROUP_CASE["tls"]: (
        "Token authentication does not encrypt traffic, so a token sent across an untrusted "
        "network can be read on the way: turn on TLS (RAY_USE_TLS=1 with RAY_TLS_SERVER_CERT, "
        "RAY_TLS_SERVER_KEY and RAY_TLS_CA_CERT on every node and client) or keep the ports "
        "private."),
}
_FIX_GROUP = {"dashboard": "dashboard", "client_server": "client_server", "gcs": "internal",
              "node_manager": "internal", "object_manager": "internal", "worker": "internal",
              "metrics_agent": "internal", "dashboard_agent_http": "agents",
              "runtime_env_agent": "agents", "metrics_export": "read",
              "dashboard_metrics": "read", "autoscaler_metrics": "read", "user": "user",
              "ray_other": "ray_other"}


def _who(node: dict) -> str:
    return node_of(node, head=True)


def _severity(kind_key: str, where: str, auth: str, tls: bool) -> Severity | None:
    """How bad one exposed port is: what whoever reaches it gets."""
    kind = KINDS[kind_key]
    if auth == "disabled":
        return {"code": Severity.FAIL, "read": Severity.WARN, "other": Severity.WARN,
                "user": Severity.INFO}[kind.harm]
    if where == "public":
        if kind.harm == "user" or (kind.harm == "code" and tls):
            return Severity.INFO
        return Severity.WARN
    if kind.harm == "code" and not kind.everywhere_by_default:
        return Severity.INFO
    return None  # Ray's own every-interface default, guarded by the token


def _endpoints(snap) -> tuple[dict, list]:
    """{node id: [endpoint]} for nodes whose socket table was read, and notes for the rest."""
    cluster = snap.get("cluster") or {}
    by_node, notes = {}, []
    for node in snap.alive_nodes:
        table = snap.host(node["node_id"]).get("listening")
        if not table:
            continue
        if table.get("status") != "ok":
            notes.append(note(f"node:{node['node_id']}",
                              f"{_who(node)}: socket table {table.get('status')}: "
                              f"{table.get('why') or 'no reason given'}"))
        if table.get("status") == "unavailable":
            continue
        rows = []
        public = [a for a in table.get("host_addresses") or [] if is_public(a)]
        for sock in table.get("sockets") or []:
            key = kind_of(sock, node, cluster, table.get("worker_ports"))
            address = sock.get("address") or ""
            where = reach(address, table.get("host_addresses"))
            rows.append({"endpoint": KINDS[key].label, "kind": key, "address": address,
                         "port": sock.get("port"), "reach": where,
                         "where": (f"every interface, public {', '.join(public[:3])} among them"
                                   if where == "public" and address in ("0.0.0.0", "::")
                                   else _WHERE.get(where, where)),
                         "process": sock.get("process"), "pid": sock.get("pid")})
        by_node[node["node_id"]] = (node, table, rows)
    return by_node, notes


def _rank(kind: str) -> int:
    return ENTRY_POINTS.index(kind) if kind in ENTRY_POINTS else len(ENTRY_POINTS)


def _order(row: dict):
    return (-int(row["severity"]), _rank(row["kind"]), row["port"] or 0)


def _listed(rows: list[dict]) -> str:
    """"dashboard 0.0.0.0:8265 (python dashboard.py, pid 12), ... listen on every interface"."""
    same = len({r["where"] for r in rows}) == 1
    names = ", ".join(
        f"{r['endpoint']} {shown(r['address'], r['port'])} ("
        + ("" if same else f"{r['where']}; ")
        + f"{r['process']}, pid {r['pid']})" for r in rows[:SHOWN_ENDPOINTS])
    more = len(rows) - SHOWN_ENDPOINTS
    names += f" and {more} more" if more > 0 else ""
    verb = "listens" if len(rows) == 1 else "listen"
    return names + (f" {verb} on {rows[0]['where']}" if same else f" {verb} beyond this host")


@check("RLD702", "exposed-endpoint", area="security", requires=("cluster", "hosts"),
       fixes=PORT_FIXES)
def exposed_endpoint(snap, params):
    """Ray ports on every interface or a public address, per node, with the owning process.

    Symptom:
        Nothing, until someone else uses the cluster: unknown jobs in `ray job list`,
        crypto miners on the GPUs, training data and weights copied away. Scanners look
        for the dashboard (8265), the GCS (6379) and the Ray Client server (10001): the
        ShadowRay campaign (CVE-2023-48022) took over exposed clusters through the Jobs API.

    Cause:
        Whoever reaches a Ray port of a cluster that takes clients without a token can run
        code: the dashboard submits jobs (any shell command), the GCS and the Ray Client
        server let anyone join as a driver, the raylet, object manager and worker ports take
        tasks and objects. Ray binds its GCS, raylet, object manager, worker, agent gRPC and
        metrics ports to every interface by design (the other nodes must reach them); the
        dashboard stays on localhost and the client server, the dashboard agent's HTTP port
        and the runtime env agent on the node's address unless someone widens them
        (`--dashboard-host=0.0.0.0`). Each node's probe reads the node's own socket table
        (/proc/net/tcp and tcp6, listening sockets only), finds the owning process through
        /proc/PID/fd among the node's Ray processes (the raylet and everything under it;
        on the head also the GCS, dashboard, client server and autoscaler), and names each
        port from the node's record in `ray.nodes()` and the cluster's GCS and dashboard
        addresses. A port bound to 0.0.0.0 or :: counts as public when the host has a
        public address. rldoctor never sends traffic to any address to find out.

        Severity follows what an attacker gets. Token authentication off: any port that
        runs code or moves data (dashboard, GCS, client server, raylet, object manager,
        workers, agents) on every interface or a public address is `fail`, metrics ports
        and unnamed Ray ports `warn`, ports opened by user code inside workers `info`.
        Token authentication on: a port on a public address is `warn` (the token is the
        only barrier and travels in clear text; `info` with TLS on, and metrics need no
        token at all), a dashboard, client server or agent port widened to every interface
        is `info`, and Ray's own every-interface ports are not reported (the check's notes
        count them). The finding names each port, its bind address and its process.
    """
    auth, _ = auth_state(snap.get("cluster") or {})
    by_node, notes = _endpoints(snap)
    yield from notes
    if not by_node:
        yield note("cluster", _NO_TABLES)
        return
    quiet = {}
    for node_id, (node, table, rows) in by_node.items():
        exposed, quiet[node_id] = _sorted_out(rows, auth, bool(table.get("tls")))
        if exposed:
            yield _exposed(snap, node, table, exposed, auth, len(quiet[node_id]))
    quiet = {node_id: rows for node_id, rows in quiet.items() if rows}
    if quiet:
        yield note("cluster", _QUIET.format(
            count=sum(len(rows) for rows in quiet.values()), nodes=len(quiet),
            kinds=", ".join(sorted({row["endpoint"] for rows in quiet.values() for row in rows}))),
            {"ports": {nid: [shown(r["address"], r["port"]) + " " + r["endpoint"] for r in rows]
                       for nid, rows in sorted(quiet.items())}})


# RLD702's words: a node's exposed ports, by what guards them; and what is not reported
_EXPOSED_NO_TOKEN = ("{who}: {listed}{also}, and the cluster takes clients without a token, so "
                     "whoever reaches the {endpoint} (port {port}) {gives}")
_EXPOSED_PUBLIC = "{who}: {listed}{also}; token authentication is the only barrier{clear}"
_IN_CLEAR = ", and without TLS the token travels in clear text"
_EXPOSED_GUARDED = ("{who}: {listed}{also}; token authentication guards {them}, but Ray's "
                    "default keeps {them} on localhost or the node's own address")
_ALSO_LESSER = " (and {lesser} more of lower severity, in the evidence)"
_NO_TABLES = ("no socket tables in this snapshot (the probes did not read them, or it was "
              "recorded by an older rldoctor)")
_QUIET = ("{count} port(s) on {nodes} node(s) listen on every interface, none of them public "
          "({kinds}): Ray binds its own so, and token authentication guards them (all but the "
          "metrics ports and ports opened by user code), so they are not reported")


def _sorted_out(rows, auth, tls) -> tuple[list, list]:
    """(the node's exposed rows with their severity, worst first; the rows listening on every
    interface that need no report)."""
    exposed, quiet = [], []
    for row in rows:
        if row["reach"] not in ("all", "public"):
            continue
        severity = _severity(row["kind"], row["reach"], auth, tls)
        if severity is None:
            quiet.append(row)
        else:
            exposed.append({**row, "severity": severity})
    return sorted(exposed, key=_order), quiet


def _exposed(snap, node, table, exposed, auth, not_reported):
    tls = bool(table.get("tls"))
    worst = exposed[0]["severity"]
    top = [r for r in exposed if r["severity"] == worst]
    lesser = len(exposed) - len(top)
    words = {"who": _who(node), "listed": _listed(top),
             "also": _ALSO_LESSER.format(lesser=lesser) if lesser else ""}
    if auth == "disabled":
        message = _EXPOSED_NO_TOKEN.format(**words, endpoint=top[0]["endpoint"], port=top[0]["port"],
                                           gives=KINDS[top[0]["kind"]].gives)
    elif any(r["reach"] == "public" for r in top):
        message = _EXPOSED_PUBLIC.format(**words, clear="" if tls else _IN_CLEAR)
    else:
        message = _EXPOSED_GUARDED.format(**words, them="it" if len(top) == 1 else "them")
    groups = list(dict.fromkeys(_FIX_GROUP[row["kind"]] for row in exposed))
    groups += ["public"] * any(r["reach"] == "public" for r in exposed) + ["tls"] * (auth != "disabled" and not tls)
    old = _old_ray(snap["cluster"]) if auth == "disabled" else None
    if auth == "disabled":
        groups.insert(0, "old_ray" if old else "token_first")
    fix = " ".join(PORT_FIXES[_GROUP_CASE[g]].format(old=old) for g in groups)
    evidence = {
        "node_id": node["node_id"], "ip": node.get("ip"), "is_head": node.get("is_head"),
        "token_authentication": auth, "tls": tls, "host_addresses": table.get("host_addresses"),
        "endpoints": [{**r, "severity": r["severity"].label, "gives": KINDS[r["kind"]].gives}
                      for r in exposed[:MAX_EVIDENCE]],
        "endpoints_count": len(exposed), "not_reported": not_reported,
    }
    return finding(worst, f"node:{node['node_id']}", message, evidence, fix)


def _old_ray(cluster: dict) -> str | None:
    """The cluster's Ray version when it is older than token authentication, else None."""
    version = str(dig(cluster, "ray_version", default=""))
    return version if has_token_auth(version) is False else None


def _token_fix_for(cluster: dict) -> str:
    old = _old_ray(cluster)
    return TOKEN_FIXES[_NO_TOKENS if old else _HAS_TOKENS].format(old=old)


@check("RLD701", "auth-disabled", area="security", requires=("cluster",), fixes=TOKEN_FIXES)
def auth_disabled(snap, params):
    """Ray token authentication off: the cluster accepts clients without a token.

    Symptom:
        `rldoctor check`, `ray status` and drivers join without any token; the head printed
        "Token authentication is disabled for this Ray cluster. Anyone with network access
        to the cluster can run arbitrary code and access its data." when it started.

    Cause:
        The nodes run with RAY_AUTH_MODE=disabled, or `ray start` found no token and started
        without one (a local `ray.init()` turns token mode on by itself; `ray start` only when
        a token is there). Then every client that reaches the GCS, the dashboard or the Ray
        Client server is trusted: it can submit jobs and run any code on every node. rldoctor
        knows from the head itself: its GCS answered rldoctor's first call, sent without a
        token, and the dashboard's /api/authentication_mode says "disabled". It is `fail`
        when any Ray port of the cluster listens beyond loopback (on every interface, or
        on a node's own address: the other nodes of a real cluster must reach it), `warn`
        when every port is loopback-only (a single machine, where only its own users get
        in).
    """
    cluster = snap["cluster"]
    auth, how = auth_state(cluster)
    if auth != "disabled":
        return
    by_node, _ = _endpoints(snap)
    beyond = _beyond_loopback(by_node)
    alive = snap.alive_nodes
    read_on = f"read on {len(by_node)} of {len(alive)} alive node(s)"
    evidence = {"accepts_clients_without_token": True, "how_known": how,
                "joined_with": dig(cluster, "client_auth", "mode"),
                "gcs_address": cluster.get("gcs_address"),
                "socket_tables": read_on,
                "beyond_loopback": beyond[:20], "beyond_loopback_count": len(beyond)}
    if by_node:
        first = ", ".join(f"{r['endpoint']} {shown(r['address'], r['port'])} on node "
                          f"{r['node_id'][:12]}" for r in beyond[:3])
        more = f", and {len(beyond) - 3} more" if len(beyond) > 3 else ""
        severity, said = ((fail, _AUTH_BEYOND.format(first=first, more=more)) if beyond
                          else (warn, _AUTH_LOOPBACK.format(read_on=read_on)))
    else:
        remote = [n for n in alive if n.get("ip") and reach(n["ip"], []) != "loopback"]
        evidence["node_addresses"] = [n.get("ip") for n in alive]
        severity, said = ((fail, _AUTH_REMOTE.format(
            addresses=", ".join(sorted({n["ip"] for n in remote})[:5]))) if remote else (warn, _AUTH_UNREAD))
    yield severity("cluster", _AUTH_OFF.format(known="; ".join(how) or "the cluster's own answers") + said,
                   evidence, _token_fix_for(cluster))


# RLD701's message, as data: token authentication is off, then what reaches the ports.
_AUTH_OFF = "token authentication is off: the cluster accepts clients without a token ({known})"
_AUTH_BEYOND = (", and its Ray ports listen beyond loopback ({first}{more}): anyone who reaches "
                "them can run code on every node")
_AUTH_LOOPBACK = ("; every Ray port listens on loopback only (socket tables {read_on}), so only "
                  "this machine's users and processes can get in, until a port is widened or a "
                  "node joins from another host")
_AUTH_REMOTE = (", and its nodes run on {addresses}, where their Ray ports take connections from "
                "other hosts: anyone who reaches them can run code on every node")
_AUTH_UNREAD = ("; its nodes run on loopback addresses, but the nodes' socket tables were not "
                "read, so whether a port listens on every interface is not known (Ray's GCS and "
                "raylets usually do)")


def _beyond_loopback(by_node: dict) -> list[dict]:
    """Every Ray port (not a user's) listening beyond loopback, the most harmful first."""
    beyond = [{"node_id": node_id, "ip": node.get("ip"), **row}
              for node_id, (node, _, rows) in by_node.items() for row in rows
              if row["kind"] != "user" and row["reach"] != "loopback"]
    return sorted(beyond, key=lambda r: (_rank(r["kind"]), KINDS[r["kind"]].harm != "code",
                                         r["reach"] == "private", r["node_id"], r["port"] or 0))
