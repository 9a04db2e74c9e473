"""Nodes that cannot start workers, and Ray processes near their open-files limit: RLD106, RLD107."""

from __future__ import annotations

from rldoctor.checks import _loglines
from rldoctor.registry import check, fail, warn
from rldoctor.snapshot import dig

RAY_DOCS_NOFILE = 65535  # Ray's documentation: `ulimit -n` of at least this for `ray start`
# Files a Ray control-plane process holds for each worker process of its scope (the cluster's
# for the GCS, the node's for a raylet): its connections, pipes and log files. Measured on the
# pinned Ray: 12 zero-CPU actors and a driver added 27 files to the GCS and 49 to their raylet.
FDS_PER_WORKER = {"gcs": 2, "raylet": 4}
# Worker processes a control-plane limit must leave room for, even on a small cluster: an
# RLlib run with a few hundred env runners and their tasks.
MIN_WORKER_HEADROOM = 1000
GROWTH = 4  # ... and this many times the workers running now


def _where(snap, node_id: str) -> str:
    return snap.label(node_id)


NOFILE_FIXES = {"a limit under what the cluster needs": (
    "Raise the open-files limit of the processes that run `ray start` (the GCS, raylets and "
    "workers inherit it) to at least 65535, as Ray's documentation asks, and restart the node: "
    "in a shell `ulimit -n 65535` (the hard limit too: /etc/security/limits.conf `nofile`) "
    "before `ray start`; under systemd `LimitNOFILE=65535` in the unit; in Docker "
    "`--ulimit nofile=65535:65535`; on Kubernetes the container runtime's default or KubeRay's "
    "RAY_START_ULIMIT_OPEN_FILES. Check with `cat /proc/$(pgrep -f gcs_server)/limits`."
)}


@check("RLD107", "open-files-limit", area="cluster", requires=("hosts|logged_host_faults",),
       params={"fail_fraction": 0.80}, fixes=NOFILE_FIXES)
@_loglines.also("RLD107", needs=("hosts",))
def open_files_limit(snap, params):
    """A Ray process near its open-files limit, or a control-plane limit the cluster will outgrow.

    Symptom:
        The GCS logs "Failed accept4: Too many open files" and stops taking connections;
        raylets then log "Failed to connect to GCS ... within 5 seconds" and nodes drop out;
        workers fail with "Too many open files" (OSError 24) when they open sockets or files.

    Cause:
        Every worker, driver and node holds connections, pipes and log files in the GCS and
        in its raylet. A limit of 1024 (a common systemd and container default) is reached by a
        cluster of a few hundred workers; the processes inherit the limit of the shell or unit
        that ran `ray start`.
    """
    hosts = snap["hosts"] or {}
    workers = {n: dig(h, "open_files", "workers_total") or 0 for n, h in hosts.items()}
    cluster_workers = sum(workers.values())
    for node_id, host in sorted(hosts.items()):
        table = host.get("open_files") or {}
        said = dig(host, "ray_logs", "signals", "too_many_open_files")
        for proc in table.get("processes") or []:
            soft, used = proc.get("soft"), proc.get("open") or 0
            if not soft:
                continue
            evidence = {"node_id": node_id, "pid": proc["pid"], "role": proc["role"],
                        "process": proc.get("name"), "soft_limit": soft,
                        "hard_limit": proc.get("hard"), "open_files": used,
                        "used_fraction": round(used / soft, 3), "ray_log": said}
            quote = (f'; Ray logged "Too many open files" {said["count"]}x: "{said["lines"][-1][-200:]}"'
                     if said and proc["role"] in ("gcs", "raylet") else "")
            what = f"{proc['role']} (pid {proc['pid']}, {proc.get('name')}) on {_where(snap, node_id)}"
            if used >= params["fail_fraction"] * soft:
                yield fail(f"node:{node_id}",
                           f"{what} has {used} files open of its limit of {soft} "
                           f"({used / soft:.0%}){quote}", evidence, NOFILE_FIXES["a limit under what the cluster needs"].format())
                continue
            if proc["role"] not in FDS_PER_WORKER or soft >= RAY_DOCS_NOFILE:
                continue
            scope = cluster_workers if proc["role"] == "gcs" else workers.get(node_id, 0)
            room = (soft - used) // FDS_PER_WORKER[proc["role"]]
            wanted = max(MIN_WORKER_HEADROOM, GROWTH * scope)
            if room < wanted or said:
                yield warn(
                    f"node:{node_id}",
                    f"{what} runs with an open-files limit of {soft} (Ray's documentation asks for "
                    f"at least {RAY_DOCS_NOFILE}): it has {used} open and room for about {room} more "
                    f"worker processes at ~{FDS_PER_WORKER[proc['role']]} files each, fewer than the "
                    f"{wanted} this cluster ({scope} worker(s) {'in all' if proc['role'] == 'gcs' else 'on the node'} "
                    f"now) should be able to grow to{quote}",
                    {**evidence, "worker_room": room, "workers_wanted": wanted,
                     "workers_now": scope, "fds_per_worker": FDS_PER_WORKER[proc["role"]]},
                    NOFILE_FIXES["a limit under what the cluster needs"].format())


NOT_STARTING_FIXES = {"workers that do not register": (
    "The node is alive but runs nothing: tasks and actors placed on it wait forever. On that "
    "node read `python-core-worker-*.log` and `worker-*.err` of the newest worker pids (the pid "
    "in Ray's line) and `raylet.out` (`ray logs raylet.out --node-id {node_id}`); `py-spy dump "
    "--pid <pid>` shows where a hanging worker is stuck (an import from a slow network file "
    "system, a sitecustomize or .pth hook, a broken Python environment on that node). A slow "
    "but healthy start needs a longer RAY_worker_register_timeout_seconds (default 60) on "
    "`ray start`; \"No available ports\" needs a wider worker port range "
    "(`--min-worker-port` / `--max-worker-port`). Drain the node (`ray drain-node`) until fixed."
)}


def _raylet_lines(snap, node_id: str) -> tuple[dict, str]:
    """(signals from the node's raylet log, how they were read): by the probe, or from outside."""
    outside = dig(snap.probe_failure(node_id), "ray_logs", "signals") is not None
    return snap.log_signals(node_id), ("read through the dashboard: rldoctor's probe could not "
                                       "start there" if outside else "read by rldoctor's probe on the node")


@check("RLD106", "workers-not-starting", area="cluster", requires=("nodes",),
       fixes=NOT_STARTING_FIXES)
def workers_not_starting(snap, params):
    """A node whose raylet answers but whose worker processes never register, with Ray's own line.

    Symptom:
        Tasks and actors placed on one node never start; the raylet logs "Some workers of the
        worker process(<pid>) have not registered within the timeout. The process is still
        alive, probably it's hanging during start." (or "... is dead, probably it crashed
        during start"), or "No available ports"; rldoctor's own zero-CPU probe never starts
        there while the raylet answers pings.

    Cause:
        Worker processes of that node hang or die before they register with the raylet: an
        import from a slow or hung network file system, a sitecustomize or .pth hook, a
        broken Python environment on that node, CPU starvation at a start-up burst, or an
        exhausted worker port range.
    """
    for node in snap.alive_nodes:
        node_id = node["node_id"]
        signals, how = _raylet_lines(snap, node_id)
        hung = signals.get("workers_not_registered")
        ports = signals.get("no_available_ports")
        if not hung and not ports:
            continue
        probe = snap.probe_failure(node_id)
        never_started = probe.get("raylet") == "answers"
        said = []
        for name, found in (("", hung), ("", ports)):
            if found:
                said.append(f'{found["count"]}x "{found["lines"][-1][-300:]}"')
        message = (f"{_where(snap, node_id)} is alive (its raylet answers) but "
                   + ("cannot start a worker: rldoctor's probe never started there, and "
                      if never_started else "its workers fail to register: ")
                   + "Ray's raylet says " + "; ".join(said))
        evidence = {"node_id": node_id, "ip": node.get("ip"), "raylet_log": signals, "read": how,
                    "probe_error": probe.get("error"), "raylet": probe.get("raylet")}
        yield (fail if never_started else warn)(f"node:{node_id}", message, evidence,
                                               NOT_STARTING_FIXES["workers that do not register"].format(node_id=node_id))
