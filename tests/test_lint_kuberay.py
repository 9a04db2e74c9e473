"""`rldoctor lint` on KubeRay manifests: the autoscaling config is Ray's own derivation from the
CR (the fixtures under fixtures/lint/kuberay are KubeRay's own samples, checked finding by
finding in tests/test_lint_rules.py); a CR the autoscaler reads (enableInTreeAutoscaling) that
Ray cannot derive a config from is a fail, once what the Kubernetes API server fills in from
KubeRay's CRD is there."""

from __future__ import annotations

import yaml

from conftest import FIXTURES
from conftest import lint_paths
from rldoctor.lint import kuberay


def test_autoscaling_config_is_what_ray_derives_from_the_cr():
    data = next(yaml.safe_load_all((FIXTURES / "lint/kuberay/ray-cluster.autoscaler.yaml").read_text()))
    derived = kuberay.derive(data)["config"]
    group = derived["available_node_types"]["small-group"]
    assert (group["min_workers"], group["max_workers"], group["resources"]["CPU"]) == (0, 10, 1)
    assert derived["idle_timeout_minutes"] == 1.0  # idleTimeoutSeconds: 60
    assert derived["available_node_types"]["headgroup"]["resources"]["CPU"] == 0


def test_rayjob_cluster_spec_is_read_as_its_raycluster():
    data = next(yaml.safe_load_all((FIXTURES / "lint/kuberay/ray-job.resources.yaml").read_text()))
    derived = kuberay.derive(data)
    assert derived["base"] == "/spec/rayClusterSpec"
    assert derived["config"]["available_node_types"]["headgroup"]["resources"]["GPU"] == 2


def test_a_cr_ray_cannot_derive_a_config_from_fails(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: x\n"
                    "spec:\n  enableInTreeAutoscaling: true\n  workerGroupSpecs: []\n")
    report, problems, _ = lint_paths([str(path)])
    found = [f for f in report.findings if f.code == "RLD802"]
    assert len(found) == 1 and found[0].severity.label == "fail", found
    assert "Ray's own derivation" in found[0].message and "headGroupSpec" in found[0].message


HEAD = ("  headGroupSpec:\n    rayStartParams: {}\n    template:\n      spec:\n        containers:\n"
        "        - name: ray-head\n          image: rayproject/ray:2.60.0\n"
        "          resources: {limits: {cpu: '2', memory: 4Gi}}\n")
WORKERS = ("  workerGroupSpecs:\n  - groupName: cpu\n    replicas: 1\n    template:\n      spec:\n"
           "        containers:\n        - name: ray-worker\n          image: rayproject/ray:2.60.0\n"
           "          resources: {limits: {cpu: '4', memory: 8Gi}}\n")


def _lint(tmp_path, text: str):
    path = tmp_path / "cr.yaml"
    path.write_text(text)
    report, _, _ = lint_paths([str(path)])
    return [f for f in report.findings if f.code == "RLD802"]


def test_what_the_api_server_fills_in_is_not_a_cr_the_autoscaler_cannot_read(tmp_path):
    """Manifests as people apply them leave out what KubeRay's CRD defaults (a group's
    minReplicas 0 and maxReplicas 2147483647, no worker groups at all) or name themselves with
    generateName: the autoscaler reads the CR from the API server with those filled in, so
    Ray's derivation on the raw manifest must not fail on them (13 of KubeRay's own samples did)."""
    text = ("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  generateName: rl-\n"
            "spec:\n  enableInTreeAutoscaling: true\n"
            "  autoscalerOptions: {idleTimeoutSeconds: 600}\n" + HEAD + WORKERS)
    derived = kuberay.derive(next(yaml.safe_load_all(text)))
    group = derived["config"]["available_node_types"]["cpu"]
    assert (group["min_workers"], group["max_workers"]) == (0, kuberay.MAX_REPLICAS_DEFAULT), derived
    assert not [f for f in _lint(tmp_path, text) if "cannot read" in f.message]
    head_only = "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: solo\nspec:\n" + HEAD
    assert _lint(tmp_path, head_only) == []  # nowhere else to run: the head's CPUs are no fault


def test_a_cr_no_autoscaler_reads_is_not_failed_for_its_derivation(tmp_path):
    """Without enableInTreeAutoscaling nothing derives an autoscaling config from the CR."""
    text = ("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: x\nspec:\n"
            "  workerGroupSpecs: []\n")
    assert not [f for f in _lint(tmp_path, text) if "cannot read" in f.message]
    with_workers = "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: x\nspec:\n" + HEAD + WORKERS
    assert not _lint(tmp_path, with_workers)  # a general-purpose cluster: no RLlib advice
    rllib = with_workers.replace("metadata:\n  name: x", "metadata:\n  name: rllib-ppo")
    [head] = _lint(tmp_path, rllib)  # advice for an RLlib training, not an error
    assert head.severity.label == "info" and "the head offers 2 CPU(s)" in head.message
