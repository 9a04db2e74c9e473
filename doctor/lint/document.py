"""The lint reader: source files in, the `lint` section of a snapshot-like document out.

    {"schema": "rldoctor.snapshot/v1", "source": {"kind": "lint", ...},
     "lint": {"files": [{"path", "kind", "status", "message", "line", "column",
                         "python": {...facts...}, "cells": [...],          # .py, .ipynb
                         "yaml": [{"data", "locations", "duplicates",      # .yaml, .yml
                                   "role": "cluster" | "experiments" | "other",
                                   "cluster": {"errors", "warnings", "prepared",
                                               "schema_errors", "ray_version"}     # or "ray_absent"
                                   }]}],
              "ray_build": {"version", "commit"},           # read from ray/_version.py, or
                                                            # "table": true, the shipped one
              "ray": {"system_config_keys", "env_names"},   # only when a file needs them
              "ray_modules": {module: {"exists", "names", "deprecated"}}}}  # ray modules imported

A file's `status` is `ok`, or why it was not linted (`unreadable`, `too-large`,
`binary`, `unsupported`, `syntax-error`, `yaml-error`, `yaml-bomb`).
"""

from __future__ import annotations

import time
from typing import Any

from rldoctor.lint import inputs
from rldoctor.lint.notebook import NotebookError, read_notebook
from rldoctor.lint.python_facts import PythonSyntaxError, python_facts
from rldoctor.lint.yaml_source import YamlProblem, load_yaml

LINT_SECTION = "lint"


def _python_file(source: inputs.Source) -> dict:
    record: dict[str, Any] = {"path": source.path, "kind": source.kind, "status": "ok"}
    text = source.text
    if source.kind == "notebook":
        try:
            notebook = read_notebook(text)
        except NotebookError as exc:
            return {**record, "status": "syntax-error", "message": str(exc)}
        record["cells"] = notebook.cells
        text = notebook.source
    try:
        record["python"] = python_facts(text, source.path)
    except PythonSyntaxError as exc:
        record.update(status="syntax-error", message=f"{exc}; not linted", line=exc.line,
                      column=exc.column + 1 if exc.line else 0)
        if source.kind == "notebook" and exc.line:
            cell, line = notebook.where(exc.line)
            record.update(cell=cell, line=line)
    return record


def _experiments(data: dict, locations: dict) -> list[dict]:
    """RLlib experiment YAML (`name: {run: PPO, config: {...}, stop: {...}}`)."""
    found = []
    candidates = {"": data} if "run" in data else {k: v for k, v in data.items() if isinstance(v, dict)}
    for name, spec in candidates.items():
        if not isinstance(spec, dict) or "run" not in spec:
            continue
        base = f"/{name}" if name else ""
        entry = {"name": name, "run": spec.get("run"), "config_keys": [], "stop_keys": []}
        for section, out in (("config", "config_keys"), ("stop", "stop_keys")):
            values = spec.get(section)
            if isinstance(values, dict):
                for key, value in values.items():
                    where = locations.get(f"{base}/{section}/{key}", [0, 0])
                    entry[out].append({"key": str(key), "line": where[0], "column": where[1],
                                       "value": value if isinstance(value, (int, float, str, bool)) else None})
        found.append(entry)
    return found


def _cluster(data: dict) -> dict:
    from rldoctor.install import ray_version
    from rldoctor.lint import cluster_yaml

    if ray_version() is None:  # the client-only install: rldoctor's own rules still run (RLD802)
        return {"ray_absent": "Ray is not installed here (the client-only rldoctor)"}
    try:
        verdict = cluster_yaml.ray_verdict(data)
        verdict["schema_errors"] = cluster_yaml.schema_errors(data)
        verdict["ray_version"] = cluster_yaml.ray_version()
    except ImportError as exc:
        return {"ray_error": f"cannot load Ray's cluster launcher: {exc}"}
    return verdict


def _yaml_file(source: inputs.Source) -> dict:
    from rldoctor.lint import kuberay
    from rldoctor.lint.cluster_yaml import looks_like_cluster_config

    record: dict[str, Any] = {"path": source.path, "kind": "yaml", "status": "ok", "yaml": []}
    try:
        documents = load_yaml(source.text)
    except YamlProblem as exc:
        return {**record, "status": exc.status, "message": str(exc), "line": exc.line,
                "column": exc.column}
    for doc in documents:
        entry: dict[str, Any] = {"line": doc.line, "data": doc.data, "locations": doc.locations,
                                 "duplicates": doc.duplicates, "role": "other"}
        if looks_like_cluster_config(doc.data):
            entry["role"] = "cluster"
            entry["cluster"] = _cluster(doc.data)
        elif kuberay.looks_like_kuberay(doc.data):  # a RayCluster / RayJob manifest
            entry["role"] = "kuberay"
            entry["kuberay"] = kuberay.derive(doc.data)
        elif isinstance(doc.data, dict):
            experiments = _experiments(doc.data, doc.locations)
            if experiments:
                entry.update(role="experiments", experiments=experiments)
        record["yaml"].append(entry)
    return record


def _needs_ray_names(record: dict, text: str) -> bool:
    facts = record.get("python")
    if facts is not None:
        return bool(facts["env_strings"]) or any(
            kw["name"] == "_system_config" for call in facts["calls"] for kw in call["kwargs"])
    return record.get("kind") == "yaml" and ("RAY_" in text or "system-config" in text
                                             or "system_config" in text)


def _ray_names() -> dict:
    from rldoctor.lint.ray_names import RayNotInstalled, known_names

    try:
        return known_names()
    except RayNotInstalled:  # the client-only install: the table of the pinned Ray
        from rldoctor.lint import ray_table

        try:
            return ray_table.known_names()
        except ray_table.NoTable as exc:
            return {"error": f"cannot read the settings this Ray knows: {exc}"}
    except OSError as exc:
        return {"error": f"cannot read the settings this Ray knows: {exc}"}


def _ray_build() -> dict:
    from rldoctor.lint.ray_names import RayNotInstalled, ray_build, ray_root

    try:
        return ray_build(ray_root())
    except RayNotInstalled as exc:
        from rldoctor.lint import ray_table

        try:
            return ray_table.build_info()
        except ray_table.NoTable:
            return {"version": "unknown", "commit": "unknown", "error": str(exc)}
    except OSError as exc:
        return {"version": "unknown", "commit": "unknown", "error": str(exc)}


def _ray_modules(records: list[dict]) -> dict:
    from rldoctor.lint.ray_modules import module_index, wanted_modules

    wanted = wanted_modules(records)
    return module_index(wanted) if wanted else {}


def lint_document(paths: list[str]) -> dict:
    """Read every path and return the snapshot-like document the `code` checks read."""
    from rldoctor.snapshot import new_document

    started = time.perf_counter()
    skipped: list[str] = []  # files of a walked folder that are not regular (a FIFO)
    files, missing = inputs.expand(list(paths), skipped)
    records = [{"path": p.path, "kind": "", **p.to_json()} for p in missing]
    needs_names = False
    for path, kind in files:
        source = inputs.read(path, kind)
        if isinstance(source, inputs.Problem):
            records.append({"kind": kind, **source.to_json()})
            continue
        record = _yaml_file(source) if kind == "yaml" else _python_file(source)
        needs_names = needs_names or (record["status"] == "ok" and _needs_ray_names(record, source.text))
        records.append(record)
    doc = new_document({"kind": "lint", "file": ", ".join(paths), "paths": list(paths),
                        "files": len(records)})
    doc[LINT_SECTION] = {"files": records, "ray_build": _ray_build(),
                         "ray": _ray_names() if needs_names else None,
                         "ray_modules": _ray_modules(records)}
    if skipped:
        doc["notes"] = skipped
    doc["collectors"][LINT_SECTION] = {"status": "ok",
                                       "duration_s": round(time.perf_counter() - started, 4)}
    return doc
