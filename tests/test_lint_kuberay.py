"""`rldoctor lint` on KubeRay manifests: the autoscaling config is Ray's own derivation from the
CR (the fixtures under fixtures/lint/kuberay are KubeRay's own samples, checked finding by
finding in tests/test_lint_rules.py); a CR Ray cannot derive a config from is a fail."""

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
