"""Ray's own log lines: the catalogue and its reader, one for both sides.

    catalogue.py      Ray's own log lines as data: what each means, which releases write it
    lines.py          one log line of Ray's: its time, level, pid and what it says
    kinds.py          which file of a session's logs is what, by its name
    hits.py           the lines of one file read against the catalogue: the hits

`check --from` reads a dead cluster's files with it (rldoctor.inputs.logdir), the bundle
reader its nodes' logs, and the probes a live node's logs (rldoctor.node.fact_ray_logs): the
same lines give the same hits, and the checks the same findings. Standard library only;
shipped to the cluster and pickled by value onto the nodes with the probes.
"""
