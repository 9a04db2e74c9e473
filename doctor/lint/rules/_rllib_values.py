"""What a stale setting does for the value it is given, when that value is not written out.

Some rows of the table harm only for some values: `local_mode` raises only when true,
`num_gpus` is ignored on the new API stack but 0 asks for nothing anyway,
`framework` breaks only for "tf"/"tf2". When the value is a literal, the row's
severity follows it. When it is a name or an argument (`local_mode=args.local_mode`),
the linter knows at most the literal values assigned to it in the file
(`rldoctor.lint.value_flow`): if every one of them is harmful the finding stands; if
every one is harmless it is the harmless case; otherwise, or when nothing is known,
the finding becomes an `info` note that says what each value does.
"""

from __future__ import annotations

import json

from rldoctor.lint.rules.table import Row


def _shown(value) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _others(inert: tuple) -> str:
    if all(isinstance(v, bool) for v in inert):
        return "a true value" if inert == (False,) else "a false value"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in inert):
        return "a value above " + _shown(inert[0])
    return "any value but " + " or ".join(_shown(v) for v in inert)


def _known(facts: dict) -> tuple[list, bool]:
    return list(facts.get("values") or []), bool(facts.get("values_complete"))


def inert_verdict(row: Row, facts: dict, says: str) -> tuple[str, str | None]:
    """(severity, what each value does or None) for a row with harmless (`inert`) values."""
    if facts.get("literal"):
        if row.inert and facts.get("value") in row.inert and row.severity == "fail":
            return "warn", (f"does nothing with {_shown(facts.get('value'))}, a leftover to drop "
                            f"(with {_others(row.inert)} it {says})")
        return row.severity, None
    if not row.inert:
        return row.severity, None
    values, complete = _known(facts)
    if complete and values:
        if all(v in row.inert for v in values):
            return ("warn" if row.severity == "fail" else row.severity), None
        if not any(v in row.inert for v in values):
            return row.severity, None
    seen = f" (it may be {', '.join(_shown(v) for v in values)})" if values else ""
    harmless = " or ".join(_shown(v) for v in row.inert)
    note = (f"depends on a value this file does not fix{seen}: with {_others(row.inert)} it {says}; "
            f"with {harmless} it does nothing")
    return "info", note


def filter_verdict(row: Row, facts: dict, says: str) -> tuple[str, str | None] | None:
    """For a row that applies only to some values (`row.values`): None when the value is
    known to be fine, else (severity, note or None)."""
    if facts.get("literal"):
        return (row.severity, None) if facts.get("value") in row.values else None
    values, complete = _known(facts)
    if complete and values:
        if all(v in row.values for v in values):
            return row.severity, None
        if not any(v in row.values for v in values):
            return None
    if not values and not facts.get("source"):
        return None
    seen = f" (it may be {', '.join(_shown(v) for v in values)})" if values else ""
    bad = " or ".join(_shown(v) for v in row.values)
    note = f"depends on a value this file does not fix{seen}: with {bad} it {says}; other values are fine"
    return "info", note
