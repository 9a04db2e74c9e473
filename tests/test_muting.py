"""Muting on recorded fixtures: --ignore, the ignore file, expiry, subjects, bad files, the CLI."""

from __future__ import annotations

import subprocess
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import FIXTURES, RLDOCTOR, _clean_env, run_rldoctor
from rldoctor.engine import muting
from rldoctor.engine.pipeline import Diagnosis
from rldoctor.errors import UsageError
from rldoctor.model import Severity
from rldoctor.engine.registry import load_registry
from rldoctor.snapshot import load

DEAD = FIXTURES / "node-dead.json"  # RLD101 fail on node bd551dd5...
FAULTS = FIXTURES / "network-delayed.json"  # 2 fail, 1 warn
REGISTRY = load_registry(include_plugins=False)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def _report(path=DEAD):
    return Diagnosis.every_check(REGISTRY).run(load(path), {"kind": "snapshot", "file": str(path)})


def _file(tmp_path: Path, text: str, name: str = "rldoctor.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _mutes(tmp_path, text):
    return muting.parse_file(_file(tmp_path, text), REGISTRY)


def test_a_muted_finding_stays_marked_and_stops_counting(tmp_path):
    report = _report()
    dead = report.findings[0]
    assert (dead.code, dead.severity) == ("RLD101", Severity.FAIL)
    mutes = _mutes(tmp_path, '[[ignore]]\ncode = "node-dead"\nsubject = "node:bd551dd5"\n'
                             'reason = "retired on purpose, INC-4711"\nexpires = 2026-12-31\n')
    muting.apply(report, mutes, now=NOW)
    assert dead.muted == {"reason": "retired on purpose, INC-4711", "expires": "2026-12-31",
                          "source": f"{tmp_path / 'rldoctor.toml'}:2"}
    assert report.findings == [dead] and report.active_findings == []
    assert report.status == "ok"
    assert report.exit_code(Severity.INFO) == 0  # muted findings never reach --fail-on
    counts = report.counts()
    assert (counts["fail"], counts["muted"], counts["muted_fail"]) == (0, 1, 1)
    assert dead.to_json()["muted"]["reason"] == "retired on purpose, INC-4711"
    assert "muted" not in report.results[1].findings[0].to_json() if report.results[1].findings else True


def test_subject_matches_exactly_or_as_a_prefix_and_nothing_else():
    report = _report()
    dead = report.findings[0]

    def muted_by(subject):
        for f in report.findings:
            f.muted = None
        muting.apply(report, muting.parse_option([f"RLD101@{subject}"] if subject else ["RLD101"],
                                                 REGISTRY), now=NOW)
        return dead.muted is not None

    assert muted_by(dead.subject)                 # exact
    assert muted_by("node:bd551dd57f10")          # the short id: a prefix
    assert muted_by(None)                         # every subject
    assert not muted_by("node:352425e2")          # another node
    assert not muted_by("cluster")
    assert not muted_by(dead.subject + "0")       # longer than the subject
    other_code = muting.parse_option(["RLD102@" + dead.subject], REGISTRY)
    dead.muted = None
    muting.apply(report, other_code, now=NOW)
    assert dead.muted is None


def test_line_numbers_in_lint_subjects_are_matched_whole():
    mute = muting.parse_option(["RLD801@file:train.py:3"], REGISTRY)[0]

    class F:
        code = "RLD801"

    for subject, hit in (("file:train.py:3", True), ("file:train.py:30", False),
                         ("file:train.py:3:cell", True)):
        f = F()
        f.subject = subject
        assert mute.matches(f) is hit, subject
    every_line = muting.parse_option(["RLD801@file:train.py:"], REGISTRY)[0]
    f = F()
    f.subject = "file:train.py:30"
    assert every_line.matches(f)


def test_an_expired_mute_unmutes_and_is_reported(tmp_path):
    report = _report()
    mutes = _mutes(tmp_path, '[[ignore]]\ncode = "RLD101"\nreason = "maintenance window"\n'
                             'expires = 2026-11-30\n\n[[ignore]]\ncode = "RLD203"\n'
                             'reason = "two zones"\nexpires = 2026-01-01\n')
    muting.apply(report, mutes, now=NOW)
    assert report.muted_findings == [] and report.status == "fail"
    assert report.exit_code(Severity.FAIL) == 1
    expired = [n for n in report.notes if n.startswith("mute ")]
    assert len(expired) == 2
    assert expired[0].startswith("mute RLD101 (") and "expired on 2026-11-30" in expired[0]
    assert "1 finding(s) it muted count again" in expired[0]
    assert "matches no finding now" in expired[1]


def test_a_mute_holds_through_its_expiry_day_and_a_datetime_to_the_second(tmp_path):
    report = _report()
    today = NOW.date().isoformat()
    muting.apply(report, _mutes(tmp_path, f'[[ignore]]\ncode = "RLD101"\nreason = "x"\n'
                                          f'expires = {today}\n'), now=NOW)
    assert report.findings[0].muted is not None
    report = _report()
    soon = (NOW + timedelta(minutes=1)).isoformat()
    mutes = _mutes(tmp_path, f'[[ignore]]\ncode = "RLD101"\nreason = "x"\nexpires = {soon}\n')
    muting.apply(report, mutes, now=NOW)
    assert report.findings[0].muted is not None
    report = _report()
    muting.apply(report, mutes, now=NOW + timedelta(minutes=2))
    assert report.findings[0].muted is None
    assert muting.parse_file(_file(tmp_path, '[[ignore]]\ncode = "RLD101"\nreason = "x"\n'
                                             'expires = "2027-01-31"\n'), REGISTRY)[0].expires \
        == date(2027, 1, 31)


def test_fail_on_counts_only_what_is_not_muted():
    report = _report(FAULTS)
    assert report.exit_code(Severity.WARN) == 1
    severities = {f.severity for f in report.findings}
    assert Severity.FAIL in severities
    fails = sorted({f"{f.code}@{f.subject}" for f in report.findings if f.severity == Severity.FAIL})
    muting.apply(report, muting.parse_option(fails, REGISTRY), now=NOW)
    assert report.exit_code(Severity.FAIL) == 0
    left = report.active_findings
    assert left and all(f.severity < Severity.FAIL for f in left)
    assert report.exit_code(Severity(max(f.severity for f in left))) == 1
    assert report.counts()["muted"] == sum(1 for f in report.findings if f.muted)


@pytest.mark.parametrize("text, line, why", [
    ('[[ignore]]\ncode = "RLD101"\n', 1, "entry 1 has no reason"),
    ('[[ignore]]\ncode = "RLD101"\nreason = "  "\n', 3, "entry 1 needs a non-empty text as its reason"),
    ('[[ignore]]\ncode = "RLD101"\nreason = "x"\n\n[[ignore]]\nreason = "y"\n', 5, "entry 2 has no code"),
    ('[[ignore]]\ncode = RLD101\nreason = "x"\n', 2, "not valid TOML"),
    ('[[ignore]]\ncode = "RLD999"\nreason = "x"\n', 2, "unknown check code 'RLD999'"),
    ('[[ignore]]\ncode = "RLD101"\nreason = "x"\nexpires = "next week"\n', 4, "expires must be a date"),
    ('[[ignore]]\ncode = "RLD101"\nreason = "x"\nreson = "y"\n', 4, "unknown key 'reson'"),
    ('# mutes\n[ignore]\ncode = "RLD101"\n', 2, "ignore must be a list of tables"),
    ('[mute]\ncode = "RLD101"\n', 1, "unknown setting 'mute'"),
    ('[[ignore]]\ncode = "RLD101"\nreason = "x"\nsubject = ""\n', 4, "subject must be a non-empty text"),
])
def test_a_malformed_ignore_file_names_the_line_and_why(tmp_path, text, line, why):
    with pytest.raises(UsageError) as raised:
        _mutes(tmp_path, text)
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'rldoctor.toml'}:{line}: "), message
    assert why in message
    assert raised.value.exit_code == 2


def test_the_ignore_file_is_found_in_the_current_directory(tmp_path):
    assert muting.config_path(None, tmp_path) == (None, [])
    hidden = _file(tmp_path, "", ".rldoctor.toml")
    assert muting.config_path(None, tmp_path) == (hidden, [])
    plain = _file(tmp_path, "")
    path, notes = muting.config_path(None, tmp_path)
    assert path == plain and ".rldoctor.toml was not read" in notes[0]
    assert muting.config_path("elsewhere.toml", tmp_path) == (Path("elsewhere.toml"), [])


def test_cli_mutes_from_the_file_in_the_current_directory_and_from_ignore(tmp_path):
    _file(tmp_path, '[[ignore]]\ncode = "RLD101"\nsubject = "node:bd551dd5"\n'
                    'reason = "retired on purpose, INC-4711"\n')

    def run(*args):
        return subprocess.run([RLDOCTOR, "check", "--from", str(DEAD), *args], cwd=tmp_path,
                              capture_output=True, text=True, env=_clean_env(), timeout=60)

    table = run()
    assert table.returncode == 0, table.stderr
    assert "Muted (1):" in table.stdout and "retired on purpose, INC-4711" in table.stdout
    assert "(0 fail, 0 warn, 0 info, 1 muted;" in table.stdout
    assert "rldoctor.toml:2" in table.stdout
    markdown = run("--format", "markdown").stdout
    assert "(muted)" in markdown and "**Muted:** retired on purpose, INC-4711" in markdown
    report = run("--format", "json")
    finding = __import__("json").loads(report.stdout)["findings"][0]
    assert finding["muted"]["reason"] == "retired on purpose, INC-4711"
    assert finding["muted"]["source"] == "rldoctor.toml:2"
    # --ignore adds to the file; --config replaces the file found here
    _file(tmp_path, '[[ignore]]\ncode = "RLD101"\nreason = "x"\nexpires = 2020-01-01\n', "old.toml")
    expired = run("--config", "old.toml")
    assert expired.returncode == 1 and "expired on 2020-01-01" in expired.stdout
    both = run("--config", "old.toml", "--ignore", "RLD101@node:bd551dd57f10")
    assert both.returncode == 0 and "accepted on the command line" in both.stdout
    bad = run("--config", "missing.toml")
    assert bad.returncode == 2 and bad.stderr.strip() == "rldoctor: --config missing.toml: no such file"
    _file(tmp_path, '[[ignore]]\ncode = "RLD101"\n', "broken.toml")
    broken = run("--config", "broken.toml")
    assert broken.returncode == 2 and "Traceback" not in broken.stderr
    assert broken.stderr.startswith("rldoctor: broken.toml:1: [[ignore]] entry 1 has no reason")
    typo = run_rldoctor("check", "--from", str(DEAD), "--ignore", "RLD1O1")
    assert typo.code == 2 and "unknown check code 'RLD1O1'" in typo.stderr


def test_lint_shares_the_muting(tmp_path):
    script = FIXTURES / "lint" / "rules" / "rld801_silent.py"
    plain = run_rldoctor("lint", str(script), "--format", "json").json()
    fails = [f for f in plain["findings"] if f["severity"] == "fail"]
    assert fails
    muted = run_rldoctor("lint", str(script), "--ignore", f"RLD801@file:{script}")
    assert muted.code == 0, muted
    assert "[muted: accepted on the command line" in muted.stdout
    assert f"({len(plain['findings'])} more muted)" in muted.stdout
    config = _file(tmp_path, '[[ignore]]\ncode = "RLD801"\nreason = "legacy script"\n')
    report = run_rldoctor("lint", str(script), "--config", str(config), "--format", "json")
    assert report.code == 0 and report.json()["summary"]["counts"]["muted"] == len(plain["findings"])
    assert run_rldoctor("lint", str(script), "--config", str(tmp_path / "none.toml")).code == 2
