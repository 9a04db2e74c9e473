"""RLD802: cluster launcher YAML that Ray's own schema and validator reject, or that cannot work
as written. A check of the `code` area (rldoctor lint), reading the `yaml` records of the
`lint` section.
"""

from __future__ import annotations

from rldoctor.lint.rules._cluster_fixes import FIXES
from rldoctor.lint.rules._lint_files import finding, lint_files, ray_version, sort_key
from rldoctor.registry import check


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
