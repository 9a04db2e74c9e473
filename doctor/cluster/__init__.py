"""The driver side: what joins a live cluster through Ray and reads it (cluster side).

    session.py        collect_snapshot / LiveSession: join, run every section found, leave
    sections.py       the collector contract: `@section(name, needs=...)` declares a section, found
                      in this folder's modules and run as soon as what it needs is read
    connect.py, auth.py, private.py   joining (addresses, versions, token), the cluster's auth mode,
                      private Ray calls (each at its one place)
    fleet.py          one probe actor per node; `ask`, the one fan-out to the probes
    nodes, actors, demands, objectstore, control_plane, network, reach, versions, runtime_envs,
    training, identity, stacks, node_logs, cluster_facts, jobs, autoscaler, log_lines   one module per
                      snapshot section
    job_table.py, task_table.py   Ray's job table and unfinished tasks, each read once per
                      snapshot and shared; bounded.py the bounded state API reads and what they cut
    raylets.py        the one fan-out to the raylets; dashboard_http.py the one dashboard client
    gather.py, logs.py, stack_targets.py   the incident bundle's items, gathered through Ray
    smoke.py          smoke-train's driver (settings, placement, the run and its figures)
    preflight.py      `rldoctor preflight`'s reads: the plan asked of every node, the env stepped

Standard library, ray and the cluster side only (tests/test_layering.py): this folder ships
to the cluster in the dashboard path (rldoctor.dashboard.package), all but smoke.py, which
runs as a driver on the client's machine.
"""
