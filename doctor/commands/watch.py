"""`rldoctor watch`: what it does once click has parsed its options (see rldoctor.cli).

Validate the codes, the settings, the ignore file and the address before anything is
served, then run the rounds (rldoctor.watch.rounds), each diagnosed by the one pipeline
(rldoctor.engine.pipeline). Returns the exit code; errors are RldoctorError, handled by the CLI.
"""

from __future__ import annotations


def watch(address, interval, metrics_port, metrics_host, log_path, only_codes, skip_codes,
          settings, timeout, check_timeout, ignores, config) -> int:
    from rldoctor.commands._options import check_params
    from rldoctor.engine.pipeline import Diagnosis

    from rldoctor.install import require_ray_for_address

    require_ray_for_address(address)
    diagnosis = Diagnosis.from_options(only_codes, skip_codes, check_params(settings, None),
                                       ignores, config, timeout_s=check_timeout)
    from rldoctor.watch.rounds import run_watch

    return run_watch(address, interval, metrics_port, metrics_host, log_path, diagnosis, timeout)
