"""`rldoctor watch`: one round after another, with /metrics and a transitions log (client side).

    rounds.py         the rounds: run_watch, the GCS path's child process, the round loop
    gcs_child.py      the child that holds the Ray connection and the probes (GCS address)
    dashboard_rounds.py   one short job per round through the dashboard address
    metrics.py        /metrics (Prometheus)
    transitions.py    the opened/resolved JSON-lines log
"""
