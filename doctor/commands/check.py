"""`rldoctor check`: what it does once click has parsed its options (see rldoctor.cli).

Read the input (a live cluster, a snapshot or bundle, or only --target / --run files), add
the user's targets and runs, diagnose it (rldoctor.engine.pipeline: the selected checks, the
report's parts, the mutes), render, and return the exit code. Usage errors (unknown codes, a
bad --set) raise UsageError before anything is read.
"""

from __future__ import annotations

import click

from rldoctor.errors import UsageError
from rldoctor.model import Severity
from rldoctor.output import write_text


def target_specs(targets) -> list:
    """Parse --target values (a bad one is a usage error) without importing ray."""
    if not targets:
        return []
    from rldoctor.inputs.targets import parse_target

    return [parse_target(text) for text in targets]


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, option: str = "--since") -> float:
    """`30m`, `2h`, `1d`, `90s` (or plain seconds) -> seconds; anything else is a usage error."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(text or "").lower())
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"{option} {text!r}: expected a duration such as 30m, 2h or 1d "
                         "(a number with s, m, h or d)")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def run(address, from_file, only, skip, fmt, output, fail_on, timeout, check_timeout,
        params=None, targets=(), runs=(), ignores=(), config=None, since_s=None,
        verbose=False) -> int:
    from rldoctor.engine.pipeline import Diagnosis
    from rldoctor.report.render import RENDERERS
    from rldoctor import snapshot as snapshots

    if address and from_file:
        raise UsageError("--address and --from are exclusive: diagnose a live cluster or a file")
    if since_s is not None:
        params = dict(params or {})
        params["RLD405"] = {**params.get("RLD405", {}), "window_s": since_s}
    # unknown codes, a bad --set, a bad ignore file: exit 2 here, before anything is read
    diagnosis = Diagnosis.from_options(only, skip, params, ignores, config,
                                       timeout_s=check_timeout)
    diagnosis.window_s = since_s

    specs = target_specs(targets)
    from rldoctor.install import require_ray, require_ray_for_address

    if specs:  # what needs a local Ray is refused before anything is read
        require_ray("--target (it imports your module and pickles it with Ray's cloudpickle)")
    if not from_file and (address or not (specs or runs)):
        require_ray_for_address(address)
    results = None
    if runs:  # read first: a path that is not a run ends here, before any cluster is joined
        from rldoctor.inputs.runs import read_runs

        results = read_runs(list(runs))
    if from_file:  # what the input is, decided in one place (rldoctor.inputs.source)
        from rldoctor.inputs.source import read as read_input

        snap, source, from_runs = read_input(str(from_file), window_s=since_s)
        if from_runs is not None:
            results = (results or []) + from_runs
    elif (specs or runs) and not address:  # only the user's files: no cluster is contacted
        texts = [spec.text for spec in specs] + list(runs)
        kind = "targets" if specs and not runs else ("runs" if runs and not specs else "files")
        snap = snapshots.validate(snapshots.new_document(
            {"kind": kind, "file": ", ".join(texts), "targets": [s.text for s in specs],
             "runs": list(runs)}), kind)
        source = dict(snap.get("source") or {})
    else:
        from rldoctor.acquire import take_snapshot

        snap = snapshots.validate(take_snapshot(address, timeout_s=timeout, leave=False,
                                                window_s=since_s), "live cluster")
        source = dict(snap.get("source") or {})
    if specs:
        from rldoctor.inputs.targets import add_targets

        add_targets(snap.data, specs, timeout_s=timeout)
    if results is not None:
        snap.data["runs"] = results
        snap.data.setdefault("collectors", {})["runs"] = {"status": "ok"}
    report = diagnosis.run(snap, source)
    report.verbose = verbose
    write_text(RENDERERS[fmt](report), output)
    if output:
        from rldoctor.report.render.text import summary_line

        click.echo(f"{summary_line(report)}; report written to {output}")
    if not report.judged:  # exit 3: nothing could be diagnosed, in one line
        click.echo(f"rldoctor: nothing to judge: {report.basis['why_not']}", err=True)
    return report.exit_code(Severity.parse(fail_on))
