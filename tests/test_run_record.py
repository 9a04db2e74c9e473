"""The smoke run and a results file are one kind of run record: the same RLlib result rows,
read on the cluster by the smoke trainer (smoke.remote.trim_result) and from a file by
collect.runs.point_of, give the same return curve and the same weight-sync gaps, and RLD602
judges both with the same lag rule."""

from __future__ import annotations

import math

from rldoctor.checks import _runs
from rldoctor.checks.training import stale_weights
from rldoctor.collect.runs import point_of
from rldoctor.registry import load_registry
from rldoctor.smoke.remote import trim_result
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
    smoke = {"curve": [trim_result(r) for r in rows], "settings": {"lr": 1e-3}}
    run = {"path": "/tmp/x/result.json", "points": [point_of(r) for r in rows],
           "settings": {"lr": 1e-3}}
    return smoke, run


def test_the_same_rows_give_the_same_curve_and_gaps_from_both_sources():
    returns = [20.0, 22.0, float("nan"), 30.0, 41.0, 55.0, 60.0, 61.0]
    smoke, run = _both(_rows([1, 1, 1, 2, 3, 4, 5, 6], returns))
    from_smoke = _runs.from_smoke(smoke)
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
