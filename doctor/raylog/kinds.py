"""Which file of a Ray session's logs is what, by its name: the reader's file kinds.

The catalogue says in which kinds of file each of Ray's lines is evidence
(rldoctor.raylog.catalogue), so both readers of logs name a file's kind here: `check --from`
(rldoctor.inputs.logdir) and the probes on a live node (rldoctor.node.fact_ray_logs).
Standard library only.
"""

from __future__ import annotations

import re

# The files of a session's logs/ that the reader reads, by kind.
_KINDS = (
    ("gcs", re.compile(r"^gcs_server(\.\d+)?\.(out|err)(\.\d+)?$")),
    ("raylet", re.compile(r"^raylet(\.\d+)?\.(out|err)(\.\d+)?$")),
    ("job_driver", re.compile(r"^job-driver-(?P<sub>.+?)\.log(\.\d+)?$")),
    ("supervisor", re.compile(r"^supervisor-(?P<sub>.+?)\.log(\.\d+)?$")),
    ("worker", re.compile(r"^worker-(?P<wid>[0-9a-f]{16,})-(?P<job>[0-9a-f]+|ffffffff)-"
                          r"(?P<pid>\d+)(\.\d+)?\.(?P<stream>out|err)(\.\d+)?$")),
    ("core_worker", re.compile(r"^python-core-worker-(?P<wid>[0-9a-f]{16,})_(?P<pid>\d+)"
                               r"(\.\d+)?\.log(\.\d+)?$")),
    ("core_driver", re.compile(r"^python-core-driver-(?P<wid>[0-9a-f]{16,})_(?P<pid>\d+)"
                               r"(\.\d+)?\.log(\.\d+)?$")),
    ("events", re.compile(r"^event_(?P<source>[A-Z_]+?)(_\d+)?\.log(\.\d+)?$")),
    # older Ray (1.x) named a worker's files without its job
    ("worker", re.compile(r"^(?:io_)?worker-(?P<wid>[0-9a-f]{16,})-(?P<pid>\d+)(\.\d+)?\."
                          r"(?P<stream>out|err)(\.\d+)?$")),
    ("runtime_env", re.compile(r"^runtime_env_(?:agent|setup-(?P<job>\w+?))(\.\d+)?\."
                               r"(?:log|out|err)(\.\d+)?$")),
    ("agent", re.compile(r"^(?:dashboard_agent|agent-\d+)(\.\d+)?\.(?:log|out|err)(\.\d+)?$")),
    ("dashboard", re.compile(r"^(?:dashboard|dashboard_\w+|monitor|log_monitor)(\.\d+)?\."
                             r"(?:log|out|err)(\.\d+)?$")),
)
# The kinds only the catalogue of Ray's lines reads (rldoctor.raylog.hits).
SCAN_ONLY = ("runtime_env", "agent", "dashboard", "other", "console", "console-raylet",
             "console-gcs", "console-worker")


def classify(name: str) -> tuple[str, dict] | None:
    for kind, pattern in _KINDS:
        m = pattern.match(name)
        if m:
            return kind, {k: v for k, v in m.groupdict().items() if v is not None}
    return None


def kind_of(name: str) -> tuple[str, dict]:
    """The kind of a file by its name; "other" for a name Ray does not write."""
    return classify(name) or ("other", {})
