"""The live snapshot's `log_lines` section: Ray's lines the probes found in each node's logs.

Each probe reads the tails of its node's Ray logs against the catalogue of Ray's lines that
`check --from` reads a dead cluster's logs with (rldoctor.node.fact_ray_logs,
rldoctor.raylog), and answers with its hits (`hosts.<id>.ray_logs.log_lines`). This gathers
them into one section of the shape `check --from` writes, in the logs' time, so the checks
that read Ray's lines (rldoctor.checks._loglines) find in a live cluster's logs what they
find in a dead one's. Standard library only; ships to the cluster.
"""

from __future__ import annotations

from rldoctor.cluster.sections import section
from rldoctor.raylog.hits import MAX_HITS
from rldoctor.raylog.hits import section as lines_section


# Hits a live check already tells from the same lines: RLD404 reads the runtime env agent's
# failures of the node (`ray_logs.runtime_env_failures`) and names each actor, task and job.
TOLD_LIVE = {"runtime-env": "runtime_env_failures"}


def gathered(facts: dict) -> dict:
    """The `log_lines` section of the probes' answers ({node id: facts}): every node's hits
    but those its live reading already tells (TOLD_LIVE), the newest MAX_HITS when there are
    more."""
    items, files, kinds = [], 0, {}
    for node_id in sorted(facts):
        logs = ((facts[node_id] or {}).get("host") or {}).get("ray_logs") or {}
        read = logs.get("log_lines")
        if not isinstance(read, dict):
            continue
        items += [h for h in read.get("items") or []
                  if not logs.get(TOLD_LIVE.get(h.get("kind"), ""))]
        files += read.get("files") or 0
        for kind, count in (read.get("kinds") or {}).items():
            kinds[kind] = kinds.get(kind, 0) + count
    out = lines_section(items, files, kinds)
    if len(out["items"]) > MAX_HITS:
        out["items"] = out["items"][-MAX_HITS:]
        out["truncated"] = True
    return out


@section("log_lines", needs=("probe_followup",), record_of="probes")
def log_lines_of_the_probes(ctx) -> dict:
    return gathered(ctx.fleet.facts)
