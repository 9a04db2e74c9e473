"""The CLI without a cluster: help, list, explain, --from, bad input, exit codes, speed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, run_rldoctor

HEALTHY = str(FIXTURES / "healthy-3node.json")
DEAD = str(FIXTURES / "node-dead.json")
VERSIONS = str(FIXTURES / "version-mismatch.json")


def _imports_after(args: list[str]) -> set[str]:
    """Run the CLI in-process and report which heavy modules it imported."""
    code = (
        "import sys\n"
        "from rldoctor.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('ray', 'torch', 'gymnasium', 'numpy') if m in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return set(json.loads(proc.stderr.strip().splitlines()[-1].replace("'", '"')))


@pytest.mark.parametrize("args", [["--help"], ["list"], ["explain", "RLD101"],
                                  ["check", "--from", DEAD, "--format", "json"],
                                  ["check", "--from", DEAD, "--format", "markdown"]])
def test_fast_paths_never_import_ray_or_torch(args):
    assert _imports_after(args) == set()


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_check_from_fixture_is_fast():
    result = run_rldoctor("check", "--from", DEAD)
    assert result.code == 1
    assert result.seconds < 1.5, result  # includes interpreter start-up
    # in-process, excluding interpreter start: well under a second
    code = ("import time; t=time.perf_counter()\n"
            "from rldoctor.cli import main\n"
            f"try:\n    main(['check','--from',{DEAD!r},'--format','json','--output','/dev/null'])\n"
            "except SystemExit: pass\n"
            "print(time.perf_counter()-t)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert float(proc.stdout.strip().splitlines()[-1]) < 0.5


def test_table_shows_findings_with_fix_under_each():
    result = run_rldoctor("check", "--from", DEAD)
    assert result.code == 1
    lines = result.stdout.splitlines()
    assert lines[1].startswith("status: FAIL")
    at = next(i for i, line in enumerate(lines) if line.startswith("FAIL  RLD101"))
    assert "is dead: UNEXPECTED_TERMINATION" in " ".join(lines[at + 1:at + 3])
    assert any(line.strip().startswith("fix: ") for line in lines[at + 1:at + 6])


def test_markdown_pastes_into_a_ticket():
    result = run_rldoctor("check", "--from", DEAD, "--format", "markdown")
    text = result.stdout
    assert text.startswith("## rldoctor report: FAIL")
    assert "| RLD101 | node-dead | fail |" in text
    assert "#### FAIL RLD101 `node:" in text and "**Fix:**" in text
    assert text.count("```") % 2 == 0


def test_json_report_contract():
    result = run_rldoctor("check", "--from", DEAD, "--format", "json")
    report = result.json()
    assert report["schema"] == "rldoctor.report/v1"
    assert report["summary"]["status"] == "fail"
    assert set(report["summary"]["counts"]) >= {"fail", "warn", "info"}
    for c in report["checks"]:
        assert set(c) >= {"code", "name", "status", "duration_s", "detail"}
        assert c["status"] in ("ok", "warn", "fail", "error", "skipped")
    for f in report["findings"]:
        assert set(f) >= {"code", "severity", "subject", "message", "evidence", "fix"}
        assert f["severity"] in ("info", "warn", "fail")


@pytest.mark.parametrize("fail_on,fixture,code", [
    ("fail", HEALTHY, 0), ("fail", VERSIONS, 0), ("warn", VERSIONS, 1), ("info", HEALTHY, 0),
    ("fail", DEAD, 1),
])
def test_fail_on_sets_the_exit_code(fail_on, fixture, code):
    assert run_rldoctor("check", "--from", fixture, "--fail-on", fail_on).code == code


def test_only_and_skip():
    result = run_rldoctor("check", "--from", DEAD, "--only", "RLD102,RLD103", "--format", "json")
    assert result.code == 0 and [c["code"] for c in result.json()["checks"]] == ["RLD102", "RLD103"]
    result = run_rldoctor("check", "--from", DEAD, "--skip", "node-dead", "--format", "json")
    assert "RLD101" not in [c["code"] for c in result.json()["checks"]]


def test_unknown_code_is_a_usage_error_listing_valid_codes():
    result = run_rldoctor("check", "--from", HEALTHY, "--only", "RLD999")
    assert result.code == 2
    assert "RLD999" in result.stderr and "RLD101" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = run_rldoctor("explain", "RLD999")
    assert result.code == 2 and "RLD101" in result.stderr


def test_collect_bundle_reads_its_mutes_before_it_joins_a_cluster(tmp_path):
    """The bundle's report honours --ignore and the ignore file, so a bad one stops
    `collect --bundle` at once (exit 2, one line), before any cluster is contacted."""
    bad = tmp_path / "rldoctor.toml"
    bad.write_text('[[ignore]]\ncode = "RLD101"\n')  # no reason
    target = tmp_path / "b.tar.gz"
    result = run_rldoctor("collect", "--bundle", str(target), "--address", "127.0.0.1:1",
                          "--config", str(bad))
    assert result.code == 2 and "rldoctor.toml" in result.stderr and "reason" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not target.exists()
    result = run_rldoctor("collect", "--bundle", str(target), "--address", "127.0.0.1:1",
                          "--ignore", "RLD999")
    assert result.code == 2 and "RLD999" in result.stderr and not target.exists()
    assert "--ignore" in run_rldoctor("collect", "--help").stdout


def test_address_and_from_together_is_a_usage_error():
    result = run_rldoctor("check", "--from", HEALTHY, "--address", "127.0.0.1:1")
    assert result.code == 2 and "exclusive" in result.stderr


def test_output_file(tmp_path):
    out = tmp_path / "report.json"
    result = run_rldoctor("check", "--from", DEAD, "--format", "json", "--output", str(out))
    assert result.code == 1
    assert json.loads(out.read_text())["summary"]["status"] == "fail"
    assert "report written to" in result.stdout


@pytest.mark.parametrize("content,says", [
    ('{"schema": "rldoctor.snapshot/v1", "nodes": [', "not valid JSON"),
    ("this is not json at all", "not valid JSON"),
    ('{"kind": "List", "items": []}', 'no "schema" field'),
    ('{"schema": "k8s/v1"}', "unknown schema"),
    ('{"schema": "rldoctor.snapshot/v2"}', "newer than this rldoctor"),
    ("[1, 2, 3]", "not an rldoctor snapshot"),
])
def test_bad_snapshot_files_exit_3_with_one_line_and_write_nothing(tmp_path, content, says):
    bad = tmp_path / "snap.json"
    bad.write_text(content)
    out = tmp_path / "report.json"
    result = run_rldoctor("check", "--from", str(bad), "--output", str(out))
    assert result.code == 3, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in result.stderr
    assert not out.exists()


def test_missing_snapshot_file_exit_3(tmp_path):
    result = run_rldoctor("check", "--from", str(tmp_path / "nope.json"))
    assert result.code == 3 and "no such file" in result.stderr


def test_explain_prints_symptom_cause_fix():
    result = run_rldoctor("explain", "RLD103")
    assert result.code == 0
    for section in ("Symptom:", "Cause:", "Fix:"):
        assert section in result.stdout
    assert run_rldoctor("explain", "unschedulable-demand").stdout == result.stdout
