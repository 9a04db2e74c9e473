"""The client side of `--address http(s)://HOST:PORT`: HTTP to the Ray dashboard only.

Nothing here imports ray: the machine rldoctor runs on needs neither a raylet nor the
cluster's Ray. The collectors run inside the cluster as a short Ray job with the
cluster's own Ray and Python (rldoctor.job.main running the collectors of rldoctor.cluster
and rldoctor.node, shipped as the job's package by rldoctor.dashboard.package); the
snapshot comes back in the job's logs and the checks
run here, as for any other snapshot.
"""


def is_dashboard_address(address: str | None) -> bool:
    return bool(address) and address.strip().lower().startswith(("http://", "https://"))
