"""The client side of `--address http(s)://HOST:PORT`: HTTP to the Ray dashboard only.

Nothing here imports ray: the machine rldoctor runs on needs neither a raylet nor the
cluster's Ray. The collectors run inside the cluster as a short Ray job with the
cluster's own Ray and Python (rldoctor.job.main running the collectors of rldoctor.cluster
and rldoctor.node, shipped as the job's package by rldoctor.dashboard.package); the
snapshot comes back in the job's logs and the checks
run here, as for any other snapshot.

    http.py           the one dashboard HTTP client (rldoctor.cluster.dashboard_http)
    cluster_info.py   what the dashboard says about its cluster (version, auth) before anything runs
    package.py        the zip of the cluster side; shipped_source.py what a module loses on the
                      way in (docstrings, comments; lines kept)
    job.py            upload, submit, read the output while it runs, stop, delete
    remote.py         a snapshot through the job; bundle.py the bundle's items through the job
"""


def is_dashboard_address(address: str | None) -> bool:
    return bool(address) and address.strip().lower().startswith(("http://", "https://"))
