"""The smoke run and a results file are one kind of run record: the same RLlib result rows,
read by one reader (rldoctor.metric_numbers.point_of) on the cluster by the smoke trainer
(rldoctor.node.smoke) and from a file (rldoctor.inputs.runs), give the same return curve and
the same weight-sync gaps, RLD602 judges both with the same lag rule, and RLD607 sees a NaN in
either."""

from __future__ import annotations

import math

import pytest

from rldoctor.checks import _runs
from rldoctor.checks.training.runs import stale_weights
from rldoctor.inputs.runs import point_of
from rldoctor.engine.registry import load_registry
from rldoctor.node import smoke as smoke_trainer
from rldoctor.snapshot import Snapshot


def _rows(lags, returns):
    """RLlib result rows (new API stack) with the learner `lag` updates ahead of the runners."""
    rows = []
    for i, (lag, ret) in enumerate(zip(lags, returns), start=1):
        rows.append({"training_iteration": i, "time_this_iter_s": 1.0, "time_total_s": float(i),
                     "env_runners": {"episode_return_mean": ret, "num_episodes": 4,
                                     "num_env_steps_sampled": 400, "weights_seq_no": 2 * i - lag},
                     "learners": {"default_policy": {"weights_seq_no": 2 * i, "mean_kl_loss": 0.01},
                                  "__all_modules__": {"num_trainable_parameters": 10}},
                     "fault_tolerance": {"num_healthy_workers": 2}})
    return rows


def _both(rows):
    smoke = {"curve": [smoke_trainer.point_of(r) for r in rows], "settings": {"lr": 1e-3}}
    run = {"path": "/tmp/x/result.json", "points": [point_of(r) for r in rows],
           "settings": {"lr": 1e-3}}
    return smoke, run


def test_the_same_rows_give_the_same_curve_and_gaps_from_both_sources():
    returns = [20.0, 22.0, float("nan"), 30.0, 41.0, 55.0, 60.0, 61.0]
    smoke, run = _both(_rows([1, 1, 1, 2, 3, 4, 5, 6], returns))
    assert smoke_trainer.point_of is point_of  # one reader, the smoke curve a run record as it stands
    from_smoke = smoke
    assert _runs.series(from_smoke, "return_mean") == _runs.series(run, "return_mean")
    assert [v for _, v in _runs.series(run, "return_mean")] == [r for r in returns if not math.isnan(r)]
    assert _runs.weight_gaps(from_smoke)[0] == _runs.weight_gaps(run)[0] == \
        [(float(i), float(g)) for i, g in enumerate([1, 1, 1, 2, 3, 4, 5, 6], start=1)]


def _rld602(doc):
    params = load_registry(include_plugins=False).by_code()["RLD602"].params
    return list(stale_weights(Snapshot(doc), params))


def test_rld602_finds_a_growing_lag_in_both_sources_and_none_in_a_steady_one():
    base = {"schema": 1, "collectors": {"smoke": {"status": "ok"}, "runs": {"status": "ok"}}}
    for lags, growing in (([1, 1, 1, 2, 3, 4, 5, 6], True), ([1, 1, 1, 1, 1, 1, 1, 1], False)):
        smoke, run = _both(_rows(lags, [20.0] * len(lags)))
        found_smoke = _rld602({**base, "smoke": {**smoke, "env_runners": []}})
        found_run = _rld602({**base, "runs": [run]})
        assert [f.subject for f in found_smoke] == (["run:smoke-train"] if growing else [])
        assert [f.subject for f in found_run] == (["run:/tmp/x/result.json"] if growing else [])
        if growing:
            assert "6.0 learner updates behind at iteration 8" in found_smoke[0].message
            assert "6.0 learner updates behind at iteration 8" in found_run[0].message


def _rld601(doc):
    from rldoctor.checks.training.runs import training_stall

    params = load_registry(include_plugins=False).by_code()["RLD601"].params
    return list(training_stall(Snapshot(doc), params))


# (returns, lr, RLD601's verdict on a results file, on a smoke run that missed its target)
CURVES = {
    "learning": ([20.0 + 12 * i for i in range(12)], 1e-3, None, None),
    "never improved": ([22.0, 21.0, 24.0, 22.0, 23.0, 21.0, 22.0, 24.0, 23.0, 22.0], 1e-3,
                       ("warn", "never improved"), ("fail", "never improved")),
    "improved, then flat": ([20.0, 50.0, 90.0, 120.0, 121.0, 119.0, 122.0, 120.0, 118.0, 121.0],
                            1e-3, ("info", "flat since"), ("warn", "flat since")),
    "falling": ([20.0, 60.0, 100.0, 140.0, 141.0, 139.0, 100.0, 70.0, 60.0, 55.0, 50.0], 1e-3,
                ("warn", "falling"), ("warn", "falling")),
    "lr 0": ([22.0, 25.0, 21.0, 23.0, 26.0, 22.0, 24.0, 23.0, 21.0], 0.0,
             ("fail", "weights do not move"), ("fail", "weights do not move")),
}


@pytest.mark.parametrize("name", sorted(CURVES))
def test_rld601_gives_a_smoke_run_and_a_results_file_of_one_curve_the_same_verdict(name):
    returns, lr, as_run, as_smoke = CURVES[name]
    smoke, run = _both(_rows([1] * len(returns), returns))
    smoke["settings"] = run["settings"] = {"lr": lr}
    base = {"schema": 1, "collectors": {"smoke": {"status": "ok"}, "runs": {"status": "ok"}}}
    found_run = _rld601({**base, "runs": [run]})
    found_smoke = _rld601({**base, "smoke": {**smoke, "outcome": "missed", "target_return": 195.0}})
    for found, want in ((found_run, as_run), (found_smoke, as_smoke)):
        assert [(f.severity.label, want[1] in f.message) for f in found] == \
            ([] if want is None else [(want[0], True)]), [f.message for f in found]
    # the same judge, the same numbers: the evidence agrees but for what only a file has
    if found_run:
        keys = ("iterations", "flat_iterations", "learned", "level", "best_level", "bar")
        assert {k: found_run[0].evidence[k] for k in keys} == \
            {k: found_smoke[0].evidence[k] for k in keys}
    # RLD603's likely cause for the missed target asks the same judge
    from rldoctor.checks.training.runs import smoke_train_failed

    missed = {**smoke, "outcome": "missed", "target_return": 195.0, "time_budget_s": 60.0,
              "stage": "done", "figures": {"best_return": max(returns)}}
    [rld603] = list(smoke_train_failed(Snapshot({**base, "smoke": missed}),
                                       smoke_train_failed.params))
    no_progress = "no learning progress" in rld603.evidence["likely_cause"]
    assert no_progress == (name in ("never improved", "lr 0")), rld603.evidence["likely_cause"]
    # a smoke run that reached its target is not judged at all
    assert _rld601({**base, "smoke": {**smoke, "outcome": "reached", "target_return": 1.0}}) == []


def test_both_readers_read_a_number_alike_numpy_and_non_finite_included():
    """One number reader (rldoctor.metric_numbers) on the cluster and in the file reader: a
    numpy scalar is a number, a NaN is kept as "NaN" text in the smoke curve's point as in a
    results file's, where RLD607 needs to see it; a bool or text is not a number."""
    import numpy as np

    from rldoctor.metric_numbers import is_finite_number, is_non_finite

    row = _rows([1], [20.0])[0]
    row["env_runners"].update(episode_return_mean=np.float32(12.5), weights_seq_no=np.float64("nan"),
                              num_episodes=True)
    row["learners"]["default_policy"]["weights_seq_no"] = np.int64(7)
    trimmed, point = smoke_trainer.point_of(row), point_of(row)
    assert trimmed["return_mean"] == point["return_mean"] == 12.5
    assert trimmed["learners"]["default_policy"]["weights_seq_no"] == \
        point["learners"]["default_policy"]["weights_seq_no"] == 7.0
    assert trimmed["runner_weights_seq_no"] == point["runner_weights_seq_no"] == "NaN"
    assert trimmed["episodes"] is None and point["episodes"] is None
    assert is_non_finite(point["runner_weights_seq_no"]) and not is_finite_number("NaN")
    assert is_non_finite(float("-inf")) and not is_non_finite(None) and not is_non_finite("x")


# -- a NaN in a smoke run: RLD607 and RLD602 see it as in a results file ----------------------
RUNS = __import__("pathlib").Path(__file__).resolve().parent.parent / "fixtures" / "runs"
# What Tune adds to an `Algorithm.train()` result when it writes result.json: without them a
# recorded row is the shape the smoke trainer reads on the cluster.
TUNE_KEYS = ("config", "date", "done", "hostname", "node_ip", "pid", "timestamp", "trial_id",
             "time_since_restore", "iterations_since_restore")


def _smoke_record(rows, outcome="missed"):
    """A smoke-run record the way smoke-train writes one: each row read by the smoke trainer's
    reader, the driver's wall-clock figures added (rldoctor.cluster.smoke)."""
    from rldoctor.cluster import smoke as smoke_driver

    curve, best = [], None
    for i, row in enumerate(rows):
        point = smoke_trainer.point_of({k: v for k, v in row.items() if k not in TUNE_KEYS})
        point["elapsed_s"] = 20.0 + i
        ret = smoke_driver.finite(point.get("return_mean"))
        best = ret if ret is not None and (best is None or ret > best) else best
        point["best_return"] = best
        curve.append(point)
        smoke_driver._progress_line(point)  # a NaN return prints as "-"
    smoke = {"outcome": outcome, "stage": "done", "target_return": 195.0, "time_budget_s": 60.0,
             "num_env_runners": 1, "settings": {"lr": 1e-3}, "curve": curve, "env_runners": [],
             "learner": {}, "checkpoint": {"status": "skipped"}}
    smoke["figures"] = smoke_driver.compute_figures(smoke)
    return {"schema": "rldoctor.snapshot/v1", "collectors": {"smoke": {"status": "ok"}},
            "smoke": smoke}


def test_rld607_sees_a_nan_in_a_smoke_run_as_in_a_results_file():
    """Rows of a real PPO run whose env returned NaN rewards (fixtures/runs/nan-rewards,
    recorded by tests/record_fixtures.py): as a smoke run's curve they give the same RLD607
    verdict as read from the file."""
    import json

    from rldoctor.checks.training.runs import nan_metrics
    from rldoctor.inputs.runs import read_run

    path = RUNS / "nan-rewards" / "result.json"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    doc = _smoke_record(rows)
    assert doc["smoke"]["curve"][0]["return_mean"] == "NaN"  # kept, not dropped
    assert doc["smoke"]["figures"]["best_return"] is None  # the figures skip it
    json.dumps(doc, allow_nan=False)
    [smoke_finding] = list(nan_metrics(Snapshot(doc), {}))
    [file_finding] = list(nan_metrics(Snapshot({"schema": 1, "collectors": {"runs": {"status": "ok"}},
                                                "runs": [read_run(path)]}), {}))
    assert smoke_finding.severity.label == "fail"
    assert smoke_finding.subject == "run:smoke-train"
    assert smoke_finding.message == file_finding.message
    assert "episodes finish with a NaN return" in smoke_finding.message
    for key in ("first_bad_iteration", "metrics", "iterations_judged"):
        assert smoke_finding.evidence[key] == file_finding.evidence[key], key
    # a healthy smoke run's rows give none
    healthy = RUNS / "healthy" / "result.json"
    rows = [json.loads(line) for line in healthy.read_text().splitlines() if line.strip()]
    assert list(nan_metrics(Snapshot(_smoke_record(rows, "reached")), {})) == []


def test_rld607_finds_the_smoke_runs_nan_through_check_from(tmp_path):
    """The recorded smoke run (`smoke-train --record FILE`) read back by `check --from`."""
    import json

    from conftest import run_rldoctor

    rows = [json.loads(line) for line in (RUNS / "nan-rewards" / "result.json").read_text().splitlines()
            if line.strip()]
    record = tmp_path / "smoke.json"
    record.write_text(json.dumps({**_smoke_record(rows), "created_at": "2026-01-01T00:00:00Z",
                                  "source": {"kind": "smoke-train"}}))
    result = run_rldoctor("check", "--from", str(record), "--only", "RLD607", "--format", "json")
    assert result.code == 1, result
    assert [(f["code"], f["severity"], f["subject"]) for f in result.findings()] == \
        [("RLD607", "fail", "run:smoke-train")], result


def test_rld602_sees_smoke_runners_that_report_nan_weights():
    """The smoke run's env runners report a NaN weights_seq_no in its last iterations: the
    same RLD602 warning as for a results file (the old smoke reader dropped the NaN)."""
    rows = _rows([1] * 8, [20.0] * 8)
    for row in rows[-3:]:
        row["env_runners"]["weights_seq_no"] = float("nan")
    smoke, run = _both(rows)
    base = {"schema": 1, "collectors": {"smoke": {"status": "ok"}, "runs": {"status": "ok"}}}
    found_smoke = _rld602({**base, "smoke": {**smoke, "env_runners": []}})
    found_run = _rld602({**base, "runs": [run]})
    assert [f.subject for f in found_smoke] == ["run:smoke-train"]
    assert [f.subject for f in found_run] == ["run:/tmp/x/result.json"]
    assert found_smoke[0].message == found_run[0].message
    assert "report no weights_seq_no (NaN) in the last 3 iterations (6-8)" in found_smoke[0].message
