"""User targets: what RLlib would ship to every env runner, serialized the way Ray does it.

`rldoctor check --target MODULE:ATTR` (or `path/to/file.py:ATTR`) imports the
user's module, resolves ATTR (an env class, an env creator, a callbacks class,
an `AlgorithmConfig`, or an env name the module registers with
`ray.tune.registry.register_env`), and pickles it with `ray.cloudpickle`, the
serializer Ray uses for task and actor arguments and for the env registry. No
cluster is contacted.

The result is the snapshot section `targets`, a list with one entry per target:

    {"target": "pkg.mod:config", "module": "pkg.mod", "file": null, "attr": "config",
     "status": "ok" | "error",
     "stage": "import" | "resolve" | "inspect",      # where it failed, when status is error
     "error": "ModuleNotFoundError: No module named 'pkg'",   # the exception's last line
     "location": "/path/pkg/mod.py:12",              # the user's line that raised, if known
     "kind": "algorithm_config" | "env_class" | "env_creator" | "callbacks_class"
             | "registered_env" | "class" | "object",
     "type": "ray.rllib.algorithms.ppo.ppo.PPOConfig",
     "registered_as": null | "<env name>",
     "objects": [                                    # what travels: one or more objects
        {"name": "config", "role": "config", "type": "...", "travels_by": "value" | "reference" | null,
         "serializable": true, "size_bytes": 12583000,
         "largest_members": [{"path": "config -> env_config", "type": "dict", "size_bytes": ...}, ...],
         "dominant_member": {"path": "config -> env_config['lookup_table']", ...} | null},
        {"name": "env_creator", "role": "env creator", "registered_as": "my-env", ...,
         "serializable": false, "error": "TypeError: cannot pickle '_thread.lock' object",
         "culprits": [{"path": "env_creator -> closure 'lock'", "labels": [...],
                       "type": "_thread.lock", "error": "...", "repr": "..."}],
         "ray_inspect": {"serializable": false, "failures": [{"path": "env_creator -> lock", "type": ...}],
                         "report": "<inspect_serializability's output, colour codes stripped>"},
         "register_env_error": "TypeError: ..." | null}
     ]}

How a target is imported decides what travels by value, exactly as for a real run:

- `MODULE:ATTR` imports MODULE (the current directory is on the path, as for
  `python -m`). Its top-level classes and functions are importable, so cloudpickle
  ships them by reference; closures, lambdas and classes made inside functions
  travel by value with everything they capture.
- `path/to/file.py:ATTR` is the user's training script. Run as `python file.py`
  it is `__main__`, whose classes and functions Ray ships by value together with
  the module-level objects they use. rldoctor loads the file under a private
  name (its `if __name__ == "__main__":` block does not run) and registers it
  with `ray.cloudpickle.register_pickle_by_value` to get the same behaviour.

While the module imports, `register_env(name, creator)` calls are recorded
instead of performed (nothing is written to any cluster), so an env name is a
valid ATTR even when registering it would raise, which is what happens to an
unpicklable creator: `register_env` pickles it at once.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import os
import re
import sys
import threading
import time
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rldoctor.errors import UsageError, first_line, last_line

SECTION = "targets"
MAX_DEPTH = 8  # how deep the search for the unpicklable member goes
MAX_CULPRITS = 5
MAX_MEMBERS = 400  # members examined per object
MEMBER_SIZE_FLOOR = 64 * 2**10  # smaller objects are not broken down by size
LARGEST_KEPT = 6
RAY_REPORT_CHARS = 3000
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MISSING = object()
_ATOMIC = (str, bytes, bytearray, int, float, complex, bool, type(None))
_RLLIB_CONFIG = "ray.rllib.algorithms.algorithm_config.AlgorithmConfig"
_ENV_BASES = {"gymnasium.core.Env", "ray.rllib.env.multi_agent_env.MultiAgentEnv"}
_CALLBACK_BASES = {"ray.rllib.callbacks.callbacks.RLlibCallback"}


# --------------------------------------------------------------------------- parsing
@dataclass(frozen=True)
class TargetSpec:
    text: str
    attr: str
    module: str | None = None  # dotted module name, for MODULE:ATTR
    path: str | None = None  # absolute file path, for path/to/file.py:ATTR


def parse_target(text: str) -> TargetSpec:
    """MODULE:ATTR or path/to/file.py:ATTR; anything else is a usage error (one line, exit 2)."""
    raw = (text or "").strip()
    usage = "expected MODULE:ATTR or path/to/file.py:ATTR"
    if ":" not in raw:
        raise UsageError(f"--target {text!r}: {usage}")
    at = raw.find(".py:")
    if at >= 0:
        where, attr = raw[:at + 3], raw[at + 4:].strip()
        if not attr:
            raise UsageError(f"--target {text!r}: no ATTR after the file name; {usage}")
        path = Path(where).expanduser()
        if not path.exists():
            raise UsageError(f"--target {text!r}: no such file: {where}")
        if not path.is_file():
            raise UsageError(f"--target {text!r}: not a file: {where}")
        return TargetSpec(raw, attr, path=str(path.resolve()))
    module, attr = raw.split(":", 1)
    module, attr = module.strip(), attr.strip()
    if "/" in module or os.sep in module:
        raise UsageError(f"--target {text!r}: a file must end in .py; {usage}")
    if not module or not all(part.isidentifier() for part in module.split(".")):
        raise UsageError(f"--target {text!r}: {module!r} is not a module name; {usage}")
    if not attr:
        raise UsageError(f"--target {text!r}: no ATTR after the module name; {usage}")
    return TargetSpec(raw, attr, module=module)


# --------------------------------------------------------------------------- helpers
def type_name(obj: Any) -> str:
    if isinstance(obj, type):
        return f"class {_qualified(obj)}"
    cls = type(obj)
    module = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module == "builtins" else f"{module}.{name}"


def _qualified(cls: type) -> str:
    return f"{getattr(cls, '__module__', '')}.{getattr(cls, '__qualname__', cls.__name__)}"


def _user_location(exc: BaseException) -> str | None:
    """file:line of the deepest frame outside Python's and Ray's own code."""
    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    for frame in reversed(frames):
        name = frame.filename
        if "site-packages" in name or name.startswith("<") or "/importlib/" in name \
                or name == __file__:
            continue
        return f"{name}:{frame.lineno}"
    return None


def _dumps(obj: Any) -> tuple[bytes | None, str | None]:
    import ray.cloudpickle as cloudpickle

    try:
        return cloudpickle.dumps(obj, protocol=5), None
    except RecursionError:
        return None, "RecursionError: maximum recursion depth exceeded while pickling"
    except Exception as exc:
        return None, first_line(exc, 1000)


def _short_repr(obj: Any, limit: int = 120) -> str:
    try:
        text = repr(obj)
    except Exception:
        text = f"<{type_name(obj)}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def render_path(labels: list[str]) -> str:
    """['config', 'env_config', "['table']"] -> "config -> env_config['table']"."""
    out = ""
    for label in labels:
        out += label if (label.startswith("[") and out) else (f" -> {label}" if out else label)
    return out


def travels_by(obj: Any) -> str | None:
    """'reference' or 'value' for a function or class, the way cloudpickle decides; None otherwise."""
    if not isinstance(obj, (types.FunctionType, type)):
        return None
    from ray.cloudpickle import list_registry_pickle_by_value

    module_name = getattr(obj, "__module__", None)
    module = sys.modules.get(module_name) if module_name else None
    if module is None or module_name in ("__main__", "__mp_main__"):
        return "value"
    by_value = set(list_registry_pickle_by_value())
    parts = module_name.split(".")
    if any(".".join(parts[:i]) in by_value for i in range(1, len(parts) + 1)):
        return "value"
    qualname = getattr(obj, "__qualname__", "")
    if "<locals>" in qualname or "<lambda>" in qualname:
        return "value"
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return "reference" if found is obj else "value"


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def members(obj: Any) -> list[tuple[str, Any]]:
    """(label, value) for what pickling `obj` carries along, labelled for a member path."""
    if isinstance(obj, _ATOMIC) or isinstance(obj, types.ModuleType):
        return []
    if isinstance(obj, dict):
        return [(f"[{k!r}]", v) for k, v in list(obj.items())[:MAX_MEMBERS]]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [(f"[{i}]", v) for i, v in enumerate(list(obj)[:MAX_MEMBERS])]
    if isinstance(obj, functools.partial):
        return ([("func", obj.func)] + [(f"args[{i}]", v) for i, v in enumerate(obj.args)]
                + [(f"keyword '{k}'", v) for k, v in obj.keywords.items()])
    if isinstance(obj, types.MethodType):
        return [("__self__", obj.__self__), ("__func__", obj.__func__)]
    if isinstance(obj, types.FunctionType):
        return _function_members(obj)
    if isinstance(obj, (staticmethod, classmethod)):
        return [("__func__", obj.__func__)]
    if isinstance(obj, property):
        return [(name, f) for name, f in (("fget", obj.fget), ("fset", obj.fset)) if f is not None]
    if isinstance(obj, type):
        if travels_by(obj) == "reference":
            return []
        out = []
        inherited = [vars(base) for base in obj.__mro__[1:]]
        for name, value in list(vars(obj).items())[:MAX_MEMBERS]:
            # cloudpickle leaves out dunders, ABC bookkeeping and what a base class holds too
            if name.startswith("__") and name.endswith("__") or name == "_abc_impl" \
                    or any(d.get(name, _MISSING) is value for d in inherited):
                continue
            if isinstance(value, (types.FunctionType, staticmethod, classmethod)):
                out.append((f"method '{name}'", value))
            else:
                out.append((name, value))
        return out
    return _state_members(obj)


def _function_members(func: types.FunctionType) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    code = func.__code__
    for name, cell in zip(code.co_freevars, func.__closure__ or ()):
        try:
            out.append((f"closure '{name}'", cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    if travels_by(func) != "reference":
        for name in sorted(_code_names(code)):
            if name in func.__globals__:
                value = func.__globals__[name]
                if not isinstance(value, types.ModuleType):
                    out.append((f"global '{name}'", value))
    defaults = func.__defaults__ or ()
    params = code.co_varnames[code.co_argcount - len(defaults):code.co_argcount]
    out += [(f"default '{p}'", v) for p, v in zip(params, defaults)]
    out += [(f"default '{k}'", v) for k, v in (func.__kwdefaults__ or {}).items()]
    return out


def _state_members(obj: Any) -> list[tuple[str, Any]]:
    """An object's pickled state: what `__getstate__` returns (Python 3.11+), else its __dict__."""
    state: Any = None
    getstate = getattr(obj, "__getstate__", None)
    try:
        state = getstate() if callable(getstate) else getattr(obj, "__dict__", None)
    except Exception:  # __getstate__ that refuses (sockets, locks): nothing inside to blame
        return []
    merged: dict = {}
    parts = state if isinstance(state, tuple) and len(state) == 2 else (state,)
    for part in parts:
        if isinstance(part, dict):
            merged.update(part)
    return [(str(k), v) for k, v in list(merged.items())[:MAX_MEMBERS]]


# --------------------------------------------------------------------------- analysis
def find_culprits(obj: Any, labels: list[str], error: str) -> list[dict]:
    """The innermost members that fail to pickle, each with its path from the root."""
    found: list[dict] = []

    def walk(value: Any, path: list[str], err: str, seen: frozenset, kinds: list[str]) -> None:
        if len(found) >= MAX_CULPRITS:
            return
        failing = []
        if len(path) <= MAX_DEPTH:
            for label, child in members(value):
                if id(child) in seen:
                    continue
                _, child_err = _dumps(child)
                if child_err:
                    failing.append((label, child, child_err))
        if not failing:
            found.append({"path": render_path(path), "labels": list(path), "types": kinds,
                          "type": type_name(value), "error": err, "repr": _short_repr(value)})
            return
        for label, child, child_err in failing:
            walk(child, path + [label], child_err, seen | {id(child)}, kinds + [type_name(child)])

    walk(obj, list(labels), error, frozenset({id(obj)}), [type_name(obj)])
    return found


def size_members(obj: Any, labels: list[str], size: int) -> tuple[list[dict], dict | None]:
    """The largest members by pickled size, and the innermost member holding most of the size."""
    kept: list[dict] = []
    dominant = None
    value, path, total = obj, list(labels), size
    for _ in range(MAX_DEPTH):
        sized = []
        for label, child in members(value):
            data, err = _dumps(child)
            if data is not None:
                sized.append((len(data), label, child))
        sized.sort(key=lambda s: -s[0])
        for n, label, child in sized[:LARGEST_KEPT]:
            kept.append({"path": render_path(path + [label]), "type": type_name(child),
                         "size_bytes": n})
        if not sized or sized[0][0] < total / 2 or sized[0][0] < MEMBER_SIZE_FLOOR:
            break
        n, label, value = sized[0]
        path, total = path + [label], n
        dominant = {"path": render_path(path), "type": type_name(value), "size_bytes": n}
    unique = {m["path"]: m for m in kept}
    largest = sorted(unique.values(), key=lambda m: (-m["size_bytes"], m["path"]))[:2 * LARGEST_KEPT]
    return largest, dominant


def ray_inspect(obj: Any, name: str) -> dict:
    """Ray's own `inspect_serializability`, its printout captured and its colour codes stripped."""
    from ray.util import inspect_serializability

    buf = io.StringIO()
    saved = sys.stdout, sys.stderr  # it calls colorama.init(), which rewraps both streams
    try:
        ok, failures = inspect_serializability(obj, name=name, depth=3, print_file=buf)
    except Exception as exc:
        return {"error": last_line(exc)}
    finally:
        sys.stdout, sys.stderr = saved
    text = _trim_report(_ANSI.sub("", buf.getvalue()))
    if len(text) > RAY_REPORT_CHARS:
        text = text[:RAY_REPORT_CHARS] + "\n..."
    paths = sorted({(" -> ".join("unknown" if p is None else str(p) for p in f.path),
                     type_name(f.obj)) for f in failures})
    return {"serializable": bool(ok), "failures": [{"path": p, "type": t} for p, t in paths],
            "report": text}


def _trim_report(text: str) -> str:
    """Keep what Ray's inspector found; drop its rulers, its boilerplate and the members that passed."""
    lines = [line.rstrip() for line in text.splitlines()]
    kept = []
    for i, line in enumerate(lines):
        bare = line.strip()
        if not bare or set(bare) == {"="} or bare.startswith(("Check https://", "If you have any")):
            continue
        if bare.startswith("Serializing '"):
            following = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if not following.startswith(("!!! FAIL", "Inspecting")):
                continue
        kept.append(line)
    return "\n".join(kept)


def inspect_object(name: str, obj: Any, role: str, **extra: Any) -> dict:
    entry: dict[str, Any] = {"name": name, "role": role, "type": type_name(obj),
                             "travels_by": travels_by(obj), **extra}
    data, err = _dumps(obj)
    if err is None:
        entry.update(serializable=True, size_bytes=len(data), largest_members=[],
                     dominant_member=None)
        if len(data) >= MEMBER_SIZE_FLOOR:
            entry["largest_members"], entry["dominant_member"] = size_members(obj, [name], len(data))
        return entry
    culprits = find_culprits(obj, [name], err)
    entry.update(serializable=False, error=err, culprits=culprits)
    # Ray's inspector walks every attribute with getattr; on an AlgorithmConfig that trips
    # deprecated properties, so it is pointed at the config member that fails.
    probe, probe_name = obj, name
    if role == "config" and culprits and len(culprits[0]["labels"]) > 1:
        label = culprits[0]["labels"][1]
        probe = dict(members(obj)).get(label, obj)
        probe_name = label if probe is not obj else name
    entry["ray_inspect"] = ray_inspect(probe, probe_name)
    return entry


# --------------------------------------------------------------------------- importing
class _Registrations:
    """register_env calls seen while user modules import: name -> creator, not pickled anywhere."""

    def __init__(self):
        self.creators: dict[str, Any] = {}
        self.errors: dict[str, str] = {}
        self.active = 0


_REGISTERED = _Registrations()
_LOADED_FILES: dict[str, types.ModuleType] = {}


def _patch_registry(module: types.ModuleType) -> None:
    registry_cls = getattr(module, "_Registry", None)
    if registry_cls is None or getattr(registry_cls.register, "_rldoctor", False):
        return
    original = registry_cls.register
    env_category = getattr(module, "ENV_CREATOR", "env_creator")

    def register(self, category, key, value):
        if not _REGISTERED.active or category != env_category:
            return original(self, category, key, value)
        _REGISTERED.creators[key] = value
        _, err = _dumps(value)
        if err:
            _REGISTERED.errors[key] = err
        return None

    register._rldoctor = True
    register._original = original
    registry_cls.register = register


class _PatchRegistryOnImport(importlib.abc.MetaPathFinder):
    """Patch ray.tune.registry the moment the user's module imports it (it costs seconds to
    import it ourselves when the target never uses it)."""

    NAME = "ray.tune.registry"

    def find_spec(self, fullname, path, target=None):
        if fullname != self.NAME:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader_exec = spec.loader.exec_module

        def exec_module(module):
            loader_exec(module)
            _patch_registry(module)

        spec.loader.exec_module = exec_module
        return spec


@contextlib.contextmanager
def recording_register_env():
    finder = None
    if _PatchRegistryOnImport.NAME in sys.modules:
        _patch_registry(sys.modules[_PatchRegistryOnImport.NAME])
    else:
        finder = _PatchRegistryOnImport()
        sys.meta_path.insert(0, finder)
    _REGISTERED.active += 1
    try:
        yield _REGISTERED
    finally:
        _REGISTERED.active -= 1
        if finder is not None and finder in sys.meta_path:
            sys.meta_path.remove(finder)


def _import(spec: TargetSpec) -> types.ModuleType:
    if spec.module:
        cwd = os.getcwd()
        if cwd not in sys.path and "" not in sys.path:
            sys.path.insert(0, cwd)
        return importlib.import_module(spec.module)
    if spec.path in _LOADED_FILES:
        return _LOADED_FILES[spec.path]
    path = Path(spec.path)
    digest = hashlib.sha1(spec.path.encode()).hexdigest()[:8]
    stem = re.sub(r"\W", "_", path.stem)
    name = f"_rldoctor_target_{stem}_{digest}"
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # as for `python file.py`: its folder comes first
    file_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(file_spec)
    sys.modules[name] = module
    try:
        file_spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    import ray.cloudpickle as cloudpickle

    cloudpickle.register_pickle_by_value(module)  # a script's objects travel by value
    _LOADED_FILES[spec.path] = module
    return module


def _resolve(module: types.ModuleType, spec: TargetSpec) -> tuple[Any, str | None]:
    """(object, registered env name or None)."""
    obj: Any = module
    try:
        for part in spec.attr.split("."):
            obj = getattr(obj, part)
        return obj, None
    except AttributeError:
        pass
    creator = registered_creator(spec.attr)
    if creator is not None:
        return creator, spec.attr
    where = spec.module or spec.path
    raise LookupError(f"{where} has no attribute {spec.attr!r} and registers no env "
                      f"named {spec.attr!r}")


def registered_creator(name: str) -> Any:
    if name in _REGISTERED.creators:
        return _REGISTERED.creators[name]
    registry = sys.modules.get("ray.tune.registry")
    if registry is None:
        return None
    pickled = getattr(registry._global_registry, "_to_flush", {}).get((registry.ENV_CREATOR, name))
    if pickled is None:
        return None
    import ray.cloudpickle as cloudpickle

    return cloudpickle.loads(pickled)


def _mro_names(cls: type) -> set[str]:
    return {_qualified(c) for c in getattr(cls, "__mro__", ())}


def kind_of(obj: Any, registered_as: str | None) -> str:
    if registered_as is not None:
        return "registered_env"
    if _RLLIB_CONFIG in _mro_names(type(obj)):
        return "algorithm_config"
    if isinstance(obj, type):
        names = _mro_names(obj)
        if names & _ENV_BASES:
            return "env_class"
        if names & _CALLBACK_BASES:
            return "callbacks_class"
        return "class"
    if callable(obj):
        return "env_creator"
    return "object"


_ROLES = {"registered_env": "env creator", "env_class": "env class", "env_creator": "env creator",
          "callbacks_class": "callbacks class", "class": "class", "object": "object"}


def _objects(obj: Any, kind: str, spec: TargetSpec, registered_as: str | None) -> list[dict]:
    if kind == "registered_env":
        return [inspect_object("env_creator", obj, "env creator", registered_as=registered_as,
                               register_env_error=_REGISTERED.errors.get(registered_as))]
    root = spec.attr.split(".")[-1]
    if kind != "algorithm_config":
        return [inspect_object(root, obj, _ROLES[kind])]
    # RLlib pickles the whole config for every env runner; a registered env's creator
    # travels separately, through Ray's env registry.
    out = [inspect_object(root, obj, "config")]
    env = getattr(obj, "env", None)
    if isinstance(env, str):
        creator = registered_creator(env)
        if creator is not None:
            out.append(inspect_object("env_creator", creator, "env creator", registered_as=env,
                                      register_env_error=_REGISTERED.errors.get(env)))
    return out


def inspect_target(spec: TargetSpec) -> dict:
    entry: dict[str, Any] = {"target": spec.text, "module": spec.module, "file": spec.path,
                             "attr": spec.attr, "status": "ok"}
    stage = "import"
    try:
        with recording_register_env():
            module = _import(spec)
        if spec.path:
            entry["module"] = module.__name__
        stage = "resolve"
        obj, registered_as = _resolve(module, spec)
        stage = "inspect"
        kind = kind_of(obj, registered_as)
        entry.update(kind=kind, type=type_name(obj), registered_as=registered_as)
        entry["objects"] = _objects(obj, kind, spec, registered_as)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the user's module may raise anything, SystemExit included
        entry.update(status="error", stage=stage, error=last_line(exc),
                     location=_user_location(exc))
        entry.setdefault("objects", [])
    return entry


def collect(specs: list[TargetSpec], progress: dict | None = None) -> list[dict]:
    out = []
    for spec in specs:
        if progress is not None:
            progress["current"] = spec.text
        out.append(inspect_target(spec))
    return out


def add_targets(doc: dict, specs: list[TargetSpec], timeout_s: float) -> None:
    """Fill doc['targets'] and doc['collectors']['targets'], bounded by `timeout_s`.

    What the user's modules print while importing goes to Ray's quiet log, not into
    the report. A module that hangs on import is abandoned after the timeout.
    """
    from rldoctor.cluster.session import quiet_ray

    started = time.perf_counter()
    progress: dict[str, Any] = {}
    outcome: dict[str, Any] = {}

    def run():
        try:
            outcome["value"] = collect(specs, progress)
        except BaseException as exc:  # an rldoctor bug: costs the section, not the run
            outcome["error"] = exc

    with quiet_ray():
        worker = threading.Thread(target=run, name="rldoctor-targets", daemon=True)
        worker.start()
        worker.join(timeout_s)
    took = round(time.perf_counter() - started, 3)
    doc.setdefault("collectors", {})
    if worker.is_alive():
        doc["collectors"][SECTION] = {
            "status": "timeout", "duration_s": took,
            "error": f"inspecting {progress.get('current', 'the targets')} took longer than "
                     f"{timeout_s:g}s (an import that blocks?)"}
    elif "error" in outcome:
        doc["collectors"][SECTION] = {"status": "error", "duration_s": took,
                                      "error": last_line(outcome["error"])}
    else:
        doc[SECTION] = outcome["value"]
        doc["collectors"][SECTION] = {"status": "ok", "duration_s": took}
