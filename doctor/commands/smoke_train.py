"""What `rldoctor smoke-train` does once click has parsed its options (see rldoctor.cli)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rldoctor.errors import UsageError
from rldoctor.model import Severity
from rldoctor.output import write_text

TRAINING_CODES = ("RLD601", "RLD602", "RLD603", "RLD604")


def _writable(option: str, path: str | None) -> None:
    if path and not Path(path).resolve().parent.is_dir():
        raise UsageError(f"{option} {path}: directory {Path(path).resolve().parent} does not exist")


def smoke_train(address, env_runners, target_return, time_budget, scaling, plot, fmt, output,
                record, lr, seed) -> int:
    from rldoctor.install import require_ray

    require_ray("smoke-train (PPO on CartPole through Ray, torch and gymnasium)")
    from rldoctor.engine.pipeline import Diagnosis
    from rldoctor.report import smoke as smoke_report
    from rldoctor.cluster import smoke
    from rldoctor.redact import redact
    from rldoctor.report.render import RENDERERS
    from rldoctor.snapshot import Snapshot, dumps

    for option, path in (("--output", output), ("--plot", plot), ("--record", record)):
        _writable(option, path)
    settings = smoke.SmokeSettings()
    if lr is not None:
        settings.lr = lr
    if seed is not None:
        settings.seed = seed
    opts = smoke.SmokeOptions(address=address, env_runners=env_runners, target_return=target_return,
                              time_budget_s=time_budget, scaling=smoke.parse_scaling(scaling),
                              settings=settings)
    # Progress goes where it does not spoil the report: stdout only for the table on a
    # terminal-bound stdout, else stderr. Ray's own output is sent to a log meanwhile,
    # so the stream is a copy of the fd taken now.
    fd = 1 if fmt in ("table", "text") and not output else 2
    stream = os.fdopen(os.dup(fd), "w", buffering=1)

    def say(line: str) -> None:
        stream.write(redact(line) + "\n")
        stream.flush()

    try:
        doc = smoke.run_smoke(opts, say)
    finally:
        sys.stdout.flush()
    if record:
        write_text(dumps(doc), record, option="--record")  # redacted, 0600, never through a link
    diagnosis = Diagnosis.from_options(codes=TRAINING_CODES, read_mutes=False, smoke_figures=True)
    source = dict(doc.get("source") or {})
    source["created_at"] = doc.get("created_at", "")
    report = diagnosis.run(Snapshot(doc), source)  # the figures are a part the renderers draw
    text = RENDERERS[fmt](report)
    if plot:
        try:
            smoke_report.plot(report.figures, plot)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--plot {plot}: cannot write: {exc}") from None
        say(f"learning curve written to {plot}")
    write_text(text, output)
    if output:
        from rldoctor.report.render.text import summary_line

        say(f"{summary_line(report)}; report written to {output}")
    stream.close()
    return report.exit_code(Severity.FAIL)
