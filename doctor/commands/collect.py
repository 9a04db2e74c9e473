"""`rldoctor collect`: what it does once click has parsed its options (see rldoctor.cli).

`--output FILE` writes one snapshot (rldoctor.snapshot/v1) of the live cluster; `--bundle
FILE.tar.gz` writes the incident bundle (rldoctor.bundle.build). Both take the GCS address
or the dashboard's http(s):// address (rldoctor.dashboard.remote). Each returns the line to
print; errors are RldoctorError, handled by the CLI.
"""

from __future__ import annotations

import os

from rldoctor.errors import Undiagnosable, UsageError
from rldoctor.output import write_text


def check_choice(output, bundle, force: bool = False) -> None:
    """Exactly one of --output and --bundle; an --output file that exists is refused without
    --force before anything is collected, as --bundle's is (rldoctor.bundle.writer)."""
    if bool(output) == bool(bundle):
        raise UsageError("collect: give exactly one of --output FILE (a snapshot) or "
                         "--bundle FILE.tar.gz (the incident bundle)")
    if output and not force and (os.path.isfile(output) or os.path.islink(output)):
        # a file there (or a link) is replaced only with --force; /dev/null, /dev/stdout or a
        # pipe is written into as ever (rldoctor.safe_write)
        raise Undiagnosable(f"--output {output}: {output} exists; pass --force to replace it")


def collect_snapshot_file(output: str, address, timeout: float) -> str:
    from rldoctor.install import require_ray_for_address

    require_ray_for_address(address)
    from rldoctor.snapshot import NOT_FROM_A_LIVE_CLUSTER
    from rldoctor.acquire import take_snapshot
    from rldoctor.snapshot import dumps

    doc = take_snapshot(address, timeout_s=timeout, leave=False)
    write_text(dumps(doc), output)
    failed = [k for k, v in doc.get("collectors", {}).items()
              if v.get("status") != "ok" and k not in NOT_FROM_A_LIVE_CLUSTER]
    return (f"snapshot of {len(doc.get('nodes') or [])} node(s) written to {output}"
            + (f"; not collected: {', '.join(failed)}" if failed else ""))


def collect_bundle_file(path: str, address, timeout: float, force: bool, max_size: float,
                        obfuscate: bool, ignores=(), config: str | None = None) -> str:
    """The bundle's report.json honours the mutes `check --from` the bundle would apply:
    --ignore and the team's rldoctor.toml (or --config)."""
    from rldoctor.install import require_ray_for_address

    require_ray_for_address(address)
    from rldoctor.bundle.build import write_bundle
    from rldoctor.engine.pipeline import Diagnosis

    diagnosis = Diagnosis.from_options(ignores=ignores, config=config)  # a bad file: exit 2 now
    done = write_bundle(address, path, timeout, max_bytes=int(max_size * 10**6),
                        obfuscate=obfuscate, force=force, diagnosis=diagnosis)
    return (f"bundle of {done['nodes']} node(s) written to {path}: {done['bytes'] / 1e6:.2f} MB, "
            f"{done['items_ok']} item(s) collected, {done['items_failed']} not (see "
            f"manifest.json), {done['seconds']:.1f}s"
            + (f"; obfuscation map in {done['map']} (keep it private)" if done["map"] else ""))


def collect_from_logs(directory: str, output, bundle, force: bool, max_size: float,
                      obfuscate: bool, ignores=(), config: str | None = None) -> str:
    """The snapshot (--output) or the bundle (--bundle) of the logs under `directory`; the
    bundle's report honours the mutes, as collect_bundle_file's does."""
    if bundle:
        from rldoctor.bundle.build import write_bundle_from_logs
        from rldoctor.engine.pipeline import Diagnosis

        diagnosis = Diagnosis.from_options(ignores=ignores, config=config)  # a bad file: exit 2
        done = write_bundle_from_logs(directory, bundle, max_bytes=int(max_size * 10**6),
                                      obfuscate=obfuscate, force=force, diagnosis=diagnosis)
        return (f"bundle of {done['nodes']} node(s) written to {bundle} from the logs in "
                f"{directory}: {done['bytes'] / 1e6:.2f} MB, {done['items_ok']} item(s), "
                f"{done['items_failed']} not (see manifest.json), {done['seconds']:.1f}s"
                + (f"; obfuscation map in {done['map']} (keep it private)" if done["map"] else ""))
    from rldoctor.inputs.logdir import read_logs
    from rldoctor.redact import Redactor
    from rldoctor.snapshot import dumps

    doc = read_logs(directory)
    write_text(dumps(Redactor().data(doc)), output)
    jobs = (doc.get("jobs") or {}).get("jobs") or []
    return (f"snapshot of {len(doc.get('nodes') or [])} node(s) and {len(jobs)} job(s) read "
            f"from the logs in {directory} written to {output}")
