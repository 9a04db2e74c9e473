"""The dashboard path's name for the one dashboard HTTP client.

The client lives in rldoctor.cluster.dashboard_http (standard library only), because the
cluster side reads the dashboard with it too (cluster facts, the log route); this module is
where the client-side code (identify, upload, the collector job, the watch) takes it from.
"""

from rldoctor.cluster.dashboard_http import (  # noqa: F401 (re-exported)
    GET_TOKEN,
    REQUEST_TIMEOUT_S,
    USER_AGENT,
    Dashboard,
    DashboardError,
    DashboardRefused,
    DashboardTimeout,
    base_url,
)
