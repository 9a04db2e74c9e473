"""What Ray itself says about a cluster launcher YAML, asked offline.

`ray up` loads the file with `yaml.safe_load`, then runs
`ray.autoscaler._private.util.prepare_config` (merges the provider's
defaults; for the local provider this is where `head_node`/`worker_nodes`
abort) and `validate_config` (Ray's JSON schema `ray-schema.json` plus a few
checks) before it contacts any cloud. `ray_verdict(config)` runs exactly those
two functions of the installed Ray, with their console output captured, and
records each error. When an error is one a user fixes by deleting keys (legacy
sections, properties the schema does not allow), it deletes them and asks
again, so one lint run lists every error `ray up` would stop at, in order.
`schema_errors(config)` adds what Ray's schema says about the file as written.

This module imports ray (about half a second): only for YAML that looks like
a cluster config. It never contacts a provider and never starts anything.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import logging
import os
import re

MAX_ROUNDS = 8
_NOT_SUPPORTED = re.compile(r"The field (\w+) is not supported for on-premise clusters")


def looks_like_cluster_config(data: object) -> bool:
    if not isinstance(data, dict) or "apiVersion" in data or "kind" in data:
        return False
    keys = set(data)
    return bool(keys & {"cluster_name", "provider", "available_node_types", "head_node",
                        "worker_nodes", "head_node_type"}) and ("provider" in keys or "cluster_name" in keys)


def _pointer(path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _schema():
    import ray.autoscaler

    with open(os.path.join(os.path.dirname(ray.autoscaler.__file__), "ray-schema.json")) as handle:
        return json.load(handle)


class _Captured(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        if record.levelno >= logging.WARNING:
            self.lines.append(_plain(record.getMessage()))


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", str(text)).strip()


@contextlib.contextmanager
def _quiet():
    """Ray's cli_logger prints and logs; keep it out of rldoctor's output, but keep its words."""
    handler = _Captured()
    loggers = [logging.getLogger(name) for name in ("ray", "ray.autoscaler")]
    saved = [(lg, lg.propagate, list(lg.handlers)) for lg in loggers]
    for lg in loggers:
        lg.handlers = [handler]
        lg.propagate = False
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield handler
    finally:
        for lg, propagate, handlers in saved:
            lg.handlers = handlers
            lg.propagate = propagate
        printed = out.getvalue().splitlines() + err.getvalue().splitlines()
        for line in printed:  # cli_logger's lines: "<time> WARN config.py:98 -- <message>"
            level, _, message = line.partition(" -- ")
            if message and re.search(r"\bWARN(ING)?\b", level):
                handler.lines.append(_plain(message))


def _delete(config: dict, pointer: list, keys: list[str]) -> bool:
    node = config
    for part in pointer:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return False
    removed = False
    if isinstance(node, dict):
        for key in keys:
            if key in node:
                del node[key]
                removed = True
    return removed


def _attempt(config: dict) -> tuple[dict | None, dict | None, list[str]]:
    """(prepared config, error, captured warnings) of one prepare_config + validate_config."""
    import jsonschema
    from ray.autoscaler._private.util import prepare_config, validate_config

    stage, prepared, error = "prepare", None, None
    with _quiet() as captured:
        try:
            prepared = prepare_config(copy.deepcopy(config))
            stage = "validate"
            validate_config(prepared)
        except jsonschema.ValidationError as exc:
            error = {"stage": stage, "pointer": _pointer(exc.absolute_path), "path": list(exc.absolute_path),
                     "message": _plain(exc.message), "validator": exc.validator}
            if exc.validator == "additionalProperties" and isinstance(exc.schema, dict):
                error["allowed"] = sorted(exc.schema.get("properties") or {})
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # ClickException from cli_logger.abort, ValueError, SystemExit
            message = _plain(getattr(exc, "message", None) or exc) or type(exc).__name__
            error = {"stage": stage, "pointer": "", "message": message, "exception": type(exc).__name__}
    return prepared, error, captured.lines


def ray_verdict(config: dict) -> dict:
    """Errors (in the order `ray up` meets them) and warnings of Ray's own preparation."""
    from ray.autoscaler._private.providers import _NODE_PROVIDERS

    current = copy.deepcopy(config)
    errors: list[dict] = []
    warnings: list[str] = []
    provider = current.get("provider")
    provider_type = provider.get("type") if isinstance(provider, dict) else None
    if provider_type is not None and provider_type not in _NODE_PROVIDERS:
        known = ", ".join(sorted(k for k, v in _NODE_PROVIDERS.items() if v is not None))
        errors.append({"stage": "provider", "pointer": "/provider/type",
                       "message": f"Unknown provider type {provider_type}; available providers are: {known}"})
        return {"errors": errors, "warnings": warnings, "prepared": None, "ok": False}
    prepared = None
    for _ in range(MAX_ROUNDS):
        prepared, error, lines = _attempt(current)
        warnings.extend(lines)
        if error is None:
            break
        errors.append(error)
        path = error.pop("path", [])
        if error.get("validator") == "additionalProperties":
            unexpected = re.findall(r"'([^']+)'", error["message"].split("(")[-1])
            error["unexpected"] = unexpected
            if _delete(current, path, unexpected):
                continue
        field = _NOT_SUPPORTED.search(error["message"])
        if field and field.group(1) in current:
            error["pointer"] = "/" + field.group(1)
            del current[field.group(1)]
            continue
        prepared = None
        break
    return {"errors": errors, "warnings": _unique(warnings), "prepared": prepared, "ok": not errors}


def _unique(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if line and line not in out:
            out.append(line)
    return out


def schema_errors(config: dict) -> list[dict]:
    """What Ray's `ray-schema.json` says of the file exactly as written."""
    import jsonschema

    validator = jsonschema.Draft7Validator(_schema())
    out = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        out.append({"pointer": _pointer(error.absolute_path), "message": _plain(error.message),
                    "validator": error.validator})
        if len(out) >= 50:
            break
    return out


def ray_version() -> str:
    import ray

    return ray.__version__
