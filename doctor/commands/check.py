"""`rldoctor check`: what it does once click has parsed its options (see rldoctor.cli).

Read the input (a live cluster, a snapshot or bundle, or only --target / --run files), add
the user's targets and runs, run the selected checks, apply the mutes, render, and return the
exit code. Usage errors (unknown codes, a bad --set) raise UsageError before anything is read.
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
    from rldoctor.collect.targets import parse_target

    return [parse_target(text) for text in targets]


def validate_codes(option: str, codes: list[str], registry) -> None:
    known = {c.code for c in registry.checks} | {c.name for c in registry.checks}
    unknown = [c for c in codes if c not in known]
    if unknown:
        valid = ", ".join(c.code for c in registry.checks)
        raise UsageError(f"{option}: unknown check code(s) {', '.join(unknown)}; valid codes: {valid}")


def check_params(settings: tuple[str, ...], zone_label: str | None) -> dict:
    """--set CODE.PARAM=VALUE (values read as JSON when they parse) and --zone-label."""
    import json

    params: dict[str, dict] = {}
    for item in settings:
        key, sep, raw = item.partition("=")
        code, dot, name = key.partition(".")
        if not sep or not dot or not name:
            raise UsageError(f"--set {item!r}: expected CODE.PARAM=VALUE, e.g. RLD201.warn_ms=10")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        params.setdefault(code.strip().upper(), {})[name.strip()] = value
    if zone_label:
        for code in ZONE_CHECKS:
            params.setdefault(code, {})["zone_label"] = zone_label
    return params


ZONE_CHECKS = ("RLD201", "RLD202", "RLD203")


def validate_params(params: dict, registry) -> None:
    checks = registry.by_code()
    for code, values in params.items():
        if code not in checks:
            raise UsageError(f"--set: unknown check code {code}")
        unknown = sorted(set(values) - set(checks[code].params))
        if unknown:
            known = ", ".join(sorted(checks[code].params)) or "none"
            raise UsageError(f"--set: {code} has no setting {', '.join(unknown)}; its settings: {known}")


def run_check(address, from_file, only, skip, fmt, output, fail_on, timeout, check_timeout,
           params=None, targets=(), runs=(), ignores=(), config=None) -> int:
    from rldoctor.registry import load_registry
    from rldoctor.diagnose import diagnose
    from rldoctor.report.render import RENDERERS
    from rldoctor import snapshot as snapshots

    if address and from_file:
        raise UsageError("--address and --from are exclusive: diagnose a live cluster or a file")
    registry = load_registry()
    validate_codes("--only", only, registry)
    validate_codes("--skip", skip, registry)
    validate_params(params or {}, registry)
    selected = registry.select(only, skip)
    from rldoctor import muting

    mutes, mute_notes = muting.load(ignores, config, registry)  # a bad file stops here, exit 2

    specs = target_specs(targets)
    from rldoctor.install import require_ray, require_ray_for_address

    if specs:  # what needs a local Ray is refused before anything is read
        require_ray("--target (it imports your module and pickles it with Ray's cloudpickle)")
    if not from_file and (address or not (specs or runs)):
        require_ray_for_address(address)
    results = None
    if runs:  # read first: a path that is not a run ends here, before any cluster is joined
        from rldoctor.collect.runs import read_runs

        results = read_runs(list(runs))
    if from_file:
        snap = snapshots.load(from_file)
        source = {"kind": "snapshot", "file": str(from_file),
                  "created_at": snap.get("created_at", ""),
                  "recorded_from": (snap.get("source") or {}).get("address")}
    elif (specs or runs) and not address:  # only the user's files: no cluster is contacted
        texts = [spec.text for spec in specs] + list(runs)
        kind = "targets" if specs and not runs else ("runs" if runs and not specs else "files")
        snap = snapshots.validate(snapshots.new_document(
            {"kind": kind, "file": ", ".join(texts), "targets": [s.text for s in specs],
             "runs": list(runs)}), kind)
        source = dict(snap.get("source") or {})
    else:
        from rldoctor.dashboard.remote import take_snapshot

        snap = snapshots.validate(take_snapshot(address, timeout_s=timeout, leave=False),
                                  "live cluster")
        source = dict(snap.get("source") or {})
    if specs:
        from rldoctor.collect.targets import add_targets

        add_targets(snap.data, specs, timeout_s=timeout)
    if results is not None:
        snap.data["runs"] = results
        snap.data.setdefault("collectors", {})["runs"] = {"status": "ok"}
    report = diagnose(snap, source, selected, params, check_timeout, registry)
    muting.apply(report, mutes, mute_notes)
    write_text(RENDERERS[fmt](report), output)
    if output:
        from rldoctor.report.render.text import summary_line

        click.echo(f"{summary_line(report)}; report written to {output}")
    return report.exit_code(Severity.parse(fail_on))
