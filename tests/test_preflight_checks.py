"""`rldoctor preflight`'s pure parts: the checks RLD901-RLD907 on recorded preflight snapshots
(fixtures/preflight/*.json, recorded from a 3-node test cluster) changed
one fact at a time, and the reading of a TARGET into a plan (a config, a script that is never
trained, a checkpoint) without any cluster.
"""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES, ROOT
from rldoctor.checks.preflight import capacity, code, contract, gpus, storage
from rldoctor.snapshot import Snapshot

PREFLIGHT = FIXTURES / "preflight"
HEALTHY = json.loads((PREFLIGHT / "healthy.json").read_text())


@pytest.mark.parametrize("path", sorted(p for p in PREFLIGHT.glob("*.json")
                                         if not p.name.endswith(".expected.json")), ids=lambda p: p.stem)
def test_each_recorded_preflight_gives_exactly_the_expected_findings(path):
    from rldoctor.engine.registry import load_registry
    from rldoctor.engine.runner import run_checks
    from rldoctor.snapshot import load

    registry = load_registry(include_plugins=False)
    results = run_checks(registry.select(preflight=True), load(path))
    assert [r for r in results if r.status == "error"] == []
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    got = sorted((f.code, f.severity.label, f.subject) for r in results for f in r.findings)
    assert got == sorted((f["code"], f["severity"], f["subject"]) for f in expected["findings"])
    assert all(f.message and f.fix for r in results for f in r.findings)


def snap_with(plan=None, **preflight) -> Snapshot:
    doc = copy.deepcopy(HEALTHY)
    doc["preflight"]["plan"].update(plan or {})
    doc["preflight"].update(preflight)
    return Snapshot(doc)


def run(check, snap, **params):
    return list(check(snap, params))


def found_902(snap) -> list:
    """RLD902's findings, without the note of the nodes where the env built."""
    return [f for f in run(code.env_unavailable_on_node, snap) if hasattr(f, "severity")]


def demand(runners: int, cpus: float = 1.0, trials: int = 1, strategy: str = "PACK") -> dict:
    bundles = [{"role": "main process", "resources": {"CPU": 1.0}}]
    bundles += [{"role": "env runner", "resources": {"CPU": cpus}}] * runners
    return {"demand": {"bundles": bundles, "strategy": strategy, "trials": trials,
                       "env_runners": runners, "learners": 0, "tune": trials > 1}}


AUTOSCALER = {"running": True, "version": "v2",
              "node_types": [{"name": "ray.head.default", "head": True, "resources": {"CPU": 2.0}},
                             {"name": "cpu4", "resources": {"CPU": 4.0}, "max_workers": 2,
                              "current": 0}],
              "config": {"max_workers": 10}}


# ---------------------------------------------------------------------- RLD901 capacity
def test_what_fits_the_free_resources_is_placeable_now():
    assert run(capacity.demand_exceeds_capacity, snap_with(demand(5))) == []  # 6 CPUs, 6 asked


def test_more_than_the_cluster_with_no_autoscaler_is_never_placeable():
    (f,) = run(capacity.demand_exceeds_capacity, snap_with(demand(6)))
    assert f.severity.label == "fail" and "never placeable" in f.message
    assert "asks for {CPU: 7} in all; the cluster has {CPU: 6, GPU: 1}" in f.message, f.message
    assert "no autoscaler adds nodes" in f.message


def test_a_bundle_larger_than_every_node_names_the_largest_node():
    (f,) = run(capacity.demand_exceeds_capacity, snap_with(demand(1, cpus=3)))
    assert "one env runner asks for {CPU: 3}" in f.message and "the largest: {CPU: 2" in f.message


def test_placeable_after_scale_up_names_the_type_and_how_many():
    snap = snap_with(demand(9))  # 10 CPUs: 6 here, 4 more from one cpu4 node
    snap.data["autoscaler"] = AUTOSCALER
    (f,) = run(capacity.demand_exceeds_capacity, snap)
    assert f.severity.label == "warn", f
    assert "placeable only after scale-up" in f.message and "1 x cpu4" in f.message, f.message
    assert f.evidence["scale_up"] == {"cpu4": 1}


def test_beyond_the_node_types_max_workers_is_never_placeable():
    snap = snap_with(demand(20))  # 21 CPUs: 6 + 2 x 4 at most
    snap.data["autoscaler"] = AUTOSCALER
    (f,) = run(capacity.demand_exceeds_capacity, snap)
    assert f.severity.label == "fail" and "the autoscaler cannot add enough" in f.message
    # the maxima it cannot go past are named: the cluster's and each node type's
    assert "(max_workers 10; cpu4 at most 2 x {CPU: 4})" in f.message, f.message
    assert f.evidence["max_workers"] == {"node_types": {"cpu4": 2}, "cluster": 10}


def test_a_bundle_no_node_type_fits_is_never_placeable_even_with_an_autoscaler():
    snap = snap_with(demand(1, cpus=8))
    snap.data["autoscaler"] = AUTOSCALER
    (f,) = run(capacity.demand_exceeds_capacity, snap)
    assert "no node or node type offers it" in f.message and "{CPU: 4}" in f.message, f.message


def test_strict_spread_needs_a_node_per_bundle():
    (f,) = run(capacity.demand_exceeds_capacity, snap_with(demand(3, strategy="STRICT_SPREAD")))
    assert "never placeable with STRICT_SPREAD" in f.message


def test_tune_trials_multiply_the_demand():
    assert run(capacity.demand_exceeds_capacity, snap_with(demand(1, trials=3))) == []
    (f,) = run(capacity.demand_exceeds_capacity, snap_with(demand(1, trials=4)))
    assert "for each of 4 Tune trials" in f.message


def test_resources_in_use_now_make_it_wait_not_fail():
    snap = snap_with(demand(5))
    for node in snap.data["nodes"]:
        node["resources_available"]["CPU"] = 1.0
    (f,) = run(capacity.demand_exceeds_capacity, snap)
    assert f.severity.label == "warn" and "once what runs now ends" in f.message
    assert "{CPU: 3} in use" in f.message, f.message


# ---------------------------------------------------------------------- RLD902, RLD903
def test_a_node_where_no_runner_can_land_is_not_blamed_for_the_env():
    doc = json.loads((PREFLIGHT / "env-missing.json").read_text())
    snap = Snapshot(doc)
    (f,) = found_902( snap)
    missing = f.subject.split(":", 1)[1]
    assert "No module named 'pf_envs'" in f.message
    for node in doc["nodes"]:  # runners asking for 2 CPUs cannot land on a node with 1
        if node["node_id"] == missing:
            node["resources_total"]["CPU"] = 1.0
    doc["preflight"]["plan"]["demand"]["bundles"][1]["resources"]["CPU"] = 2.0
    assert found_902( Snapshot(doc)) == []


def test_the_nodes_where_the_env_builds_are_said_in_a_note():
    (n,) = run(code.env_unavailable_on_node, Snapshot(copy.deepcopy(HEALTHY)))
    assert not hasattr(n, "severity"), n
    assert n.message == ("the env CartPole-v1 imports and builds on 3 of 3 node(s) where env "
                         "runners can land"), n.message
    assert n.evidence["nodes"] == sorted(k[:8] for k in HEALTHY["preflight"]["nodes"])
    doc = json.loads((PREFLIGHT / "env-missing.json").read_text())
    f, n = run(code.env_unavailable_on_node, Snapshot(doc))
    assert f.severity.label == "fail" and "2 of 3 node(s)" in n.message, n.message
    assert f.subject.split(":", 1)[1][:8] not in n.evidence["nodes"]


def test_a_probe_that_could_not_start_in_the_runtime_env_is_named():
    doc = copy.deepcopy(HEALTHY)
    node = sorted(doc["preflight"]["nodes"])[0]
    doc["preflight"]["nodes"][node] = {"node_id": node, "failed": "RuntimeEnvSetupError: "
                                       "Failed to set up runtime environment: pip install failed"}
    (f,) = found_902( Snapshot(doc))
    assert f.subject == f"node:{node}" and "runtime_env did not run" in f.message
    assert "pip install failed" in f.message


def test_a_node_too_slow_to_answer_is_a_warning_not_a_missing_env():
    doc = copy.deepcopy(HEALTHY)
    node = sorted(doc["preflight"]["nodes"])[0]
    doc["preflight"]["nodes"][node] = {"node_id": node, "failed": "no answer within 60.0s"}
    (f,) = found_902( Snapshot(doc))
    assert f.severity.label == "warn" and "did not answer in time" in f.message


def test_python_patch_release_differing_is_a_failure():
    doc = copy.deepcopy(HEALTHY)
    node = sorted(doc["preflight"]["nodes"])[-1]
    doc["preflight"]["nodes"][node]["packages"]["python"]["version"] = "3.11.9"
    (f,) = run(code.package_skew, Snapshot(doc))
    assert f.severity.label == "fail" and f.subject == f"node:{node}"
    assert "Python differs between nodes" in f.message and "3.11.9 on" in f.message


def test_numpy_majors_differing_is_a_failure_one_major_a_warning():
    doc = json.loads((PREFLIGHT / "numpy-skew.json").read_text())
    (f,) = run(code.package_skew, Snapshot(doc))
    assert f.severity.label == "warn" and "2.0.2 on" in f.message
    for view in doc["preflight"]["nodes"].values():
        if view["packages"]["numpy"]["version"] == "2.0.2":
            view["packages"]["numpy"]["version"] = "1.26.4"
    (f,) = run(code.package_skew, Snapshot(doc))
    assert f.severity.label == "fail" and "1.26.4 on" in f.message


# ---------------------------------------------------------------------- RLD904 storage
def test_a_storage_path_local_to_every_node_is_one_finding():
    doc = json.loads((PREFLIGHT / "storage-tmpfs.json").read_text())
    (f,) = run(storage.storage_not_shared, Snapshot(doc))
    assert "tmpfs" in f.message
    doc["preflight"]["storage_seen"] = {n: [n] for n in doc["preflight"]["storage_seen"]}
    (f,) = run(storage.storage_not_shared, Snapshot(doc))
    assert f.subject == "cluster" and "a different directory on each of the 3 nodes" in f.message


def test_a_node_that_cannot_write_the_storage_path_is_named():
    doc = json.loads((PREFLIGHT / "storage-tmpfs.json").read_text())
    node = sorted(doc["preflight"]["nodes"])[0]
    doc["preflight"]["nodes"][node]["storage"].update(
        written=False, error="PermissionError: [Errno 13] Permission denied")
    found = run(storage.storage_not_shared, Snapshot(doc))
    assert any(f.subject == f"node:{node}" and "not writable" in f.message
               and "Permission denied" in f.message for f in found), found


def test_cloud_storage_is_not_probed():
    snap = snap_with({"storage": {"path": "s3://bucket/runs", "uri": True}})
    assert run(storage.storage_not_shared, snap) == []


# ---------------------------------------------------------------------- RLD905, RLD906
def test_an_env_that_never_ends_is_a_warning_and_with_complete_episodes_a_failure():
    contract_doc = dict(HEALTHY["preflight"]["contract"], episodes_ended=0, max_episode_steps=None)
    (f,) = run(contract.env_contract, snap_with(contract=contract_doc))
    assert f.severity.label == "warn" and "no episode ended in" in f.message
    settings = dict(HEALTHY["preflight"]["plan"]["settings"], batch_mode="complete_episodes")
    (f,) = run(contract.env_contract, snap_with({"settings": settings}, contract=contract_doc))
    assert f.severity.label == "fail" and "complete_episodes" in f.message


def test_a_dict_observation_space_is_a_warning():
    contract_doc = dict(HEALTHY["preflight"]["contract"], observation_space="Dict")
    (f,) = run(contract.env_contract, snap_with(contract=contract_doc))
    assert f.severity.label == "warn" and "FlattenObservations" in f.fix


@pytest.mark.parametrize("step_s, severity", [(0.001, None), (0.02, "warn"), (0.05, "fail")])
def test_the_time_a_fragment_takes_against_sample_timeout_s(step_s, severity):
    contract_doc = dict(HEALTHY["preflight"]["contract"], step_s=step_s)
    settings = dict(HEALTHY["preflight"]["plan"]["settings"], rollout_fragment_length=2000,
                    sample_timeout_s=60.0)
    found = run(contract.env_too_slow, snap_with({"settings": settings}, contract=contract_doc),
                warn_ratio=0.5)
    assert [f.severity.label for f in found] == ([severity] if severity else [])


# ---------------------------------------------------------------------- RLD907 GPUs
def test_gpus_that_torch_sees_are_no_finding():
    doc = json.loads((PREFLIGHT / "gpu-no-cuda.json").read_text())
    (f,) = run(gpus.gpu_not_usable, Snapshot(doc))
    assert "counts 0 device(s)" in f.message
    node = f.subject.split(":", 1)[1]
    doc["preflight"]["nodes"][node]["gpus"]["as_gpu_worker"].update(
        count=1, available=True, cuda_build="12.4")
    assert run(gpus.gpu_not_usable, Snapshot(doc)) == []


def test_a_gpu_probe_that_timed_out_is_not_judged_and_torch_missing_is():
    """A node too busy to answer in time says nothing about its GPUs: a note, not a finding."""
    doc = json.loads((PREFLIGHT / "gpu-no-cuda.json").read_text())
    (f,) = run(gpus.gpu_not_usable, Snapshot(doc))
    node = f.subject.split(":", 1)[1]
    seen = doc["preflight"]["nodes"][node]["gpus"]["as_gpu_worker"]
    for key in ("count", "available", "torch", "cuda_build"):
        seen.pop(key, None)
    seen["error"] = "TimeoutExpired: Command '['python', '-c', '...']' timed out after 30.0 seconds"
    (n,) = run(gpus.gpu_not_usable, Snapshot(doc))
    assert not hasattr(n, "severity") and "were not judged" in n.message, n
    seen["error"] = "No module named 'torch'"
    (f,) = run(gpus.gpu_not_usable, Snapshot(doc))
    assert f.severity.name.lower() == "fail" and "torch could not be asked" in f.message


# ---------------------------------------------------------------------- reading a TARGET
def test_a_script_is_read_up_to_its_tuner_and_never_trained(monkeypatch, tmp_path):
    import ray

    from rldoctor.inputs.training import plan_of

    monkeypatch.setenv("PF_STORAGE", str(tmp_path / "runs"))
    init = ray.init
    plan = plan_of(str(ROOT / "tests" / "targets" / "preflight" / "train_tuner.py"))
    assert ray.init is init  # the entry points are back
    assert not ray.is_initialized()
    assert plan["entry"] == "tune.Tuner" and plan["demand"]["tune"] is True
    assert plan["storage"]["path"] == str(tmp_path / "runs")
    assert plan["env"]["kind"] == "pickled" and plan["env"]["name"] == "cartpole-from-script"
    assert not (tmp_path / "runs").exists()


def test_a_checkpoint_gives_its_saved_config():
    from rldoctor.inputs.training import plan_of

    plan = plan_of(str(PREFLIGHT / "checkpoint"))
    assert plan["algo"] == "PPO" and plan["entry"] == "checkpoint"
    assert plan["env"] == {"kind": "gym_id", "name": "CartPole-v1", "env_config": {},
                           "registered_here": True}


def test_targets_that_are_not_a_training_are_one_usage_line(tmp_path):
    from rldoctor.errors import UsageError
    from rldoctor.inputs.training import check_target, plan_of

    with pytest.raises(UsageError, match="expected MODULE:ATTR"):
        check_target("nothing-here")
    with pytest.raises(UsageError, match="not an RLlib checkpoint"):
        plan_of(str(tmp_path))
    script = tmp_path / "plain.py"
    script.write_text("x = 1\n")
    with pytest.raises(UsageError, match="no AlgorithmConfig found"):
        plan_of(str(script))


def test_the_command_refuses_what_is_no_training_in_one_line_exit_2(tmp_path):
    from conftest import run_rldoctor

    for target, says in ((str(tmp_path), "not an RLlib checkpoint"),
                         ("no-such-thing", "expected MODULE:ATTR"),
                         ("missing.py", "no such file")):
        result = run_rldoctor("preflight", target, "--address", "127.0.0.1:1")
        assert result.code == 2, result
        assert result.stderr.count("\n") == 1 and says in result.stderr, result
    result = run_rldoctor("preflight", "x:y", "--runtime-env", "[1]")
    assert result.code == 2 and "--runtime-env" in result.stderr, result
