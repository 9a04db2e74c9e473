"""Option parsing the commands share (their click options are in rldoctor.cli): the
comma-separated code lists of --only/--skip and --set CODE.PARAM=VALUE with --zone-label.
The values are checked against the registry by rldoctor.engine.pipeline.Diagnosis."""

from __future__ import annotations

from rldoctor.errors import UsageError

ZONE_CHECKS = ("RLD201", "RLD202", "RLD203")


def codes(values: tuple[str, ...]) -> list[str]:
    """--only/--skip values: repeatable, each a comma-separated list of codes or names."""
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


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
