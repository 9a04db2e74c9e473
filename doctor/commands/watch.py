"""`rldoctor watch`: what it does once click has parsed its options (see rldoctor.cli).

Validate the codes, the settings and the address before anything is served, then run the
rounds (rldoctor.watch). Returns the exit code; errors are RldoctorError, handled by the CLI.
"""

from __future__ import annotations


def watch(address, interval, metrics_port, metrics_host, log_path, only_codes, skip_codes,
          settings, timeout, check_timeout, ignores, config) -> int:
    from rldoctor.commands.check import check_params, validate_codes, validate_params
    from rldoctor.registry import load_registry

    registry = load_registry()
    validate_codes("--only", only_codes, registry)
    validate_codes("--skip", skip_codes, registry)
    params = check_params(settings, None)
    validate_params(params, registry)
    from rldoctor.install import require_ray_for_address

    require_ray_for_address(address)
    from rldoctor.watch import run_watch

    return run_watch(address, interval, metrics_port, metrics_host, log_path, only_codes,
                     skip_codes, ignores, config, params, timeout, check_timeout)
