"""The report: its parts, built from the snapshot and the findings, and their rendering.

    overview.py   the cluster overview (one row per node; node states from rldoctor.node_state)
    training.py   the trainings running on the cluster, as the report shows them
    skipped.py    the checks that could not run, grouped by what they miss
    autoscaler.py the autoscaler's part (what it waits for, what it launched and removed)
    timeline.py   the incident timeline (events from rldoctor.failure_chains)
    smoke.py      the smoke run's figures
    basis.py      what the input let the report judge (JSON `verdict_basis`)
    sections/     the report sections declared with @report_section (the Training part), found
    render/       one renderer per output format, declared with @output_format and found
                  (RENDERERS; a new format is one module there)
"""
