"""`check --run`: a training's results judged without a cluster (RLD601, RLD602, RLD607, RLD608).

fixtures/runs/ holds four real Tune trials (tests/record_fixtures.py runs): healthy,
lr 0, NaN rewards, NaN rewards with lr 0. Edits of them make the other cases.
"""

from __future__ import annotations

import json
import time

import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor.checks import _runs
from rldoctor.inputs.runs import MAX_POINTS, read_run, read_runs
from rldoctor.engine.registry import load_registry
from rldoctor.engine.runner import run_checks
from rldoctor.snapshot import Snapshot

RUNS = FIXTURES / "runs"
EXPECTED = json.loads((RUNS / "expected.json").read_text())


def findings_for(paths, codes=("RLD601", "RLD602", "RLD607", "RLD608")):
    snap = Snapshot({"runs": read_runs([str(p) for p in paths]), "collectors": {}})
    checks = [c for c in load_registry(include_plugins=False).checks if c.code in codes]
    results = run_checks(checks, snap)
    assert [r for r in results if r.status == "error"] == []
    return results, [f for r in results for f in r.findings]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_run_gives_exactly_the_expected_findings(name):
    _, found = findings_for([RUNS / name])
    assert sorted((f.code, f.severity.label) for f in found) == sorted(
        (f["code"], f["severity"]) for f in EXPECTED[name])
    for finding in found:
        assert finding.subject == f"run:{RUNS / name}" and finding.fix
        assert finding.evidence["rows_read"] == 25


def _rows(name: str) -> list[str]:
    return (RUNS / name / "result.json").read_text().splitlines()


def _write(tmp_path, lines: list[str], name="result.json"):
    trial = tmp_path / "trial"
    trial.mkdir(exist_ok=True)
    (trial / name).write_text("\n".join(lines) + "\n")
    return trial


def test_lr0_stall_names_the_iterations_and_the_frozen_weights():
    _, [finding] = findings_for([RUNS / "lr0"], ("RLD601",))
    assert finding.severity.label == "fail" and "learning rate is 0" in finding.message
    assert "cannot learn" in finding.message
    assert finding.evidence["iterations"] == [1.0, 25.0]
    assert finding.evidence["weights_frozen"]["lr"] == 0.0
    assert finding.evidence["settings"]["lr"] == 0.0


def test_a_run_that_learned_then_flattened_is_an_info_and_a_falling_one_a_warn(tmp_path):
    rows = [json.loads(line) for line in _rows("healthy")]  # real rows, their returns edited
    plateau = [20 + 6 * i for i in range(12)] + [95 + (i % 3) for i in range(24)]
    lines = []
    for i, value in enumerate(plateau):
        row = json.loads(json.dumps(rows[i % len(rows)]))
        row["training_iteration"] = i + 1
        row["env_runners"]["episode_return_mean"] = value
        lines.append(json.dumps(row))
    _, [finding] = findings_for([_write(tmp_path, lines)], ("RLD601",))
    assert finding.severity.label == "info" and "flat since" in finding.message
    falling = plateau[:24] + [60 - (i % 3) for i in range(12)]
    for i, value in enumerate(falling):
        row = json.loads(lines[i])
        row["env_runners"]["episode_return_mean"] = value
        lines[i] = json.dumps(row)
    _, [finding] = findings_for([_write(tmp_path, lines)], ("RLD601",))
    assert finding.severity.label == "warn" and "falling" in finding.message


def test_noise_decides_what_counts_as_improvement():
    params = load_registry(include_plugins=False).by_code()["RLD601"].params
    quiet = [20.0 + 0.1 * (i % 2) for i in range(15)] + [22.0 + 0.1 * (i % 2) for i in range(15)]
    noisy = [20.0 + 8 * (i % 2) for i in range(15)] + [22.0 + 8 * (i % 2) for i in range(15)]
    assert _runs.judge_return(quiet, params)["learned"] is True  # +2 over a 0.1 jitter
    assert _runs.judge_return(noisy, params)["learned"] is False  # +2 inside an 8-point jitter
    assert _runs.judge_return(quiet + [22.0, 30.0, 40.0], params)["verdict"] == "rising"


def test_nan_rewards_are_told_from_a_diverged_optimiser(tmp_path):
    _, [finding] = findings_for([RUNS / "nan-rewards"], ("RLD607",))
    assert "rewards" in finding.message and finding.evidence["first_bad_iteration"] == 1
    rows = [json.loads(line) for line in _rows("healthy")]
    for row in rows[10:]:  # finite returns, losses NaN from iteration 11: divergence
        row["learners"]["default_policy"]["total_loss"] = float("nan")
    _, [finding] = findings_for([_write(tmp_path, [json.dumps(r) for r in rows])], ("RLD607",))
    assert "diverged" in finding.message and "grad_clip" in finding.fix
    assert finding.evidence["first_bad_iteration"] == 11
    assert "before iteration 11" in finding.fix


def test_nan_counts_that_healthy_runs_have_are_not_judged():
    _, found = findings_for([RUNS / "healthy"], ("RLD607",))
    assert found == []  # num_trainable_parameters is NaN in every healthy row


def test_stale_weights_gap_that_grows_and_runners_with_no_seq_no(tmp_path):
    rows = [json.loads(line) for line in _rows("healthy")]
    for i, row in enumerate(rows):
        row["env_runners"]["weights_seq_no"] = max(0, row["learners"]["default_policy"]
                                                   ["weights_seq_no"] - 1 - i // 4)
    _, [finding] = findings_for([_write(tmp_path, [json.dumps(r) for r in rows])], ("RLD602",))
    assert "stale weights" in finding.message and finding.severity.label == "warn"
    for row in rows[-4:]:
        row["env_runners"]["weights_seq_no"] = float("nan")
    _, found = findings_for([_write(tmp_path, [json.dumps(r) for r in rows])], ("RLD602",))
    assert any("no weights_seq_no (NaN)" in f.message for f in found)
    _, found = findings_for([RUNS / "healthy"], ("RLD602",))
    assert found == []  # a lag of one update is RLlib's normal async push


def test_throughput_that_fell_to_a_fraction_of_its_earlier_rate(tmp_path):
    rows = [json.loads(line) for line in _rows("healthy")]
    for i, row in enumerate(rows):
        rate = 400.0 if i < 15 else 60.0
        row["env_runners"]["num_env_steps_sampled_lifetime_throughput"] = {
            "throughput_since_last_reduce": rate, "throughput_since_last_restore": rate}
    _, [finding] = findings_for([_write(tmp_path, [json.dumps(r) for r in rows])], ("RLD608",))
    assert "fell to 60 env steps/s" in finding.message and "15%" in finding.message


def test_bad_lines_a_truncated_tail_and_a_non_rllib_trainable_are_counted(tmp_path):
    lines = _rows("healthy")
    lines.insert(3, "this is not json")
    lines.insert(7, '{"broken": ')
    lines.append(lines[-1][:500])  # the writer died mid-row
    trial = tmp_path / "trial"
    trial.mkdir()
    (trial / "result.json").write_text("\n".join(lines))  # no newline at the end
    run = read_run(trial / "result.json")
    assert run["bad_lines"] == 2 and run["truncated_last_line"] is True
    assert run["rows_read"] == 25 and len(run["points"]) == 25
    results, found = findings_for([trial])
    assert found == []
    other = _write(tmp_path, [json.dumps({"training_iteration": i, "mean_accuracy": 0.5,
                                          "config": {}}) for i in range(30)], "result.json")
    results, found = findings_for([other], ("RLD601",))
    assert found == [] and "not RLlib" in results[0].notes[0].message
    assert results[0].notes[0].evidence["not_rllib_rows"] == 30


def test_config_values_never_reach_the_snapshot_but_the_settings_a_fix_needs(tmp_path):
    rows = [json.loads(line) for line in _rows("healthy")]
    for row in rows:
        row["config"].update(wandb_api_key="sk-live-0123456789abcdef", env_config={"pw": "hunter2"})
    run = read_run(_write(tmp_path, [json.dumps(r) for r in rows]) / "result.json")
    text = json.dumps(run)
    assert "sk-live" not in text and "hunter2" not in text
    assert run["settings"]["lr"] == 0.001 and "wandb_api_key" not in run["settings"]


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_a_result_json_of_100000_rows_is_judged_in_under_2_seconds(tmp_path):
    template = []
    for line in _rows("healthy"):  # real rows, their iteration made a placeholder
        row = json.loads(line)
        row["training_iteration"] = -1
        head, tail = json.dumps(row).split('"training_iteration": -1', 1)
        template.append((head + '"training_iteration": ', tail + "\n"))
    path = tmp_path / "result.json"
    with open(path, "w") as f:
        for start in range(0, 100_000, 1000):
            f.write("".join(f"{template[i % 25][0]}{i + 1}{template[i % 25][1]}"
                            for i in range(start, start + 1000)))
    started = time.perf_counter()
    result = run_rldoctor("check", "--run", str(path), "--format", "json")
    elapsed = time.perf_counter() - started
    assert result.code in (0, 1), result
    assert elapsed < 2.0, elapsed
    run = read_run(path)
    assert run["sampled"] is True and len(run["points"]) <= MAX_POINTS
    assert run["points"][-1]["iteration"] == 100_000


def test_a_path_that_is_not_a_run_is_one_line_exit_3(tmp_path):
    for path, words in ((tmp_path / "missing", "no such file"), (tmp_path, "not a run")):
        result = run_rldoctor("check", "--run", str(path))
        assert result.code == 3, result
        [line] = result.stderr.strip().splitlines()
        assert words in line and "Traceback" not in result.stderr
