"""The rendered reports of every recorded fixture, pinned as golden files.

For each snapshot in fixtures/ (`fixtures/<name>.json`, not the `.expected.json`), the report
`rldoctor check --from fixtures/<name>.json` prints as a table, as Markdown and as JSON lives in
fixtures/golden/<name>.<table|md|json>; tests/test_golden.py compares them. A wording or layout
change in a finding, a fix, a renderer or a report part shows up there as a diff to review.
Regenerate them, after a change you mean, with one command (from the repository root):

    make golden                          # the same as: .venv/bin/python tests/golden.py --update

Stable by construction: the path is given relative to the repository, no mute file is read,
each check's duration is 0 and the clock reads a fixed NOW (a recorded snapshot is judged at
its own time anyway; this pins what would fall back to the wall clock).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GOLDEN = FIXTURES / "golden"
# format -> the golden file's suffix
FORMATS = {"table": "table", "markdown": "md", "json": "json"}
NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z, after every recording


def snapshots() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*.json") if not p.name.endswith(".expected.json"))


def golden_path(snapshot: Path, fmt: str) -> Path:
    return GOLDEN / f"{snapshot.stem}.{FORMATS[fmt]}"


@contextmanager
def _at_the_root():
    before = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def report_of(snapshot: Path):
    """The report `check --from` builds for `snapshot`, its durations zeroed."""
    from rldoctor.engine.pipeline import Diagnosis
    from rldoctor.inputs.source import read as read_input

    with _at_the_root(), mock.patch("time.time", return_value=NOW):
        snap, source, _runs = read_input(snapshot.relative_to(ROOT).as_posix(), window_s=None)
        report = Diagnosis.from_options(read_mutes=False).run(snap, source)
    for result in report.results:
        result.duration_s = 0.0
    return report


def render(snapshot: Path, fmt: str, report=None) -> str:
    from rldoctor.report.render import RENDERERS

    with mock.patch("time.time", return_value=NOW):
        return RENDERERS[fmt](report if report is not None else report_of(snapshot))


def update() -> list[Path]:
    """Write every golden file; remove those of fixtures that are gone. The files written."""
    GOLDEN.mkdir(exist_ok=True)
    written = []
    for snapshot in snapshots():
        report = report_of(snapshot)
        for fmt in FORMATS:
            path = golden_path(snapshot, fmt)
            path.write_text(render(snapshot, fmt, report), encoding="utf-8")
            written.append(path)
    for stray in set(GOLDEN.iterdir()) - set(written):
        stray.unlink()
    return written


def main(argv: list[str]) -> int:
    if argv != ["--update"]:
        print(__doc__.strip().splitlines()[0] + "\nusage: python tests/golden.py --update",
              file=sys.stderr)
        return 2
    written = update()
    print(f"{len(written)} golden files written under {GOLDEN.relative_to(ROOT)}/; review "
          "`git diff fixtures/golden` before committing")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
