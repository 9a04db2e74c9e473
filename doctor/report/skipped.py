"""A run without a cluster (only --target or --run): skipped checks folded by what they need.

Such a run skips every check that reads the cluster; the table and Markdown reports list
the checks that ran and one line per cause instead of a SKIPPED row each ("17 checks need
a cluster: give --address or --from"). The JSON report keeps every check entry.
"""

from __future__ import annotations

from rldoctor.snapshot import NOT_FROM_A_LIVE_CLUSTER  # no ray: the hints for --target, --run, ...

NO_CLUSTER_KINDS = ("targets", "runs", "files")
CLUSTER_HINT = "give --address or --from"


def _live(section: str) -> bool:
    return section not in NOT_FROM_A_LIVE_CLUSTER


# What to give rldoctor for the checks that read something else than a cluster.
_INPUT = {"targets": "--target MODULE:ATTR", "runs": "--run PATH", "smoke": "`rldoctor smoke-train`",
          "scaling": "`rldoctor smoke-train --scaling 1,2,4`"}


def _cause(check, snap) -> str:
    """What would feed a skipped check: "cluster", or the inputs it lacks ("--run PATH or ...")."""
    unmet = [r.split("|") for r in check.requires if not any(snap.has(s) for s in r.split("|"))]
    if all(any(_live(s) for s in alternatives) for alternatives in unmet):
        return "cluster"
    first = next(a for a in unmet if not any(_live(s) for s in a))
    return " or ".join(_INPUT.get(s, f"'{s}' data") for s in first)


def fold(results, checks, snap) -> list[dict] | None:
    """[{"codes": [...], "line": "..."}] for a run without a cluster, else None."""
    if (snap.get("source") or {}).get("kind") not in NO_CLUSTER_KINDS:
        return None
    by_code = {c.code: c for c in checks}
    groups: dict[str, list[str]] = {}
    for r in results:
        if r.status == "skipped" and r.code in by_code:
            groups.setdefault(_cause(by_code[r.code], snap), []).append(r.code)
    out = []
    cluster = groups.pop("cluster", [])
    if cluster:
        out.append({"codes": cluster, "line": f"{len(cluster)} check(s) need a cluster: "
                                              f"{CLUSTER_HINT} ({', '.join(cluster)})"})
    if groups:
        codes = [c for group in groups.values() for c in group]
        out.append({"codes": codes, "line": f"{len(codes)} check(s) need other input: " + "; ".join(
            f"{hint} ({', '.join(group)})" for hint, group in groups.items())})
    return out
