"""Lint rules: training scripts, notebooks and cluster YAML, read without running them.

These checks read the `lint` section that `rldoctor lint PATH ...` collects
(rldoctor.lint.document): per file, the calls, keyword arguments, dict configs,
imports and YAML data, with their locations. They belong to the `code` area,
which `rldoctor check` leaves to `rldoctor lint`. Every finding carries a
`location` ({path, line, column}); the replacement written out for the call at
hand is in `evidence["replacement"]`, and mechanical renames carry
`evidence["edits"]` for `--diff` and `--fix`.
"""

from __future__ import annotations

from rldoctor.checks._lint_files import finding, lint_files, sort_key
from rldoctor.registry import check

# The rules' helpers (the table of names, the matchers) are imported when a rule runs, so
# that `rldoctor check`, `list` and `explain`, which load every check, pay nothing for them.


class RayNamesUnavailable(Exception):
    """The names the installed Ray knows could not be read; RLD803 reports error."""


def _ray_version(snap) -> str:
    return (snap["lint"].get("ray_build") or {}).get("version", "unknown")


@check("RLD801", "deprecated-rllib-api", area="code", requires=("lint",))
def deprecated_rllib_api(snap, params):
    """Training code that uses RLlib or Tune names the pinned Ray removed, renamed or ignores.

    Symptom:
        Code copied from older tutorials fails at once, or runs and silently does something
        else than written. Failing at once: `ValueError: rollouts has been deprecated`,
        `TypeError: AlgorithmConfig.training() got an unexpected keyword argument
        'sgd_minibatch_size'`, `ModuleNotFoundError: No module named 'ray.rllib.agents'`.
        Silently different: `.resources(num_gpus=1)` trains on CPU, `{"sgd_minibatch_size":
        64}` in a dict config keeps the default minibatch size, `stop={"episode_reward_mean":
        195}` never stops, `algo.workers` is a bound method, `compute_single_action` fails
        inside the env runner.

    Cause:
        RLlib's new API stack (the default on Ray 2.60) renamed rollout workers to env
        runners, moved models to RLModules (`rl_module(model_config=...)`), learners to
        `learners(...)`, results to `env_runners/...` keys, and dropped the `Trainer`
        classes. Many old names still parse: keyword arguments kept for deprecation warn or
        raise, but dict configs and attributes accept any key and silently ignore it.

    Fix:
        Use the replacement each finding writes out for that very line (shown in brackets
        after the message). Renames that keep their meaning are applied by `rldoctor lint
        --fix` (`--diff` shows them first); anything that needs judgement is reported,
        never rewritten. Severity follows harm: silently ignored or never-firing is `fail`,
        raises is `fail`, still works but deprecated is `warn`. A dict config is reported
        key by key where each key is written, also when it reaches RLlib through
        variables, copies and helper functions; a setting whose value the file does not
        fix (`local_mode=args.local_mode`) is an `info` note saying what each value does.
        Imports the installed Ray no longer has are read from Ray's own files.
    """
    from rldoctor.checks._rllib_api_usage import FileUsages, experiment_usages

    version = _ray_version(snap)
    found = []
    for record in lint_files(snap, ("python", "notebook")):
        for usage in FileUsages(record, snap["lint"].get("ray_modules")).run():
            line, col = usage.span[0], usage.span[1]
            evidence = {**usage.evidence, "replacement": usage.replacement, "edits": usage.edits,
                        "ray_version": version}
            fix = evidence.pop("fix")
            found.append(finding(record, usage.severity, line, col, usage.message, fix, evidence))
    for record in lint_files(snap, ("yaml",)):
        for doc, row, key in experiment_usages(record):
            if row.shape == "result_key":
                message = (f'stop condition `{row.old}` never fires: new-stack results have no such key')
                replacement = row.new
            else:
                message = f"`{row.old}` in an experiment's config {row.says or row.behaviour}"
                replacement = f"{row.new}: ..." if row.new else row.fix
            severity = "warn" if row.inert and key.get("value") in row.inert else row.severity
            found.append(finding(record, severity, key["line"], max(key["column"] - 1, 0), message,
                                 replacement + (f"; {row.fix}" if row.fix and row.fix != replacement else ""),
                                 {"row": row.id, "behaviour": row.behaviour, "old": row.old,
                                  "new": row.new, "replacement": replacement, "edits": [],
                                  "ray_version": version}))
    return sorted(found, key=sort_key)


@check("RLD802", "invalid-cluster-config", area="code", requires=("lint",))
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

    Fix:
        Validate with the installed Ray before `ray up`: this check runs Ray's own
        `prepare_config` and `validate_config` on the file, offline, and writes out the 2.x
        form of legacy sections for this file. Pin the Ray the client runs in
        `setup_commands` (quoted: `pip install -U "ray[rllib]==2.60.0"`), and keep
        `max_workers` equal to the number of `worker_ips` on premise.
    """
    from rldoctor.checks._cluster_config import cluster_problems, where

    from rldoctor.model import Note

    version = _ray_version(snap)
    found, absent = [], []
    for record in lint_files(snap, ("yaml",)):
        for doc in record.get("yaml") or []:
            if doc.get("role") != "cluster":
                continue
            cluster = doc.get("cluster") or {}
            if cluster.get("ray_error"):
                raise RuntimeError(f"{record['path']}: {cluster['ray_error']}")
            if cluster.get("ray_absent"):
                absent.append(record["path"])
            client = cluster.get("ray_version") or version
            for problem in cluster_problems(doc, client):
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
                          "'rldoctor[cluster]' adds it); rldoctor's own rules ran",
                          {"files": paths}))
    return sorted((f for f in found if not isinstance(f, Note)), key=sort_key) + \
        [f for f in found if isinstance(f, Note)]


def _known(snap) -> dict:
    names = snap["lint"].get("ray")
    if not names:
        raise RayNamesUnavailable("the lint section has no Ray names; the collector did not read them")
    if names.get("error"):
        raise RayNamesUnavailable(names["error"])
    return names


def _unknown_message(kind: str, name: str, near: str | None) -> tuple[str, str]:
    from rldoctor.checks._system_config import HINTS

    if kind == "system_config":
        message = (f"`{name}` is not a setting of this Ray: with it in _system_config the GCS and "
                   f"raylet abort at start (\"Received unexpected config parameter {name}\")")
    else:
        message = f"`{name}` is not a setting this Ray reads: it is silently ignored"
    if near:
        fix = f"did you mean `{near}`?"
    else:
        fix = "remove it"
    hint = HINTS.get(name.removeprefix("RAY_"))
    if hint:
        fix = f"{fix}; {hint}"
    return message, fix


@check("RLD803", "unknown-system-config", area="code", requires=("lint",))
def unknown_system_config(snap, params):
    """`_system_config` keys or `RAY_` settings this Ray does not have, with the nearest real name.

    Symptom:
        The head or `ray.init()` dies at start with one line in `gcs_server.out` or
        `raylet.out`: "Received unexpected config parameter compress_communication" (the
        driver just sees that the GCS never came up). A `RAY_...` environment variable with a
        typo does nothing at all. `ray.init(_system_config=...)` in a script run on a cluster
        raises "When connecting to an existing cluster, _system_config must not be provided."

    Cause:
        `_system_config` keys are the C++ RayConfig entries compiled into this Ray; any other
        key is fatal, and they change between releases. `RAY_` variables nobody reads are
        ignored. `_system_config` only applies to a Ray instance the call starts itself.

    Fix:
        Use a name this Ray has (the finding gives the nearest one), or remove it. Set system
        config where the cluster starts: `ray start --head --system-config='{"key": value}'`
        in `head_start_ray_commands`, or `RAY_<key>=value` in every node's environment. The
        known names are read from the installed Ray's own binaries and sources.
    """
    from rldoctor.checks._system_config import (nearest, python_env_names, python_system_configs,
                                                yaml_settings)

    found = []
    names = None
    for record in lint_files(snap, ("python", "notebook")):
        facts = record["python"]
        settings = python_system_configs(facts)
        env_names = python_env_names(facts)
        if not settings and not env_names:
            continue
        names = names or _known(snap)
        keys, env_known = names["system_config_keys"], set(names["env_names"])
        for entry in settings:
            kw, d = entry["kw"], entry["dict"]
            unknown = []
            for key in (d or {}).get("keys") or []:
                if key["key"] in keys:
                    continue
                unknown.append(key["key"])
                near = nearest(key["key"], keys)
                message, fix = _unknown_message("system_config", key["key"], near)
                found.append(finding(record, "fail", key["span"][0], key["span"][1], message, fix,
                                     {"key": key["key"], "nearest": near, "replacement": near or "",
                                      "ray_version": names.get("version")}))
            if unknown or d is None:
                continue
            address = entry["address"]
            literal = address["value"] if address and address.get("literal") else None
            if literal == "local":
                continue
            settings_json = "{" + ", ".join(f'"{k["key"]}": {k.get("source") or "..."}'
                                            for k in d["keys"]) + "}"
            env = " ".join(f"RAY_{k['key']}={k.get('source') or '...'}" for k in d["keys"])
            severity = "fail" if address is not None else "warn"
            when = ("this call connects to a running cluster" if address is not None else
                    "the script runs on a cluster (ray submit, ray job submit, RAY_ADDRESS set)")
            message = (f"`_system_config` is only applied when ray.init() starts a new local Ray; when "
                       f"{when}, it raises ValueError: \"When connecting to an existing cluster, "
                       "_system_config must not be provided.\"")
            fix = (f"set it where the head starts: `ray start --head --system-config='{settings_json}'` "
                   f"(head_start_ray_commands in the cluster YAML), or `{env}` in every node's "
                   "environment before `ray start`")
            found.append(finding(record, severity, kw["span"][0], kw["span"][1], message, fix,
                                 {"replacement": f"--system-config='{settings_json}'",
                                  "keys": [k["key"] for k in d["keys"]]}))
        for setting in env_names:
            if setting.name in env_known:
                continue
            near = nearest(setting.name, sorted(env_known))
            message, fix = _unknown_message("env", setting.name, near)
            found.append(finding(record, "warn", setting.line, setting.column0, message, fix,
                                 {"name": setting.name, "nearest": near, "replacement": near or ""}))
    for record in lint_files(snap, ("yaml",)):
        for doc in record.get("yaml") or []:
            settings = yaml_settings(doc)
            if not settings:
                continue
            names = names or _known(snap)
            keys, env_known = names["system_config_keys"], set(names["env_names"])
            for setting in settings:
                if setting.kind == "system_config" and setting.name not in keys:
                    near = nearest(setting.name, keys)
                    message, fix = _unknown_message("system_config", setting.name, near)
                    found.append(finding(record, "fail", setting.line, setting.column0, message, fix,
                                         {**setting.evidence, "key": setting.name, "nearest": near,
                                          "replacement": near or ""}))
                elif setting.kind == "env" and setting.name not in env_known:
                    near = nearest(setting.name, sorted(env_known))
                    message, fix = _unknown_message("env", setting.name, near)
                    found.append(finding(record, "warn", setting.line, setting.column0, message, fix,
                                         {**setting.evidence, "name": setting.name, "nearest": near,
                                          "replacement": near or ""}))
    return sorted(found, key=sort_key)
