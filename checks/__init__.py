"""rldoctor's built-in checks: one package per area (cluster, network, memory, workers,
serialization, training, security, preflight), one module per code family inside it; the `_helpers`
here serve several areas. The lint rules (area `code`) are in rldoctor.lint.rules.

    _autoscaling.py   what the autoscaler will do for a waiting demand (RLD103, RLD108, RLD109)
    _endpoints.py     which Ray port a listening socket is, and who can reach it (RLD702)
    _loglines.py      findings from Ray's own log lines (`log_lines`), for the codes they prove
    _reach.py         reading the `reach` section (TCP connects between nodes, RLD204)
    _resources.py     resource arithmetic shared by the checks
    _rllib.py         RLlib's actors by role, and how Ray words its worker deaths
    _runs.py          a training's history: one run record for every training check

Every check is a pure function of a Snapshot; none of these modules imports ray.
"""
