"""`rldoctor lint` as a user runs it: the real console script in a subprocess."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, RLDOCTOR, _clean_env, run_rldoctor

TUTORIAL = FIXTURES / "lint" / "tutorial"
RULES = FIXTURES / "lint" / "rules"
LINE = re.compile(r"^(?P<path>[^:]+):(?:cell \d+:)?(?P<line>\d+):(?P<col>\d+): "
                  r"(?P<code>RLD80[123]) \[(?P<sev>fail|warn|info)\] .+")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    environment = _clean_env()
    environment["RLDOCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("rldoctor-cache"))
    return environment


def lint(*args, env):
    return run_rldoctor("lint", *args, env=env)


def test_text_is_compiler_style_sorted_with_the_replacement(env):
    result = lint(str(TUTORIAL), env=env)
    assert result.code == 1, result
    lines = result.stdout.splitlines()
    findings = [l for l in lines if LINE.match(l)]
    assert len(findings) == 33
    keys = [(m["path"], int(m["line"]), int(m["col"])) for m in map(LINE.match, findings)]
    assert keys == sorted(keys)
    assert (f"{TUTORIAL}/ppo_cartpole.py:7:6: RLD801 [fail] `.rollouts()` raises ValueError: `rollouts` "
            "has been deprecated. Use `AlgorithmConfig.env_runners(..)` instead. "
            '(.env_runners(num_env_runners=6, rollout_fragment_length=200, batch_mode="truncate_episodes")) '
            "[RLD801/method-rollouts]") in lines  # the rule: what --only, --ignore and explain take
    assert any(l.startswith("      - ray start --address=$RAY_HEAD_IP:6379 --num-cpus=8") for l in lines)
    assert lines[-1].startswith("23 fail, 8 warn, 2 info in 3 file(s)")
    assert result.stderr == ""


def test_json_is_report_v1_with_locations(env):
    result = lint(str(TUTORIAL / "ppo_cartpole.py"), "--format", "json", env=env)
    assert result.code == 1, result
    report = result.json()
    assert report["schema"] == "rldoctor.report/v1"
    assert [c["code"] for c in report["checks"]] == ["RLD801", "RLD802", "RLD803"]
    assert report["summary"]["counts"]["fail"] == 3 and report["summary"]["counts"]["warn"] == 4
    for f in report["findings"]:
        assert set(f) >= {"code", "severity", "subject", "message", "evidence", "fix", "location"}
        assert set(f["location"]) == {"path", "line", "column"}
        assert f["subject"] == f"file:{f['location']['path']}:{f['location']['line']}"
    assert report["source"]["kind"] == "lint"


def test_markdown_pastes_into_a_ticket(env):
    result = lint(str(TUTORIAL / "cluster.yaml"), "--format", "markdown", env=env)
    assert result.code == 1, result
    assert result.stdout.startswith("## rldoctor report: FAIL")
    assert "| RLD802 | invalid-cluster-config | fail |" in result.stdout
    assert result.stdout.count("```") % 2 == 0


def test_fail_on_and_exit_codes(env, tmp_path):
    clean = RULES / "rld801_clean.py"
    warn_only = tmp_path / "warn_only.py"
    warn_only.write_text("from ray.rllib.algorithms.ppo import PPOConfig\nPPOConfig().training(num_sgd_iter=3)\n")
    assert lint(str(clean), env=env).code == 0
    assert lint(str(warn_only), env=env).code == 0
    assert lint(str(warn_only), "--fail-on", "warn", env=env).code == 1
    assert lint(str(clean), "--fail-on", "info", env=env).code == 0


@pytest.mark.parametrize("args,says", [
    ((), "Missing argument"),
    (("x.py", "--diff", "--fix"), "exclusive"),
    (("x.py", "--format", "yaml"), "Invalid value"),
])
def test_usage_errors_exit_2(env, args, says):
    result = lint(*args, env=env)
    assert result.code == 2 and says in result.stderr and "Traceback" not in result.stderr


def test_unlintable_input_exits_3_with_one_line_on_stderr(env, tmp_path):
    (tmp_path / "broken.py").write_text("def broken(:\n")
    result = lint(str(tmp_path / "broken.py"), str(tmp_path / "missing.py"), env=env)
    assert result.code == 3, result
    assert "Traceback" not in result.stderr + result.stdout
    assert len(result.stderr.strip().splitlines()) == 1
    assert "2 input(s) could not be linted" in result.stderr
    assert f"{tmp_path}/broken.py:1:12: error: syntax error" in result.stdout
    assert f"{tmp_path}/missing.py: error: no such file or directory" in result.stdout


def test_diff_shows_and_fix_applies_the_mechanical_renames(env, tmp_path):
    script = tmp_path / "ppo_cartpole.py"
    shutil.copy(TUTORIAL / "ppo_cartpole.py", script)
    before = script.read_text()
    shown = lint(str(script), "--diff", env=env)
    assert shown.code == 1
    assert shown.stdout.startswith(f"--- {script}\n+++ {script}\n")
    assert "-    .rollouts(\n-        num_rollout_workers=6," in shown.stdout
    assert "+    .env_runners(\n+        num_env_runners=6," in shown.stdout
    assert "+        sgd_minibatch_size" not in shown.stdout and "+        minibatch_size=256," in shown.stdout
    assert "4 mechanical fix(es) in 1 file(s)" in shown.stderr
    assert script.read_text() == before
    fixed = lint(str(script), "--fix", env=env)
    assert "applied 4 mechanical fix(es) in 1 file(s)" in fixed.stderr
    text = script.read_text()
    assert ".env_runners(\n        num_env_runners=6,  # 分布式worker数量" in text
    assert "num_epochs=10," in text and "num_gpus_per_worker=0" in text  # moves need judgement
    remaining = [l for l in fixed.stdout.splitlines() if LINE.match(l)]
    assert len(remaining) == 4 and all("`.resources()`" in l or "train_batch_size" in l for l in remaining)
    assert fixed.code == 0  # what is left are warnings and info


def _imports_after(args: list[str], env: dict) -> set[str]:
    code = (
        "import sys\n"
        "from rldoctor.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('ray', 'torch', 'gymnasium', 'numpy', 'jsonschema') "
        "if m in sys.modules), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    return set(json.loads(proc.stderr.strip().splitlines()[-1].replace("'", '"')))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_python_only_lint_never_imports_ray_or_torch(env, fmt):
    paths = [str(TUTORIAL / "ppo_cartpole.py"), str(TUTORIAL / "tuning_snippets.py"),
             str(RULES / "rld801_notebook.ipynb"), str(RULES / "rld803_settings.py")]
    assert _imports_after(["lint", "--format", fmt, *paths], env) == set()


def test_yaml_lint_asks_ray_itself(env):
    code = ("import sys\nfrom rldoctor.engine.pipeline import Diagnosis\n"
            f"Diagnosis.from_options(lint=True).lint([{str(TUTORIAL / 'cluster.yaml')!r}])\n"
            "print('ray' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert proc.stdout.strip() == "True", proc.stderr


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_python_lint_is_fast(env):
    lint(str(RULES / "rld803_settings.py"), env=env)  # the names of this Ray are cached after one run
    result = lint(str(TUTORIAL / "ppo_cartpole.py"), str(TUTORIAL / "tuning_snippets.py"), env=env)
    assert result.code == 1
    assert result.seconds < 1.5, result


def test_check_list_and_explain_know_the_lint_rules(env):
    checked = run_rldoctor("check", "--from", str(FIXTURES / "healthy-3node.json"), "--format", "json", env=env)
    assert not {c["code"] for c in checked.json()["checks"]} & {"RLD801", "RLD802", "RLD803"}
    listed = run_rldoctor("list", env=env)
    for code, name in (("RLD801", "deprecated-rllib-api"), ("RLD802", "invalid-cluster-config"),
                       ("RLD803", "unknown-system-config")):
        assert re.search(rf"^{code}\s+{name}\s+code\s+rldoctor", listed.stdout, re.M), listed.stdout
    explained = run_rldoctor("explain", "RLD801", env=env)
    assert explained.code == 0
    for section in ("Symptom:", "Cause:", "Fix:"):
        assert section in explained.stdout
    assert "lint" in explained.stdout
    assert RLDOCTOR.endswith("rldoctor")
