"""RLD601-RLD604 on handmade and recorded smoke runs, and the smoke driver's pure helpers.

No cluster here: the checks are pure functions of the `smoke` and `scaling` sections.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor import words
from rldoctor.cluster import smoke
from rldoctor.errors import Undiagnosable, UsageError
from rldoctor.engine.registry import load_registry
from rldoctor.engine.runner import run_checks
from rldoctor.metric_numbers import point_of
from rldoctor.snapshot import Snapshot, load

SMOKE_FIXTURES = sorted(p for p in (FIXTURES / "smoke").glob("*.json")
                        if not p.name.endswith(".expected.json"))
TRAINING = ("RLD601", "RLD602", "RLD603", "RLD604")


def _training_checks():
    return [c for c in load_registry(include_plugins=False).checks if c.code in TRAINING]


def _findings(doc: dict) -> list[tuple[str, str, str]]:
    results = run_checks(_training_checks(), Snapshot(doc))
    assert [r for r in results if r.status == "error"] == []
    return sorted((f.code, f.severity.label, f.subject) for r in results for f in r.findings)


def _curve(returns, lag=None, start_seq=0):
    """A handmade curve: one point per return; `lag` (list) is learner minus runner seq_no."""
    out = []
    for i, ret in enumerate(returns, start=1):
        learner = start_seq + i
        gap = 1.0 if lag is None else lag[i - 1]
        out.append({"iteration": i, "time_this_iter_s": 1.0, "elapsed_s": 20.0 + i, "return_mean": ret,
                    "env_steps": 1000.0, "env_steps_lifetime": 1000.0 * i, "steps_per_s": 1000.0,
                    "learner_update_s": 0.3, "sync_weights_s": 0.01, "sample_s": 0.6,
                    "learners": {"default_policy": {"weights_seq_no": float(learner)}},
                    "runner_weights_seq_no": learner - gap,
                    "runner_restarts": 0.0, "runners_healthy": 1.0})
    return out


def _doc(returns, outcome=None, target=195.0, lag=None, checkpoint=None, lr=1e-3, **smoke_extra):
    curve = _curve(returns, lag)
    if outcome is None:
        outcome = "reached" if any(r >= target for r in returns) else "missed"
    section = {"outcome": outcome, "stage": "done", "target_return": target, "time_budget_s": 60.0,
               "num_env_runners": 1, "settings": dict(smoke.SmokeSettings().to_dict(), lr=lr),
               "curve": curve, "env_runners": [{"worker_index": 1, "node_id": "n1", "node_ip": "127.0.0.10"}],
               "learner": {"node_id": "n1"}, "startup_s": 20.0,
               "checkpoint": checkpoint or {"status": "ok", "mean_return": 300.0,
                                            "returns": [300.0] * 5, "save_s": 0.1, "restore_s": 5.0},
               "nodes": [{"node_id": "n1", "node_ip": "127.0.0.10", "cpus": 2.0, "free_cpus": 2.0}]}
    section.update(smoke_extra)
    section["figures"] = smoke.compute_figures(section)
    return {"schema": "rldoctor.snapshot/v1", "collectors": {"smoke": {"status": "ok"}},
            "smoke": section}


# -- the driver's pure helpers -------------------------------------------------------------
def test_plan_cpus_fits_learner_and_runners_on_one_cpu_nodes():
    assert smoke.plan_cpus([2.0], 1) == 1.0
    assert smoke.plan_cpus([1.0, 1.0, 1.0], 3) == 0.5  # 4 bundles on three 1-CPU nodes
    assert smoke.plan_cpus([2.0], 4) == 0.25
    assert smoke.plan_cpus([8.0, 8.0], 3) == 1.0
    with pytest.raises(Undiagnosable, match="not enough free CPU"):
        smoke.plan_cpus([0.05], 1)


def test_percentile_and_mean():
    assert words.percentile([1, 2, 3, 4, 5], 50) == 3
    assert math.isclose(words.percentile(list(range(1, 101)), 95), 95.05)
    assert words.percentile([None], 95) is None
    assert smoke.mean([1, None, 3]) == 2


def test_figures_of_a_run_that_reached_its_target():
    doc = _doc([20, 60, 150, 210, 250])
    fig = doc["smoke"]["figures"]
    assert fig["reached_target"] and fig["steps_to_target"] == 4000
    assert fig["seconds_to_target"] == 24.0 and fig["training_seconds_to_target"] == 4.0
    assert fig["best_return"] == 250 and fig["iterations"] == 5
    assert fig["iteration_s_mean"] == fig["iteration_s_p95"] == 1.0
    assert fig["env_steps_per_s"] == 1000.0
    assert fig["learner_update_s_mean"] == 0.3 and fig["weight_sync_s_mean"] == 0.01
    assert fig["env_runner_nodes"] == 1


def test_scaling_table_recommends_most_throughput_per_cpu():
    runs = [{"env_runners": 1, "status": "ok", "env_steps_per_s": 1800.0},
            {"env_runners": 2, "status": "ok", "env_steps_per_s": 2600.0},
            {"env_runners": 4, "status": "ok", "env_steps_per_s": 2700.0}]
    table = smoke.scaling_table(runs)
    assert table["recommended"] == 1 and table["fastest"] == 4 and table["baseline"] == 1
    assert runs[1]["speedup"] == pytest.approx(1.444, abs=1e-3)
    assert runs[2]["efficiency"] == pytest.approx(2700 / 1800 / 4, abs=1e-3)
    assert smoke.scaling_table([{"env_runners": 1, "status": "failed"}])["recommended"] is None


def test_parse_scaling():
    assert smoke.parse_scaling("4,1,2,2") == [1, 2, 4]
    assert smoke.parse_scaling(None) == []
    for bad in ("a,b", "0,1", ","):
        with pytest.raises(UsageError):
            smoke.parse_scaling(bad)


def test_the_smoke_point_keeps_rllib_keys_and_nan_as_text():
    result = {"training_iteration": 3, "time_this_iter_s": 0.7, "num_env_steps_sampled_lifetime": 3000,
              "env_runners": {"episode_return_mean": float("nan"), "num_env_steps_sampled": 1000,
                              "weights_seq_no": 2.0, "num_episodes": 40},
              "learners": {"default_policy": {"weights_seq_no": 3.0}},
              "timers": {"env_runner_sampling_timer": 0.4, "learner_update_timer": 0.25,
                         "synch_weights": 0.01},
              "fault_tolerance": {"num_healthy_workers": 1, "num_remote_worker_restarts": 0}}
    point = point_of(result)
    assert point["return_mean"] == "NaN" and point["env_steps_lifetime"] == 3000
    assert point["learners"]["default_policy"]["weights_seq_no"] - point["runner_weights_seq_no"] == 1
    assert point["learner_update_s"] == 0.25 and point["sync_weights_s"] == 0.01
    json.dumps(point, allow_nan=False)


def test_no_recorded_cluster_in_an_empty_ray_tmpdir(tmp_path):
    code = "from rldoctor.cluster.smoke import recorded_local_address; print(recorded_local_address())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"RAY_TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.stdout.strip() == "None", proc.stderr


# -- RLD601 training-stall -----------------------------------------------------------------
def test_rld601_flat_curve_fails_and_names_lr_zero():
    doc = _doc([22, 21, 24, 22, 23, 21, 22, 24, 23], lr=0.0)
    assert ("RLD601", "fail", "run:smoke-train") in _findings(doc)
    finding = next(f for r in run_checks(_training_checks(), Snapshot(doc)) for f in r.findings
                   if f.code == "RLD601")
    assert "learning rate is 0" in finding.fix and finding.evidence["flat_iterations"] >= 5


def test_rld601_plateau_after_learning_warns():
    doc = _doc([20, 50, 90, 120, 121, 119, 122, 120, 118, 121])
    assert ("RLD601", "warn", "run:smoke-train") in _findings(doc)


def test_rld601_quiet_on_learning_short_or_reached_runs():
    assert not [f for f in _findings(_doc([20, 40, 60, 80, 100, 120, 140])) if f[0] == "RLD601"]
    assert not [f for f in _findings(_doc([22, 21, 23])) if f[0] == "RLD601"]  # too short to tell
    assert _findings(_doc([20, 60, 100, 100, 100, 100, 100, 100, 200])) == []


# -- RLD602 stale-weights ------------------------------------------------------------------
def test_rld602_growing_gap_warns():
    doc = _doc([20, 30, 40, 50, 60, 70], lag=[1, 1, 2, 3, 4, 5])
    assert ("RLD602", "warn", "run:smoke-train") in _findings(doc)


def test_rld602_normal_lag_of_one_is_quiet():
    doc = _doc([20, 60, 150, 210], lag=[1, 1, 1, 1])
    assert _findings(doc) == []


def test_rld602_runner_behind_at_the_end():
    doc = _doc([20, 60, 150, 210], learner={"node_id": "n1", "final_weights_seq_no": 4.0})
    doc["smoke"]["env_runners"][0]["final_weights_seq_no"] = 1.0
    assert ("RLD602", "warn", "run:smoke-train") in _findings(doc)


# -- RLD603 smoke-train-failed -------------------------------------------------------------
def test_rld603_missed_target_blames_no_progress():
    doc = _doc([22, 21, 24, 22, 23, 21, 22])
    findings = run_checks(_training_checks(), Snapshot(doc))
    rld603 = [f for r in findings for f in r.findings if f.code == "RLD603"]
    assert len(rld603) == 1 and rld603[0].severity.label == "fail"
    assert "RLD601" in rld603[0].evidence["likely_cause"]


def test_rld603_crash_with_restarts_points_to_rld401():
    doc = _doc([20, 30], outcome="crashed", error="train() failed: ActorDiedError: ...",
               stage="training", checkpoint={"status": "skipped"})
    doc["smoke"]["curve"][-1]["runner_restarts"] = 3.0
    doc["smoke"]["figures"] = smoke.compute_figures(doc["smoke"])
    f = next(f for r in run_checks(_training_checks(), Snapshot(doc)) for f in r.findings
             if f.code == "RLD603")
    assert "crashed" in f.message and "RLD401" in f.evidence["likely_cause"]


def test_rld603_hang_before_the_first_iteration():
    doc = _doc([], outcome="hung", stage="startup", checkpoint={"status": "skipped"},
               error="the placement group ... was not scheduled within 180s")
    assert _findings(doc) == [("RLD603", "fail", "run:smoke-train")]


def test_rld603_checkpoint_round_trip_failures():
    broken = _doc([20, 100, 200], checkpoint={"status": "failed", "step": "restore",
                                              "error": "FileNotFoundError: ..."})
    assert _findings(broken) == [("RLD603", "fail", "run:smoke-train/checkpoint")]
    untrained = _doc([20, 100, 200], checkpoint={"status": "ok", "mean_return": 21.0,
                                                 "returns": [21.0] * 5})
    assert _findings(untrained) == [("RLD603", "fail", "run:smoke-train/checkpoint")]


# -- RLD604 poor-scaling -------------------------------------------------------------------
def _scaling_doc(rates):
    runs = [{"env_runners": n, "status": "ok", "mean_iter_s": 1000 * n / r if False else 1.0,
             "env_steps_per_s": r} for n, r in rates]
    doc = _doc([20, 100, 200])
    doc["scaling"] = smoke.scaling_table(runs)
    return doc


def test_rld604_flat_throughput_warns_with_recommendation():
    doc = _scaling_doc([(1, 1800.0), (2, 1850.0), (4, 1700.0)])
    assert ("RLD604", "warn", "run:scaling") in _findings(doc)
    f = next(f for r in run_checks(_training_checks(), Snapshot(doc)) for f in r.findings
             if f.code == "RLD604")
    assert f.evidence["recommended"] == 1 and "Use 1 env runner" in f.fix


def test_rld604_good_scaling_is_info_only():
    assert _findings(_scaling_doc([(1, 1000.0), (2, 1900.0), (4, 3600.0)])) == [
        ("RLD604", "info", "run:scaling")]


def test_rld604_skipped_without_a_sweep():
    results = run_checks(_training_checks(), Snapshot(_doc([20, 200])))
    assert next(r for r in results if r.code == "RLD604").status == "skipped"


# -- recorded runs -------------------------------------------------------------------------
def test_recorded_smoke_runs_exist():
    assert SMOKE_FIXTURES, "no recorded smoke runs in fixtures/smoke/"
    for path in SMOKE_FIXTURES:
        assert path.with_name(path.stem + ".expected.json").exists(), path


@pytest.mark.parametrize("path", SMOKE_FIXTURES, ids=lambda p: p.stem)
def test_recorded_smoke_run_gives_the_expected_findings(path):
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    snap = load(path)
    assert _findings(snap.data) == sorted((f["code"], f["severity"], f["subject"])
                                          for f in expected["findings"])
    assert snap["smoke"]["figures"] == smoke.compute_figures(snap["smoke"])


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
@pytest.mark.parametrize("path", SMOKE_FIXTURES, ids=lambda p: p.stem)
def test_check_from_a_recorded_smoke_run(path):
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    result = run_rldoctor("check", "--from", str(path), "--only", ",".join(TRAINING),
                          "--format", "json")
    want_fail = any(f["severity"] == "fail" for f in expected["findings"])
    assert result.code == (1 if want_fail else 0), result
    assert result.seconds < 5


# -- the command without a cluster ---------------------------------------------------------
def test_smoke_train_usage_errors_are_one_line():
    result = run_rldoctor("smoke-train", "--scaling", "1,x")
    assert result.code == 2 and result.stderr.count("\n") == 1, result
    result = run_rldoctor("smoke-train", "--output", "/no/such/dir/report.json")
    assert result.code == 2 and "does not exist" in result.stderr, result


def test_smoke_train_unreachable_address_exits_3():
    result = run_rldoctor("smoke-train", "--address", "127.0.0.1:9", timeout=60)
    assert result.code == 3, result
    assert result.stderr.startswith("rldoctor: cannot reach") and "Traceback" not in result.stderr


def test_smoke_train_help_never_imports_ray_or_torch():
    code = ("import sys\nfrom rldoctor.cli import main\n"
            "try:\n    main(['smoke-train', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('ray', 'torch', 'gymnasium', 'matplotlib') if m in sys.modules),"
            " file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "--target-return" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "[]"


def test_a_random_policys_jitter_is_not_learning():
    """lr=0 on a loaded machine: a low first window and a few lucky ones later (+6)."""
    from rldoctor.checks._runs import judge_return
    from rldoctor.checks.training.runs import STALL_PARAMS

    noisy = [18.0, 20.0, 19.0, 24.0, 26.0, 25.0, 23.0, 27.0, 24.0, 21.0]
    assert judge_return(noisy, STALL_PARAMS)["learned"] is False
    learning = [22.4, 28.0, 30.2, 39.8, 51.9, 68.1, 84.8, 103.5]
    assert judge_return(learning, STALL_PARAMS)["learned"] is True


def test_the_smoke_trainer_travels_by_value_to_a_node_without_rldoctor():
    """register() ships remote.py and the number reader it uses by value: a Python that cannot
    import rldoctor unpickles the trainer and reads a result (NaN kept as text, numbers kept)."""
    import ray.cloudpickle as cloudpickle

    from rldoctor.node import smoke as remote

    remote.register()
    payload = cloudpickle.dumps((remote.SmokeTrainer, remote.point_of))
    code = ("import pickle, sys\n"
            "class NoRldoctor:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'rldoctor':\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, NoRldoctor())\n"
            "trainer, trim = pickle.loads(sys.stdin.buffer.read())\n"
            "point = trim({'training_iteration': 2, 'time_this_iter_s': 0.5,\n"
            "              'env_runners': {'episode_return_mean': float('nan'), 'weights_seq_no': 1}})\n"
            "print(point['iteration'], point['time_this_iter_s'], point['return_mean'],\n"
            "      point['runner_weights_seq_no'], trainer.__name__,\n"
            "      sorted(m for m in sys.modules if m.startswith('rldoctor')))\n")
    proc = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True,
                          timeout=60)
    assert proc.stdout.decode().split() == ["2.0", "0.5", "NaN", "1.0", "SmokeTrainer", "[]"], \
        proc.stderr.decode()[-2000:]


def test_smoke_figures_are_a_report_part_every_renderer_draws():
    """smoke-train's report comes from the pipeline: the figures are a part of the Report that
    the table draws above the checks, markdown after them and JSON as `figures`."""
    from rldoctor.engine.pipeline import Diagnosis
    from rldoctor.report.render import RENDERERS
    from rldoctor.report.smoke import headline

    doc = _doc([20, 100, 200])
    diagnosis = Diagnosis.from_options(codes=("RLD601", "RLD602", "RLD603", "RLD604"),
                                       read_mutes=False, smoke_figures=True)
    assert sorted(c.code for c in diagnosis.checks) == ["RLD601", "RLD602", "RLD603", "RLD604"]
    report = diagnosis.run(Snapshot(doc), {"kind": "smoke-train"})
    assert report.figures["outcome"] == "reached" and len(report.figures["curve"]) == 3
    line = headline(report.figures)
    table = RENDERERS["table"](report)
    # the checks come as one line of counts and the rows that are not OK (issue 32's order)
    assert table.startswith(line.split(" in ")[0]) and table.index(line) < table.index("Checks:")
    markdown = RENDERERS["markdown"](report)
    assert markdown.index("### Checks") < markdown.index(line)
    assert json.loads(RENDERERS["json"](report))["figures"]["outcome"] == "reached"
    # a check of a recorded smoke run (`check --from`) is asked for no figures: none drawn
    plain = Diagnosis.every_check().run(Snapshot(doc), {"kind": "snapshot"})
    assert plain.figures == {} and line not in RENDERERS["table"](plain)
