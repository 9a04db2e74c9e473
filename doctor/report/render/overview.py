"""The cluster overview as text: a headline, then one row per node (the worst, when many).

Shared by the table and Markdown reports; the figures come from rldoctor.report.overview.
A figure that was not collected is "-".
"""

from __future__ import annotations

from rldoctor import words
from rldoctor.report.overview import folded_summary, shown_rows

DASH = "-"


def size(value) -> str:
    return words.size(value, none=DASH)


def _used_of(used, total) -> str:
    """`20.0/100.0 MiB`: one unit when both sizes share it."""
    if total is None:
        return DASH
    u, t = size(used), size(total)
    if used is not None and u.split()[-1] == t.split()[-1]:
        return f"{u.split()[0]}/{t}"
    return f"{u}/{t}"


def _spilled(value) -> str:
    return "0" if value == 0 else size(value)


def _num(value) -> str:
    return DASH if value is None else f"{value:g}"


def _pct(value) -> str:
    return DASH if value is None else f"{value:.0%}"


def _source(source: str | None) -> str:
    """'cgroup v2 at /sys/fs/cgroup/x' -> 'cgroup v2': short enough for a cell."""
    return (source or DASH).split(" at ")[0]


def headline(ov: dict) -> str:
    states = ", ".join(f"{n} {s}" for s, n in sorted(ov["states"].items())) or "none listed"
    zones = ", ".join(f"{z} ({n})" for z, n in sorted(ov["zones"].items()))
    parts = [f"{ov['nodes']} node(s) ({states})"]
    if zones:
        parts.append(f"{len(ov['zones'])} zone(s): {zones}")
    parts.append(f"CPUs {_num(ov['cpus_used'])}/{_num(ov['cpus_total'])} used")
    parts.append(f"object store {_used_of(ov['store_used_bytes'], ov['store_total_bytes'])}"
                 f" ({_pct(ov['store_used_fraction'])}), {_spilled(ov['spilled_bytes'])} spilled")
    sources = ov.get("memory_sources") or []
    if sources:
        parts.append("memory used against " + " or ".join(sources))
    if ov.get("ray_version"):
        parts.append(f"Ray {ov['ray_version']}")
    if ov.get("versions_differ"):
        parts.append(f"versions differ: {', '.join(ov['versions_differ'])}")
    return "Cluster: " + "; ".join(parts)


def columns(ov: dict, rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    mixed = len(ov.get("memory_sources") or []) > 1
    headers = ["node", "ip", "head", "zone", "state", "CPU", "store", "%", "spilled",
               "mem %", "rtt p50", "MiB/s"]
    with_versions = bool(ov.get("versions_differ"))
    with_findings = any(r["findings"] for r in rows)
    if with_versions:
        headers.append("versions")
    if with_findings:
        headers.append("findings")
    table = []
    for r in rows:
        mem = _pct(r["memory_used_fraction"])
        if mixed and r["memory_source"]:
            mem += f" of {_source(r['memory_source'])}"
        store = _used_of(r["store_used_bytes"], r["store_total_bytes"])
        line = [r["short_id"], r["ip"] or DASH, "head" if r["is_head"] else "", r["zone"] or DASH,
                r["state"], f"{_num(r['cpus_used'])}/{_num(r['cpus_total'])}", store,
                _pct(r["store_used_fraction"]), _spilled(r["spilled_bytes"]), mem,
                DASH if r["rtt_p50_ms"] is None else f"{r['rtt_p50_ms']:.2f} ms",
                DASH if r["bandwidth_mib_s"] is None else f"{r['bandwidth_mib_s']:.0f}"]
        if with_versions:
            line.append(", ".join(f"{k} {v or 'none'}" for k, v in (r.get("versions") or {}).items()))
        if with_findings:
            line.append(", ".join(r["findings"]))
        table.append(line)
    return headers, table


LOGS_PREFIX = "not in a cluster's logs"  # rldoctor.inputs.logdir.build.NOT_FROM_LOGS


def autoscaler_lines(ov: dict, indent: str) -> list[str]:
    import textwrap

    from rldoctor.report.autoscaler import line

    text = line(ov.get("autoscaler"))
    return textwrap.wrap(text, width=100, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False) if text else []


def footer(ov: dict) -> list[str]:
    lines = []
    folded = folded_summary(ov)
    if folded:
        lines.append(folded)
    missing = dict(ov.get("not_collected") or {})
    from_logs = sorted(s for s, why in missing.items() if str(why).startswith(LOGS_PREFIX))
    if from_logs:  # a report read from logs: one line, not one reason per figure
        lines.append(f"not in a cluster's logs (shown as -): {', '.join(from_logs)}; "
                     "give --address for a live cluster")
        missing = {s: why for s, why in missing.items() if s not in from_logs}
    if missing:
        lines.append("not collected (shown as -): " + "; ".join(
            f"{section}: {why}" for section, why in sorted(missing.items())))
    return lines


def table_lines(ov: dict) -> list[str]:
    from tabulate import tabulate

    import textwrap

    rows, _ = shown_rows(ov)
    out = textwrap.wrap(headline(ov), width=100, subsequent_indent="  ", break_on_hyphens=False)
    if rows:
        headers, table = columns(ov, rows)
        out += ["  " + line for line in tabulate(table, headers=headers, tablefmt="simple",
                                                 disable_numparse=True).splitlines()]
    return out + ["  " + line for line in footer(ov)] + autoscaler_lines(ov, "  ")


def markdown_lines(ov: dict, cell) -> list[str]:
    rows, _ = shown_rows(ov)
    out = [cell(headline(ov).removeprefix("Cluster: ")), ""]
    if rows:
        headers, table = columns(ov, rows)
        out += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(cell(c) for c in line) + " |" for line in table]
        out.append("")
    return out + [cell(line) + "  " for line in footer(ov) + autoscaler_lines(ov, "")]
