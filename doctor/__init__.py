"""rldoctor: the on-call doctor for Ray RLlib clusters.

By where the code runs (docs/architecture.md has every module, tests/test_layering.py the arrows):

    cli.py, __main__.py, commands/   the command line: options and the one error wrapper (cli),
                      what each command does (commands/)
    engine/           the diagnosis pipeline (registry, runner, muting, Diagnosis); registry.py
                      is the check API's public path for plugins
    report/           the report's parts and render/ (one renderer per format); model.py the words
                      of a report (severities, findings, results), output.py where it goes
    acquire.py, address.py, install.py, joinwatch.py   reaching a live cluster: where a snapshot
                      comes from, --address judged first, what needs a local Ray, a bound on the join
    cluster/, node/, job/   the cluster side: the driver that joins, the code on the nodes, the
                      dashboard path's job (shipped to the cluster)
    dashboard/        the client side of the dashboard address (HTTP only)
    inputs/           inputs that need no cluster (--run, --target, --from files and log dirs)
    raylog/           Ray's own log lines: the catalogue and its line reader, stdlib-only and
                      shared by --from, the bundle reader and the probes on live nodes
    bundle/           the incident bundle; lint/ `rldoctor lint`; watch/ `rldoctor watch`
    snapshot.py, snapshot_shape.py, jsonread.py, shape.py   reading a snapshot file within bounds,
                      its shape and per-node views; snapshot_document.py the document the
                      collectors start (shared with the cluster side)
    failure_chains.py, worker_exits.py, node_state.py   the snapshot-side library checks and
                      reports share: why a job failed, which worker ends were asked for, a node's
                      one state
    words.py, metric_numbers.py, rllib_roles.py, errors.py, redact.py, auth_token.py   stdlib-only
                      and shared with the cluster side: the vocabulary, a training's numbers,
                      RLlib's roles, the errors a user can cause, what is masked, Ray's token
    cache.py, safe_write.py   what rldoctor keeps on this machine, and how every file is written
"""

__version__ = "0.1.0"
