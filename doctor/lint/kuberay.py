"""KubeRay RayCluster and RayJob manifests, read for lint (offline, nothing contacted).

The autoscaling config is derived from the CR with Ray's own function, the one KubeRay's
autoscaler runs on the live CR (`ray.autoscaler._private.kuberay.autoscaling_config.
_derive_autoscaling_config_from_ray_cr`), so the node types, min/max and idle timeout are
what the autoscaler would use. A RayJob's `spec.rayClusterSpec` is read as the RayCluster it
creates. What only a CR can get wrong (container limits against rayStartParams, the idle
timeout default, a head that takes work) is judged in rldoctor.checks._kuberay.
"""

from __future__ import annotations

import copy
import re

KINDS = ("RayCluster", "RayJob", "RayService")


def looks_like_kuberay(data: object) -> bool:
    return (isinstance(data, dict) and data.get("kind") in KINDS
            and str(data.get("apiVersion", "")).startswith("ray.io/")
            and isinstance(data.get("spec"), dict))


def cluster_spec(data: dict) -> tuple[dict | None, str]:
    """(the RayCluster spec, its JSON pointer in the manifest)."""
    kind = data.get("kind")
    spec = data.get("spec") or {}
    if kind == "RayJob":
        return spec.get("rayClusterSpec"), "/spec/rayClusterSpec"
    if kind == "RayService":
        return spec.get("rayClusterConfig"), "/spec/rayClusterConfig"
    return spec, "/spec"


MAX_REPLICAS_DEFAULT = 2147483647  # KubeRay's CRD default for a worker group's maxReplicas


def with_api_defaults(cr: dict) -> dict:
    """The CR as the autoscaler reads it from the Kubernetes API: with what the API server fills
    in from KubeRay's CRD (no worker groups, a group's minReplicas 0 and maxReplicas
    2147483647, empty rayStartParams) and a name for a `generateName` manifest."""
    meta = cr["metadata"]
    if not meta.get("name"):
        meta["name"] = f"{meta.get('generateName') or 'unnamed-'}00000"
    spec = cr["spec"]
    if not isinstance(spec.get("workerGroupSpecs"), list):
        spec["workerGroupSpecs"] = []
    for group in [spec.get("headGroupSpec")] + spec["workerGroupSpecs"]:
        if isinstance(group, dict):
            group.setdefault("rayStartParams", {})
    for group in spec["workerGroupSpecs"]:
        if isinstance(group, dict):
            group.setdefault("minReplicas", 0)
            group.setdefault("maxReplicas", MAX_REPLICAS_DEFAULT)
    return cr


def derive(data: dict) -> dict:
    """{"config": the autoscaling config Ray derives, or "error": why Ray refuses the CR}."""
    spec, base = cluster_spec(data)
    if not isinstance(spec, dict):
        return {"base": base, "error": f"no cluster spec at {base}"}
    cr = with_api_defaults({"apiVersion": data.get("apiVersion"), "kind": "RayCluster",
                            "metadata": {"namespace": "default", **(data.get("metadata") or {})},
                            "spec": copy.deepcopy(spec)})
    try:
        from ray.autoscaler._private.kuberay.autoscaling_config import (
            _derive_autoscaling_config_from_ray_cr,
        )
    except ImportError:  # the client-only install: Ray's derivation is not here, and said so
        return {"base": base, "ray_absent": True}
    try:
        config = _derive_autoscaling_config_from_ray_cr(cr)
    except Exception as exc:  # what the autoscaler sidecar would crash on
        text = re.sub(r"\s+", " ", str(exc)).strip()
        return {"base": base, "error": f"{type(exc).__name__}: {text}"[:600]}
    return {"base": base, "config": config}
