"""RLD802 on KubeRay RayCluster / RayJob manifests: the same rules as for `ray up` YAML, on the
autoscaling config Ray derives from the CR (rldoctor.lint.kuberay), plus what only a CR can
get wrong. Pure: reads the lint section's facts."""

from __future__ import annotations

import re

from rldoctor.lint.rules._cluster_config import about_rllib, cluster_problems
from rldoctor.lint.rules._cluster_fixes import FIXES
from rldoctor.lint.rules._problem import Problem
from rldoctor.lint.rules._ray_start import params_problems
from rldoctor.shape import kind_of

KUBERAY_IDLE_DEFAULT_S = 60  # Ray's derivation: idle_timeout_minutes 1.0 without idleTimeoutSeconds
_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20,
          "Gi": 2**30, "Ti": 2**40, "m": 1e-3}


def quantity(value) -> float | None:
    """A Kubernetes quantity ("500m", "5Gi", 2) as a number; None when unreadable."""
    if value is None:
        return None
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-zA-Z]*)\s*", str(value).strip('"\''))
    if not m or m.group(2) not in _UNITS:
        return None
    return float(m.group(1)) * _UNITS[m.group(2)]


def _spec_at(data: dict, base: str) -> dict:
    spec = data
    for part in base.strip("/").split("/"):
        spec = (spec if isinstance(spec, dict) else {}).get(part) or {}
    return spec if isinstance(spec, dict) else {}


def _groups(data: dict, base: str) -> list[tuple[str, str, dict]]:
    """[(name, pointer, group spec)] for the head group and each worker group that is a
    mapping (`_not_mappings` reports the others)."""
    spec = _spec_at(data, base)
    head = spec.get("headGroupSpec")
    out = [("headgroup", f"{base}/headGroupSpec", head if isinstance(head, dict) else {})]
    workers = spec.get("workerGroupSpecs")
    for i, group in enumerate(workers if isinstance(workers, list) else []):
        if isinstance(group, dict):
            out.append((str(group.get("groupName") or f"group {i}"),
                         f"{base}/workerGroupSpecs/{i}", group))
    return out


def _not_mappings(data: dict, base: str) -> list[Problem]:
    """A head group, worker group list or worker group of the wrong kind: KubeRay's CRD
    rejects the manifest (kubectl apply fails), so nothing else of it is judged."""
    spec = _spec_at(data, base)
    wrong = []
    head = spec.get("headGroupSpec")
    if head is not None and not isinstance(head, dict):
        wrong.append((f"{base}/headGroupSpec", "headGroupSpec", head, "a mapping"))
    workers = spec.get("workerGroupSpecs")
    if workers is not None and not isinstance(workers, list):
        wrong.append((f"{base}/workerGroupSpecs", "workerGroupSpecs", workers, "a list of mappings"))
    for i, group in enumerate(workers if isinstance(workers, list) else []):
        if not isinstance(group, dict):
            wrong.append((f"{base}/workerGroupSpecs/{i}", f"workerGroupSpecs[{i}]", group,
                          "a mapping"))
    return [Problem("fail", pointer, f"{name} is {kind_of(value)}, not {kind}: KubeRay's CRD "
                    "rejects this manifest", FIXES["a KubeRay field is of the wrong kind"].format(name=name, kind=kind),
                    "", {"found": kind_of(value)})
            for pointer, name, value, kind in wrong]


def _ray_container(group: dict) -> dict:
    containers = (((group.get("template") or {}).get("spec") or {}).get("containers") or [])
    return containers[0] if containers and isinstance(containers[0], dict) else {}


def _limits(container: dict) -> dict:
    resources = container.get("resources") or {}
    return {**(resources.get("requests") or {}), **(resources.get("limits") or {})}


def kuberay_problems(doc: dict, ray_version: str) -> list[Problem]:
    data = doc["data"]
    facts = doc.get("kuberay") or {}
    base = facts.get("base") or "/spec"
    spec = _spec_at(data, base)
    wrong = _not_mappings(data, base)
    if wrong:
        return wrong
    if facts.get("error") and not spec.get("enableInTreeAutoscaling"):
        facts = {**facts, "error": None}  # no autoscaler reads it: the CR's own rules below
    if facts.get("error"):
        return [Problem("fail", base, f"KubeRay's autoscaler cannot read this {data.get('kind')}: Ray's "
                        f"own derivation of the autoscaling config from it fails ({facts['error']})",
                        FIXES["Ray cannot derive the autoscaling config from a KubeRay manifest"].format(), "",
                        {"ray_error": facts["error"]})]
    out: list[Problem] = []
    groups = _groups(data, base)
    pointers = {name: pointer for name, pointer, _ in groups}
    config = facts.get("config") or {}
    # The rules of `ray up` YAML, on the config the autoscaler derives (the head group's 0 CPUs
    # are KubeRay's advice, not a mistake); without Ray (the client-only install) only the
    # CR's own rules run, and RLD802 says Ray's derivation was skipped.
    derived = {"data": config, "cluster": {"ok": True, "errors": [], "warnings": [],
                                           "prepared": config, "schema_errors": []}}
    rllib = about_rllib(data)
    for problem in ([] if facts.get("ray_absent") else cluster_problems(derived, ray_version, rllib)):
        parts = problem.pointer.split("/")
        if len(parts) > 2 and parts[1] == "available_node_types":
            if parts[2] == "headgroup":
                continue
            problem.pointer = pointers.get(parts[2], base)
        else:
            problem.pointer = base
        problem.evidence = {**problem.evidence, "derived_from": "the autoscaling config Ray derives from the CR"}
        out.append(problem)
    for name, pointer, group in groups:
        params = group.get("rayStartParams") or {}
        container = _ray_container(group)
        limits = _limits(container)
        where = f"{pointer}/rayStartParams"
        out += params_problems(where, name, params)
        for param, limit_key, what, harm in (
                ("num-cpus", "cpu", "CPUs", "Ray schedules that many CPUs of env runners and learners into "
                 "a container the kernel throttles to its limit: every step runs slower than planned"),
                ("memory", "memory", "bytes of memory", "Ray's memory monitor counts on more than the "
                 "container has, so Kubernetes OOM-kills the pod before Ray kills a task"),
                ("num-gpus", "nvidia.com/gpu", "GPUs", "Ray places GPU learners on GPUs the container "
                 "cannot see: they fail with CUDA errors")):
            asked = quantity(params.get(param))
            limit = quantity(limits.get(limit_key))
            if asked is None or limit is None or asked <= limit + 1e-9:
                if asked is not None and limit is None and limit_key == "nvidia.com/gpu" and asked > 0:
                    out.append(Problem("warn", f"{where}/{param}",
                                       f"{name}: rayStartParams {param}={params.get(param)!s} but the Ray "
                                       "container requests no nvidia.com/gpu: " + harm,
                                       FIXES["rayStartParams ask for GPUs the Ray container does not request"].format(
                                           count=int(asked), param=param),
                                       "", {"group": name, "param": param, "limit": None}))
                continue
            out.append(Problem("warn", f"{where}/{param}",
                               f"{name}: rayStartParams {param}={params.get(param)!s} is more than the Ray "
                               f"container's limit ({limits.get(limit_key)}): Ray advertises {asked:g} "
                               f"{what} the pod does not have; {harm}",
                               FIXES["rayStartParams ask for more than the Ray container's limit"].format(
                                   param=param, limit=limits.get(limit_key)), "",
                               {"group": name, "param": param, "asked": asked, "limit": limit}))
    head_name, head_pointer, head = groups[0]
    head_params = head.get("rayStartParams") or {}
    head_cpus = quantity(head_params.get("num-cpus"))
    if head_cpus is None:
        head_cpus = quantity(_limits(_ray_container(head)).get("cpu"))
        said = f"no num-cpus in its rayStartParams, so Ray takes the container's CPU limit ({head_cpus:g})" \
            if head_cpus else ""
    else:
        said = f"rayStartParams num-cpus={head_params.get('num-cpus')}"
    if head_cpus and len(groups) > 1 and rllib:  # a head-only cluster has nowhere else to run work
        out.append(Problem("info", f"{head_pointer}/rayStartParams",
                           f"the head offers {head_cpus:g} CPU(s) to trainings ({said}): env runners, "
                           "learners and the RLlib algorithm land on the head beside the GCS and the "
                           "dashboard, which then answer slowly or are OOM-killed with the training "
                           "(RLD104)", FIXES["the KubeRay head offers CPUs to trainings"].format(), "",
                           {"head_cpus": head_cpus}))
    if spec.get("enableInTreeAutoscaling") and "idleTimeoutSeconds" not in (spec.get("autoscalerOptions") or {}):
        out.append(Problem("info", f"{base}/enableInTreeAutoscaling",
                           f"the autoscaler runs without autoscalerOptions.idleTimeoutSeconds: idle "
                           f"worker pods are removed after {KUBERAY_IDLE_DEFAULT_S} s (what Ray derives: "
                           "idle_timeout_minutes 1.0), shorter than many trainings' evaluation or "
                           "checkpoint pauses, so their env runners' pods come and go (RLD109)",
                           FIXES["the KubeRay autoscaler has no idle timeout"].format(), "", {"idle_timeout_s": KUBERAY_IDLE_DEFAULT_S}))
    return out
