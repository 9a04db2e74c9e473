"""`rldoctor collect`: what it does once click has parsed its options (see rldoctor.cli).

`--output FILE` writes one snapshot (rldoctor.snapshot/v1) of the live cluster; `--bundle
FILE.tar.gz` writes the incident bundle (rldoctor.bundle.build). Both take the GCS address
or the dashboard's http(s):// address (rldoctor.dashboard.remote). Each returns the line to
print; errors are RldoctorError, handled by the CLI.
"""

from __future__ import annotations

from rldoctor.errors import UsageError
from rldoctor.output import write_text


def check_choice(output, bundle) -> None:
    if bool(output) == bool(bundle):
        raise UsageError("collect: give exactly one of --output FILE (a snapshot) or "
                         "--bundle FILE.tar.gz (the incident bundle)")


def collect_snapshot_file(output: str, address, timeout: float) -> str:
    from rldoctor.install import require_ray_for_address

    require_ray_for_address(address)
    from rldoctor.collect import NOT_FROM_A_LIVE_CLUSTER
    from rldoctor.dashboard.remote import take_snapshot
    from rldoctor.snapshot import dumps

    doc = take_snapshot(address, timeout_s=timeout, leave=False)
    write_text(dumps(doc), output)
    failed = [k for k, v in doc.get("collectors", {}).items()
              if v.get("status") != "ok" and k not in NOT_FROM_A_LIVE_CLUSTER]
    return (f"snapshot of {len(doc.get('nodes') or [])} node(s) written to {output}"
            + (f"; not collected: {', '.join(failed)}" if failed else ""))


def collect_bundle_file(path: str, address, timeout: float, force: bool, max_size: float,
                        obfuscate: bool) -> str:
    from rldoctor.install import require_ray_for_address

    require_ray_for_address(address)
    from rldoctor.bundle.build import write_bundle

    done = write_bundle(address, path, timeout, max_bytes=int(max_size * 10**6),
                        obfuscate=obfuscate, force=force)
    return (f"bundle of {done['nodes']} node(s) written to {path}: {done['bytes'] / 1e6:.2f} MB, "
            f"{done['items_ok']} item(s) collected, {done['items_failed']} not (see "
            f"manifest.json), {done['seconds']:.1f}s"
            + (f"; obfuscation map in {done['map']} (keep it private)" if done["map"] else ""))
