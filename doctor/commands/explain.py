"""`rldoctor explain CODE`: one check's Symptom, Cause, Fix, common advice and settings."""

from __future__ import annotations

from rldoctor.errors import UsageError


def explain(code: str) -> str:
    """The explanation of the check named by `code` (its code or its name, any case)."""
    from rldoctor.engine.docs import explanation
    from rldoctor.engine.registry import load_registry

    registry = load_registry()
    wanted = code.strip()
    if "/" in wanted:  # CODE/RULE: one row of a check with rules
        found, rule_id = registry.selector(wanted, "explain")
        rule = found.rules[rule_id]
        return "\n".join([f"{found.code}/{rule.id} ({found.name}, {rule.severity})", "",
                          rule.summary, "", rule.text, "",
                          f"The check it belongs to: rldoctor explain {found.code}; mute this rule "
                          f"alone with --ignore {found.code}/{rule.id} or code = "
                          f"\"{found.code}/{rule.id}\" in rldoctor.toml."])
    found = next((c for c in registry.checks
                  if c.code.lower() == wanted.lower() or c.name == wanted.lower()), None)
    if found is None:
        valid = ", ".join(c.code for c in registry.checks)
        raise UsageError(f"unknown check {code!r}; valid codes: {valid}")
    return explanation(found)
