"""Where a report or snapshot goes: a file, or stdout; never with a secret in it."""

from __future__ import annotations

import sys

from rldoctor.errors import UsageError
from rldoctor.redact import redact
from rldoctor.safe_write import PRIVATE, write_file


def write_text(text: str, output: str | None, option: str = "--output") -> None:
    """Write `text`, redacted, to the file `output` (0600, by temp file and rename, never
    through a link: rldoctor.safe_write), or to stdout when there is none."""
    text = redact(text)
    if output:
        write_file(output, text, what=option, mode=PRIVATE, error=UsageError)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
