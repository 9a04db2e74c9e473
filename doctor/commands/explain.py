"""`rldoctor explain CODE`: one check's Symptom, Cause, Fix, common advice and settings."""

from __future__ import annotations

from rldoctor.errors import UsageError


def explain(code: str) -> str:
    """The explanation of the check named by `code` (its code or its name, any case)."""
    from rldoctor.engine.docs import explanation
    from rldoctor.engine.registry import load_registry

    registry = load_registry()
    wanted = code.strip()
    found = next((c for c in registry.checks
                  if c.code.lower() == wanted.lower() or c.name == wanted.lower()), None)
    if found is None:
        valid = ", ".join(c.code for c in registry.checks)
        raise UsageError(f"unknown check {code!r}; valid codes: {valid}")
    return explanation(found)
