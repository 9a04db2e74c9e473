"""JSON from a file a user hands rldoctor, parsed within bounds: an integer of thousands of
digits or a nest thousands deep is refused with one phrase (`TooMuch`, a ValueError), never
a RecursionError or Python's own int-digits ValueError escaping as a traceback.

`loads(text)` is json.loads with these bounds; a JSONDecodeError still comes through as one
(it says where the text is broken). Standard library only.
"""

from __future__ import annotations

import json
from typing import Any

MAX_INT_DIGITS = 1000  # no count, size or id has more; Python refuses 4,300 itself


class TooMuch(ValueError):
    """A number or a nest beyond the bounds; its text is the phrase to show."""


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise TooMuch(f"a number of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def loads(text: str | bytes) -> Any:
    try:
        return json.loads(text, parse_int=_int)
    except RecursionError:
        raise TooMuch("arrays or objects nested too deep") from None


def problem(exc: ValueError) -> str:
    """One phrase for a ValueError of `loads`: where the JSON is broken, or what was too much."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
