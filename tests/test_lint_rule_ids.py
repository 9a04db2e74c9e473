"""RLD801's rules by their stable ids (`RLD801/<row>`): shown in every output format, taken by
`lint --only`, `--ignore`, rldoctor.toml and `explain`, listed by `list --rules`; one severity
for a deprecation whatever its spelling. The real console script, as a user runs it."""

from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor.lint.rules import table
from test_lint_cli import env  # noqa: F401  (the module's clean environment and names cache)

SPELLINGS = FIXTURES / "lint" / "rules" / "rld801_spellings.py"
TUTORIAL = FIXTURES / "lint" / "tutorial"
TRANSLATED = "RLD801/key-num_workers"
NEIGHBOUR = "RLD801/result-episode_reward_mean"


def _json(*args, env):
    result = run_rldoctor("lint", "--format", "json", *args, env=env)
    assert result.code in (0, 1), result
    return json.loads(result.stdout)["findings"]


def test_one_deprecation_in_four_spellings_is_one_severity(env):
    findings = _json(str(SPELLINGS), env=env)
    translated = [f for f in findings if f.get("rule") == TRANSLATED]
    assert sorted(f["location"]["line"] for f in translated) == [6, 10, 14, 17]
    assert {f["severity"] for f in translated} == {"warn"}
    # the same old name in a method or attribute spelling already fails: never below warn
    rows = {r.id: r for r in table.ROWS}
    assert rows["store-num_workers"].severity == "fail" and rows["kwarg-num_cpus_for_driver"].severity == "fail"
    assert all(r.severity != "info" for r in table.ROWS if r.behaviour == "translated")


def test_every_output_format_shows_the_rule(env):
    from rldoctor.report.render import LINT_FORMATS

    for fmt in LINT_FORMATS:
        out = run_rldoctor("lint", "--format", fmt, str(SPELLINGS), env=env).stdout
        assert TRANSLATED in out and NEIGHBOUR in out, fmt
    assert {f.get("rule") for f in _json(str(SPELLINGS), env=env)} == {TRANSLATED, NEIGHBOUR}
    text = run_rldoctor("lint", str(SPELLINGS), env=env).stdout
    assert f"[{TRANSLATED}]" in text and f"[{NEIGHBOUR}]" in text


def test_a_row_muted_by_its_id_stays_muted_while_its_neighbours_report(env, tmp_path):
    for mute in (["--ignore", TRANSLATED], None):
        if mute is None:
            config = tmp_path / "rldoctor.toml"
            config.write_text(f'[[ignore]]\ncode = "{TRANSLATED}"\nreason = "num_workers kept until the Ray 2.61 upgrade, INC-1"\n')
            mute = ["--config", str(config)]
        findings = _json(*mute, str(SPELLINGS), env=env)
        assert all(f.get("muted") for f in findings if f["rule"] == TRANSLATED)
        assert [f for f in findings if f["rule"] == NEIGHBOUR and not f.get("muted")]
    # a whole code still mutes every row of it
    assert all(f.get("muted") for f in _json("--ignore", "RLD801", str(SPELLINGS), env=env))


def test_only_one_rule_reports_that_rule_alone(env):
    result = run_rldoctor("lint", "--only", TRANSLATED, str(SPELLINGS), env=env)
    assert result.code == 0, result  # its findings are warns; the fail of the neighbour is left out
    lines = [l for l in result.stdout.splitlines() if ": RLD801 [" in l]
    assert len(lines) == 4 and all(l.endswith(f"[{TRANSLATED}]") for l in lines)
    both = _json("--only", f"{TRANSLATED},{NEIGHBOUR}", str(SPELLINGS), env=env)
    assert len(both) == 5
    whole = _json("--only", f"RLD801,{TRANSLATED}", str(SPELLINGS), env=env)  # the code wins
    assert len(whole) == 5


@pytest.mark.parametrize("args, words", [
    (["lint", "--only", "RLD801/key-num_wrkers", str(SPELLINGS)], "RLD801 has no rule 'key-num_wrkers'"),
    (["lint", "--ignore", "RLD801/nope", str(SPELLINGS)], "RLD801 has no rule 'nope'"),
    (["lint", "--only", "RLD203/x", str(SPELLINGS)], "RLD203 has no rules"),
    (["explain", "RLD801/nope"], "RLD801 has no rule 'nope'"),
])
def test_an_unknown_rule_is_one_line_and_exit_2(env, args, words):
    result = run_rldoctor(*args, env=env)
    assert result.code == 2 and words in result.stderr, result
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_explain_a_rule(env):
    result = run_rldoctor("explain", TRANSLATED, env=env)
    assert result.code == 0, result
    assert result.stdout.startswith(f"{TRANSLATED} (deprecated-rllib-api, warn)")
    assert "num_env_runners" in result.stdout and f"--ignore {TRANSLATED}" in result.stdout


def test_list_rules_lists_every_row_once_with_a_stable_id(env):
    result = run_rldoctor("list", "--rules", env=env)
    assert result.code == 0, result
    listed = re.findall(r"^(RLD801/\S+)\s+(fail|warn|info)\s", result.stdout, re.M)
    ids = [i for i, _ in listed]
    # the table, its signature rows, the rows of Ray's history and the imports Ray lacks
    assert len(ids) == len(set(ids)) == len(table.ROWS) + len(table.SIGNATURE_ROWS) + len(table.HISTORY_ROWS) + 1
    assert (TRANSLATED, "warn") in listed and ("RLD801/method-rollouts", "fail") in listed
    assert all(re.fullmatch(r"RLD801/[a-z0-9][a-z0-9_.\-]*", i, re.I) for i in ids)
    one = run_rldoctor("list", "--rules", "RLD801", env=env)
    assert one.stdout == result.stdout
    assert "has no rules" in run_rldoctor("list", "--rules", "RLD203", env=env).stdout
