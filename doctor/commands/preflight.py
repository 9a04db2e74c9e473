"""`rldoctor preflight TARGET`: will this training run on this cluster? Asked before it is submitted.

Read the training (rldoctor.inputs.training: the config, never trained), take the cluster's
snapshot with the preflight probes as its extra (rldoctor.cluster.preflight, through the GCS or,
for a dashboard address, inside the collectors' job), run the preflight area's checks
(checks/preflight), render, and return the exit code.
"""

from __future__ import annotations

import json

import click

from rldoctor.engine.registry import PREFLIGHT_AREA
from rldoctor.errors import UsageError
from rldoctor.model import Severity
from rldoctor.output import write_text

from rldoctor.cluster.preflight import SECTION, Preflight

# What the report of a preflight is made of: the nodes, the autoscaler and what the probes read
# (the sections its snapshot collects); not the timeline of past jobs or the trainings running
# now (`rldoctor check` reports those).
REPORTED_SECTIONS = ("schema", "created_at", "rldoctor_version", "source", "collectors", "notes",
                     "timing", *Preflight.sections, SECTION)


def parse_runtime_env(text: str | None) -> dict | None:
    """--runtime-env: JSON text, or a path to a JSON file; anything else is a usage error."""
    if not text:
        return None
    import os

    raw = text
    if not text.lstrip().startswith("{") and os.path.isfile(text):
        with open(text) as f:
            raw = f.read()
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"--runtime-env: not JSON (nor a JSON file): {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--runtime-env: expected a JSON object such as "
                         "'{\"working_dir\": \".\", \"pip\": [\"numpy==1.26.4\"]}'")
    return value


def _codes(registry) -> list[str]:
    return [c.code for c in registry.checks if c.area == PREFLIGHT_AREA]


def run(target, address, runtime_env, fmt, output, fail_on, timeout, ignores=(), config=None,
        verbose=False) -> int:
    from rldoctor.inputs.plan_reader import PlanLoader
    from rldoctor.install import require_ray, require_ray_for_address

    env = parse_runtime_env(runtime_env)
    require_ray("preflight (it reads your AlgorithmConfig with RLlib)")
    require_ray_for_address(address)
    from rldoctor.acquire import keep_time_for_the_join

    keep_time_for_the_join(address, timeout)  # it forks: this process goes on as the child
    # then the plan is read by a child process beside everything else (RLlib's import
    # is the longest path of a preflight: rldoctor.inputs.plan_reader); a TARGET that is no
    # path or MODULE:ATTR ends here, at once
    plan = PlanLoader(target, env, timeout_s=timeout)
    try:
        return _diagnose(plan, target, address, fmt, output, fail_on, timeout, ignores, config,
                         verbose)
    finally:
        plan.close()  # an error, or Ctrl-C, before the plan was read: the child goes too


def _diagnose(plan, target, address, fmt, output, fail_on, timeout, ignores, config,
              verbose) -> int:
    from rldoctor import snapshot as snapshots
    from rldoctor.acquire import take_snapshot
    from rldoctor.engine.pipeline import Diagnosis
    from rldoctor.engine.registry import load_registry
    from rldoctor.report.render import RENDERERS

    registry = load_registry()
    diagnosis = Diagnosis.from_options(ignores=ignores, config=config, codes=_codes(registry),
                                       registry=registry, preflight=True)
    doc = take_snapshot(address, timeout_s=timeout, leave=False, extras=(Preflight(plan),))
    plan.get()  # a TARGET that gave no config: its one line (the extra could only note it)
    snap = snapshots.validate({k: v for k, v in doc.items() if k in REPORTED_SECTIONS},
                              "live cluster")
    if not snap.has("preflight"):
        why = snap.collector("preflight").get("error") or "the probes did not run"
        snap.data.setdefault("notes", []).append(f"preflight probes failed: {why}")
    source = dict(snap.get("source") or {})
    source["target"] = target
    report = diagnosis.run(snap, source)
    report.verbose = verbose
    write_text(RENDERERS[fmt](report), output)
    if output:
        from rldoctor.report.render.text import summary_line

        click.echo(f"{summary_line(report)}; report written to {output}")
    if not report.judged:
        click.echo(f"rldoctor: nothing to judge: {report.basis['why_not']}", err=True)
    return report.exit_code(Severity.parse(fail_on))
