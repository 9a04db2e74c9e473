"""RLD802: cluster launcher YAML that Ray's own schema and validator reject, or that cannot work
as written. A check of the `code` area (rldoctor lint), reading the `yaml` records of the
`lint` section.
"""

from __future__ import annotations

from rldoctor.lint.rules._lint_files import finding, lint_files, ray_version, sort_key
from rldoctor.registry import check

# The fixes of RLD802's findings, by case (rldoctor.engine.registry); the rules that find
# them (rldoctor.lint.rules._cluster_config, _kuberay) fill them in.
FIXES = {
    "setup_commands pin another Ray than the client's": (
        "pin the Ray the client runs: `{fixed}` (quote the requirement: shells such as zsh "
        "expand the brackets)"),
    "setup_commands install another Ray's wheel": "install Ray {ray_version} on the nodes",
    "the image's tag floats": "pin the image: `rayproject/ray:{ray_version}`",
    "the image runs another Ray than the client's": "use `rayproject/ray:{ray_version}`",
    "`pip install` names no Ray version": "pin the Ray the client runs: `{fixed}`",
    "max_workers is above the machines listed on premise": (
        "`max_workers: {n}`, or list {more} more machine(s) in provider.worker_ips"),
    "max_workers is below the machines listed on premise": (
        "`max_workers: {n}`, or remove the machines you do not want"),
    "min_workers is above the machines listed on premise": "`min_workers: {n}`",
    "the head is listed in worker_ips": "remove the head's address from worker_ips",
    "a machine is listed twice": "list each machine once",
    "a node type's min_workers is above its max_workers": "`min_workers: {high}` (or raise max_workers)",
    "the node types' min_workers add up to more than max_workers": (
        "`max_workers: {total_min}` or lower the min_workers"),
    "Ray refuses max_workers under the min_workers, on premise with no min_workers": (
        "on premise, min_workers defaults to the number of worker_ips ({ips}): set "
        "`min_workers: {low}` as well, or `max_workers: {ips}`"),
    "Ray refuses max_workers under the min_workers": (
        "raise max_workers to at least the sum of the node types' min_workers"),
    "no PPO actor fits on a node type": "give it at least 1 CPU, or drop the node type",
    "a key is not in Ray's schema but close to one that is": "did you mean `{near}`?",
    "a key is not in Ray's schema": "delete it: Ray's schema has no such key here",
    "a legacy section is empty": "delete the `{key}:` line",
    "the file has legacy (Ray 1.x) sections": "write it the Ray 2.x way:\n{replacement}",
    "a second legacy section is there": "replace it together with `{first}` (see the finding there)",
    "Ray's validator rejects a value": "fix the value Ray names; `ray up --no-config-cache` re-checks it",
    "a key is written twice in one mapping": "keep one of them",
    "a `ray start` option does not exist but is close to one that does": "did you mean `{near}`?",
    "a `ray start` option is a Redis one (gone in Ray 2.x)": (
        "drop it: Ray 2.x has no Redis of its own; the head's GCS port is `{dashes}port` "
        "(default 6379)"),
    "a `ray start` option does not exist": "drop it: `ray start --help` lists the options",
    "a whole-number `ray start` option is given another value": "`{flag}={value}`",
    "a whole-number rayStartParam is given another value": "{key}: \"{value}\"",
    "a `ray start` option is given a value it does not take": "a value `{flag}` takes",
    "a KubeRay field is of the wrong kind": "write {name} as {kind} (see KubeRay's RayCluster reference)",
    "Ray cannot derive the autoscaling config from a KubeRay manifest": (
        "fix the cluster spec so the autoscaler sidecar can start"),
    "rayStartParams ask for GPUs the Ray container does not request": (
        "add `nvidia.com/gpu: {count}` to the container's limits, or drop {param}"),
    "rayStartParams ask for more than the Ray container's limit": (
        "make them agree: {param}: \"{limit}\" (or drop {param}: KubeRay then takes the "
        "container's limit)"),
    "the KubeRay head offers CPUs to trainings": (
        "rayStartParams: {{num-cpus: \"0\"}} on the head group, and worker groups for the "
        "training"),
    "the KubeRay autoscaler has no idle timeout": (
        "autoscalerOptions: {{idleTimeoutSeconds: 600}} (longer than the training's longest "
        "pause)"),
}


@check("RLD802", "invalid-cluster-config", area="code", requires=("lint",), fixes=FIXES)
def invalid_cluster_config(snap, params):
    """Cluster launcher YAML that Ray's own schema and validator reject, or that cannot work as written.

    Symptom:
        `ray up cluster.yaml` stops with a schema error that does not say what to write
        instead ("Additional properties are not allowed ('head_node', 'worker_nodes' were
        unexpected)", "The field head_node is not supported for on-premise clusters."), or
        the cluster comes up and the driver cannot connect ("Version mismatch: The cluster
        was started with: Ray: 2.5.1"), or fewer workers join than the file says.

    Cause:
        Ray 2.x replaced the `head_node`/`worker_nodes` sections with `available_node_types`
        (and, for on-premise clusters, takes the nodes from `provider.head_ip` and
        `worker_ips`). `setup_commands` run on every node, head included, so a Ray pinned
        there is the Ray the whole cluster runs, whatever the client has. On-premise clusters
        can only use the machines listed, whatever `max_workers` says.

        This check validates with the installed Ray before `ray up`: it runs Ray's own
        `prepare_config` and `validate_config` on the file, offline, and writes out the 2.x
        form of legacy sections for this file.
    """
    from rldoctor.lint.rules._cluster_config import cluster_problems, where
    from rldoctor.lint.rules._kuberay import kuberay_problems

    from rldoctor.model import Note

    version = ray_version(snap)
    found, absent = [], []
    for record in lint_files(snap, ("yaml",)):
        for doc in record.get("yaml") or []:
            if doc.get("role") not in ("cluster", "kuberay"):
                continue
            cluster = doc.get("cluster") or {}
            if cluster.get("ray_error"):
                raise RuntimeError(f"{record['path']}: {cluster['ray_error']}")
            if cluster.get("ray_absent") or (doc.get("kuberay") or {}).get("ray_absent"):
                absent.append(record["path"])
            client = cluster.get("ray_version") or version
            problems = kuberay_problems(doc, client) if doc["role"] == "kuberay" else \
                cluster_problems(doc, client)
            for problem in problems:
                line, column = where(doc, problem.pointer)
                if "line" in problem.evidence and "column" in problem.evidence:
                    line, column = problem.evidence["line"], problem.evidence["column"]
                evidence = {**problem.evidence, "pointer": problem.pointer,
                            "replacement": problem.replacement or problem.fix, "ray_version": client}
                found.append(finding(record, problem.severity, line, max(column - 1, 0),
                                     problem.message, problem.fix, evidence))
    if absent:  # the client-only install: what Ray itself says is not known here, and said so
        paths = list(dict.fromkeys(absent))
        found.append(Note(f"file:{paths[0]}", f"Ray's own cluster YAML validator (prepare_config, "
                          f"validate_config, ray-schema.json) skipped for {len(paths)} file(s): Ray "
                          "is not installed here (the client-only rldoctor; pip install "
                          "'rldoctor-ray[cluster]' adds it); rldoctor's own rules ran",
                          {"files": paths}))
    return sorted((f for f in found if not isinstance(f, Note)), key=sort_key) + \
        [f for f in found if isinstance(f, Note)]
