"""Where a report or snapshot goes: a file, or stdout; never with a secret in it."""

from __future__ import annotations

import sys
from pathlib import Path

from rldoctor.errors import UsageError
from rldoctor.redact import redact


def write_text(text: str, output: str | None, option: str = "--output") -> None:
    """Write `text`, redacted, to the file `output`, or to stdout when there is none."""
    text = redact(text)
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{option} {output}: cannot write: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
