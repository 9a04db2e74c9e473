"""The dashboard path's job inside the cluster (`python -m rldoctor.job.main`).

    main.py           the job's entry point: take the snapshot, print it framed, linger
    bundle.py         `collect --bundle`: gather, redact and fit the bundle's items in the cluster
    log.py            the job driver's own log file: wait for the client's stop, then delete it

Shipped with rldoctor.cluster and rldoctor.node (rldoctor.dashboard.package).
"""
