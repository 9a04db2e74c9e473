"""RLD803: `_system_config` keys and `RAY_` settings this Ray does not have, with the nearest
real name. A check of the `code` area (rldoctor lint); the names are the installed Ray's own.
"""

from __future__ import annotations

from rldoctor.lint.rules._lint_files import finding, lint_files, sort_key
from rldoctor.registry import check


# The fixes of RLD803's findings, by case (rldoctor.engine.registry): an unknown name's fix is
# one of the first two, then (after "; ") the hint of a name that HINT_CASES names.
FIXES = {
    "a name this Ray does not have, close to one it has": "did you mean `{near}`?",
    "a name this Ray does not have, close to none": "remove it",
    "the name is compress_communication": (
        "Ray has no wire compression switch; RLlib can compress sampled observations itself: "
        "`.env_runners(compress_observations=True)`"),
    "_system_config is given to a ray.init() that joins a cluster": (
        "set it where the head starts: `ray start --head --system-config='{settings_json}'` "
        "(head_start_ray_commands in the cluster YAML), or `{env}` in every node's environment "
        "before `ray start`"),
}
# Settings people copy that Ray never had: the case whose text says what does the job instead.
HINT_CASES = {"compress_communication": "the name is compress_communication"}


class RayNamesUnavailable(Exception):
    """The names the installed Ray knows could not be read; RLD803 reports error."""


def _known(snap) -> dict:
    names = snap["lint"].get("ray")
    if not names:
        raise RayNamesUnavailable("the lint section has no Ray names; the collector did not read them")
    if names.get("error"):
        raise RayNamesUnavailable(names["error"])
    return names


def _unknown_message(kind: str, name: str, near: str | None) -> tuple[str, str]:
    if kind == "system_config":
        message = (f"`{name}` is not a setting of this Ray: with it in _system_config the GCS and "
                   f"raylet abort at start (\"Received unexpected config parameter {name}\")")
    else:
        message = f"`{name}` is not a setting this Ray reads: it is silently ignored"
    fix = (FIXES["a name this Ray does not have, close to one it has"].format(near=near) if near
           else FIXES["a name this Ray does not have, close to none"].format())
    hint = HINT_CASES.get(name.removeprefix("RAY_"))
    if hint:
        fix = f"{fix}; {FIXES[hint].format()}"
    return message, fix


@check("RLD803", "unknown-system-config", area="code", requires=("lint",), fixes=FIXES)
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
        ignored. `_system_config` only applies to a Ray instance the call starts itself. The
        known names are read from the installed Ray's own binaries and sources.
    """
    from rldoctor.lint.rules._system_config import (nearest, python_env_names, python_system_configs,
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
            fix = FIXES["_system_config is given to a ray.init() that joins a cluster"].format(
                settings_json=settings_json, env=env)
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
