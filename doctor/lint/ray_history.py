"""What Ray's public RLlib, Tune, Train and AIR names did across its releases, read from source.

`rldoctor lint` knows the pinned Ray's names from its own files (`ray_modules`,
`ray_table`); this module adds *when* a name went away and what replaced it, from the
sources of Ray releases (a wheel, an installed `ray/` directory, or a git checkout of
ray-project/ray at a release tag; nothing is imported and no Ray needs to be
installed). For each release it reads, with `ast`:

- the modules under `ray.rllib`, `ray.tune`, `ray.train`, `ray.air`, and the public
  names each binds at its top level (defs, classes, assignments, imports);
- the methods of `AlgorithmConfig`, `Algorithm`, `ExperimentAnalysis`, `ResultGrid`
  and `MetricsLogger`, with their keyword arguments;
- what each release marks deprecated: `@Deprecated(new=..., error=...)` on a
  function, class or method, and a keyword argument whose default is
  `DEPRECATED_VALUE` with the `deprecation_warning(old=..., new=..., error=...)` that
  its method's body gives for it.

A row is written for every name the last release (the pinned Ray) no longer has
although an earlier one had it (`gone`: the first release read without it, `last`:
the last one with it), and for every name the pinned Ray keeps only as a deprecation
(`deprecated`: the first release read that marks it, `error`: whether using it
raises). `new` is the replacement a release named for it, when one did.

    python -m rldoctor.lint.ray_history            # rewrite doctor/lint/ray_history.json.gz

reads the releases in `RELEASES` (a venv of that release in /var/cache/rldoctor-venvs,
else a wheel in $RLDOCTOR_CACHE_DIR/ray-wheels, else `pip download`s the wheel there)
and the installed Ray last. `--source VERSION=PATH` gives a release's wheel, `ray/`
directory or `git:REPO@TAG` instead. tests/test_ray_history.py checks the shipped
file against the installed Ray.
"""

from __future__ import annotations

import ast
import functools
import gzip
import json
import os
import sys
from pathlib import Path

HISTORY_PATH = Path(__file__).with_name("ray_history.json.gz")
HISTORY_VERSION = 1
RELEASES = ("1.13.0", "2.0.0", "2.5.0", "2.10.0", "2.20.0", "2.30.0", "2.40.0", "2.45.0",
            "2.50.0", "2.55.0")
PACKAGES = ("ray.rllib", "ray.tune", "ray.train", "ray.air")
# (the class's name, the files that define it across releases): the classes whose methods
# and keyword arguments are read.
CLASSES = {
    "AlgorithmConfig": ("ray/rllib/algorithms/algorithm_config.py",),
    "Algorithm": ("ray/rllib/algorithms/algorithm.py", "ray/rllib/agents/trainer.py"),
    "ExperimentAnalysis": ("ray/tune/analysis/experiment_analysis.py",),
    "ResultGrid": ("ray/tune/result_grid.py",),
    "MetricsLogger": ("ray/rllib/utils/metrics/metrics_logger.py",),
}
# The algorithms' own config classes: their `training()` keyword arguments, each with what the
# class it extends takes (`training(**kwargs)` hands the rest to it), so that a keyword an
# algorithm dropped (`PPOConfig.training(sgd_minibatch_size=...)`) is a row of its own.
ALGORITHM_CONFIGS = {
    "PPOConfig": (("ray/rllib/algorithms/ppo/ppo.py", "ray/rllib/agents/ppo/ppo.py"), "AlgorithmConfig"),
    "DQNConfig": (("ray/rllib/algorithms/dqn/dqn.py", "ray/rllib/agents/dqn/dqn.py"), "AlgorithmConfig"),
    "SACConfig": (("ray/rllib/algorithms/sac/sac.py", "ray/rllib/agents/sac/sac.py"), "AlgorithmConfig"),
    "IMPALAConfig": (("ray/rllib/algorithms/impala/impala.py", "ray/rllib/agents/impala/impala.py"),
                     "AlgorithmConfig"),
    "APPOConfig": (("ray/rllib/algorithms/appo/appo.py", "ray/rllib/agents/ppo/appo.py"), "IMPALAConfig"),
}
ALGORITHM_METHODS = ("training",)
# Classes whose members the classes above inherit: (base class, the files that define it).
BASES = {
    "Algorithm": (("Trainable", ("ray/tune/trainable/trainable.py", "ray/tune/trainable.py")),
                  ("Checkpointable", ("ray/rllib/utils/checkpoints.py",))),
}
# The names in the classes above that are really the old Trainer's (Algorithm's 1.x name).
_CLASS_ALIASES = {"Trainer": "Algorithm", "ImpalaConfig": "IMPALAConfig"}
_VENVS = Path("/var/cache/rldoctor-venvs")


# ---- reading one release's files -------------------------------------------------------------

class Source:
    """The `ray/...` files of one release: `files()` lists them, `read(path)` gives the text."""

    def __init__(self, where: str):
        self.where = where
        self._zip = None
        self._git = None
        if where.startswith("git:"):
            repo, _, tag = where[4:].rpartition("@")
            self._git = (repo, tag)
        elif where.endswith(".whl"):
            import zipfile

            self._zip = zipfile.ZipFile(where)
            # old wheels keep the package under ray-X.data/purelib/ (or platlib/)
            self._members = {}
            for member in self._zip.namelist():
                path = member.split("/", 2)[2] if ".data/" in member.split("/", 1)[0] + "/" \
                    and member.count("/") >= 2 else member
                if path.startswith("ray/") and path.endswith(".py"):
                    self._members[path] = member

    def files(self) -> list[str]:
        if self._zip is not None:
            return sorted(self._members)
        if self._git is not None:
            import subprocess

            repo, tag = self._git
            out = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", tag, "python/ray"],
                                 capture_output=True, text=True, check=True).stdout
            return [p[len("python/"):] for p in out.splitlines() if p.endswith(".py")]
        root = Path(self.where)
        return sorted(str(Path(d, f).relative_to(root.parent)) for d, _, fs in os.walk(root)
                      for f in fs if f.endswith(".py"))

    def read(self, path: str) -> str:
        if self._zip is not None:
            return self._zip.read(self._members[path]).decode("utf-8", "replace")
        if self._git is not None:
            import subprocess

            repo, tag = self._git
            return subprocess.run(["git", "-C", repo, "show", f"{tag}:python/{path}"],
                                  capture_output=True, text=True, check=True).stdout
        return (Path(self.where).parent / path).read_text(encoding="utf-8", errors="replace")


def _parse(text: str):
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _module_of(path: str) -> str:
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _wanted(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PACKAGES) \
        and ".tests" not in module and ".examples" not in module and "._" not in module


def _top_names(tree, package: bool) -> set[str]:
    """The public names a module binds at its top level (including under if/try): what it
    defines, and for a package (an `__init__`) also what it imports, which it re-exports."""
    names: set[str] = set()

    def visit(body):
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(stmt.name)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for alias in stmt.names:
                    if alias.name == "*":
                        names.add("*")  # anything can come in: the module's names are open-ended
                    elif package:
                        names.add(alias.asname or alias.name.split(".")[0])
                    else:
                        names.add("-" + (alias.asname or alias.name.split(".")[0]))  # bound, not its own
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for node in ast.walk(target):
                        if isinstance(node, ast.Name):
                            names.add(node.id)
            elif isinstance(stmt, (ast.If, ast.Try)):
                visit(stmt.body)
                visit(getattr(stmt, "orelse", []))
                for handler in getattr(stmt, "handlers", []):
                    visit(handler.body)
                visit(getattr(stmt, "finalbody", []))
    visit(tree.body)
    if "__getattr__" in names:
        names.add("*")
    for stmt in tree.body:  # a module that raises as it is imported (`raise DeprecationWarning(...)`)
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            names.add("!" + (getattr(exc, "id", None) or getattr(exc, "attr", "Exception")))
        # RLlib's `deprecation_warning(old=..., error=True)` at a module's top level: ValueError
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "deprecation_warning" and any(
                kw.arg == "error" and isinstance(kw.value, ast.Constant) and kw.value.value is True
                for kw in call.keywords):
            names.add("!ValueError")
    return {n for n in names if not n.startswith("_")}


def _deprecated_marks(decorators) -> dict | None:
    """{"new", "error"} of a @Deprecated(...) decorator, or None."""
    for decorator in decorators:
        func = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name != "Deprecated":
            continue
        words = {}
        for kw in getattr(decorator, "keywords", []):
            if isinstance(kw.value, ast.Constant):
                words[kw.arg] = kw.value.value
        return {"new": str(words.get("new") or words.get("help") or "") or None,
                "error": words.get("error") is True}
    return None


def _is_deprecated_value(node) -> bool:
    return isinstance(node, ast.Name) and node.id == "DEPRECATED_VALUE"


def _kwarg_deprecations(func) -> dict[str, dict]:
    """Keyword arguments defaulting to DEPRECATED_VALUE, with what the body says of them."""
    args = func.args
    positional = args.posonlyargs + args.args
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    marked = {name: {"new": None, "error": False} for name, d in defaults.items() if _is_deprecated_value(d)}
    if not marked:
        return {}
    for node in ast.walk(func):
        if not isinstance(node, ast.If):
            continue
        tested = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)} & set(marked)
        if len(tested) != 1:
            continue
        name = tested.pop()
        for call in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "deprecation_warning":
                words = {kw.arg: kw.value.value for kw in call.keywords if isinstance(kw.value, ast.Constant)}
                marked[name] = {"new": words.get("new") or words.get("help"), "error": words.get("error") is True}
                break
    return marked


def _class_members(tree, class_name: str) -> dict | None:
    """{method: {"kwargs": [...], "deprecated": {...}|None, "kwarg_deprecated": {...}}} of a class."""
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == class_name:
            out = {}
            for member in stmt.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and not member.name.startswith("_"):
                    args = member.args
                    kwargs = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg not in ("self", "cls")]
                    out[member.name] = {"kwargs": kwargs, "var_kwargs": args.kwarg is not None,
                                        "deprecated": _deprecated_marks(member.decorator_list),
                                        "kwarg_deprecated": _kwarg_deprecations(member)}
            return out
    return None


def read_release(source: Source) -> dict:
    """{"modules": {module: [names]}, "deprecated_names": {...}, "classes": {...}} of one release."""
    modules: dict[str, set[str]] = {}
    deprecated: dict[str, dict] = {}
    classes: dict[str, dict] = {}
    wanted_files = {path: _module_of(path) for path in source.files()}
    class_files = {path: name for name, paths in CLASSES.items() for path in paths}
    class_files.update({path: name for name, (paths, _) in ALGORITHM_CONFIGS.items() for path in paths})
    for path, module in sorted(wanted_files.items()):
        if not _wanted(module) and path not in class_files:
            continue
        tree = _parse(source.read(path))
        if tree is None:
            continue
        if _wanted(module):
            modules[module] = _top_names(tree, path.endswith("__init__.py"))
            for stmt in tree.body:
                if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                    marks = _deprecated_marks(stmt.decorator_list)
                    if marks:
                        deprecated[f"{module}.{stmt.name}"] = marks
        if path in class_files:
            name = class_files[path]
            for candidate in (name, *[a for a, b in _CLASS_ALIASES.items() if b == name]):
                members = _class_members(tree, candidate)
                if members is not None and name not in classes:
                    classes[name] = members
    files = set(wanted_files)
    for name, bases in BASES.items():
        if name not in classes:
            continue
        for base, paths in bases:
            for path in paths:
                tree = _parse(source.read(path)) if path in files else None
                members = _class_members(tree, base) if tree is not None else None
                if members:
                    for member, facts in members.items():
                        classes[name].setdefault(member, facts)
                    break
    for name in ALGORITHM_CONFIGS:  # in order: a base (IMPALAConfig) before what extends it (APPO)
        if name in classes:
            classes[name] = _with_base(classes, name)
    return {"modules": {m: sorted(n) for m, n in modules.items()}, "deprecated_names": deprecated,
            "classes": classes}


def _with_base(classes: dict, name: str) -> dict:
    """An algorithm config's `training()` as a call sees it: its own keywords and, when it hands
    `**kwargs` on, those of the class it extends (read in the same release)."""
    base = classes.get(ALGORITHM_CONFIGS[name][1], {})
    out = {}
    for method in ALGORITHM_METHODS:
        own = classes[name].get(method)
        if own is None:
            if method in base:
                out[method] = base[method]
            continue
        merged = dict(own)
        if own["var_kwargs"] and method in base:
            merged["kwargs"] = sorted(set(own["kwargs"]) | set(base[method]["kwargs"]))
            merged["var_kwargs"] = base[method]["var_kwargs"]
            merged["kwarg_deprecated"] = {**base[method]["kwarg_deprecated"], **own["kwarg_deprecated"]}
        out[method] = merged
    return out


# ---- `ray start`'s options, as its click decorators declare them --------------------------------

def _click_option(call) -> dict | None:
    """{"names", "type", "choices", "flag"} of a `click.option(...)` call, or None."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "option"):
        return None
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
             and a.value.startswith("-")]
    if not names:
        return None
    option = {"names": sorted({n.split("/")[0] for n in names} | {n.split("/")[1] for n in names if "/" in n}),
              "type": "str", "flag": False}
    for kw in call.keywords:
        if kw.arg in ("is_flag", "count") and isinstance(kw.value, ast.Constant):
            option["flag"] = bool(kw.value.value)
        elif kw.arg == "type":
            value = kw.value
            if isinstance(value, ast.Name) and value.id in ("int", "float", "str", "bool"):
                option["type"] = value.id
            elif isinstance(value, ast.Call) and getattr(value.func, "attr", getattr(value.func, "id", "")) == "Choice":
                choices = value.args[0] if value.args else None
                option["type"] = "choice"  # its choices are known when written out as a list
                if isinstance(choices, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in choices.elts):
                    option["choices"] = [e.value for e in choices.elts]
            else:
                option["type"] = "other"
    if any("/" in n for n in names):
        option["flag"] = True
    return option


def ray_start_options(source: Source) -> list[dict]:
    """The options of `ray start` (ray/scripts/scripts.py), with the logging options its
    `add_click_logging_options` decorator adds (ray/autoscaler/_private/cli_logger.py)."""
    files = set(source.files())
    if "ray/scripts/scripts.py" not in files:
        return []
    tree = _parse(source.read("ray/scripts/scripts.py"))
    options = []
    for stmt in tree.body if tree else []:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "start":
            for decorator in stmt.decorator_list:
                if isinstance(decorator, ast.Call):
                    option = _click_option(decorator)
                    if option:
                        options.append(option)
                elif getattr(decorator, "id", "") == "add_click_logging_options" and \
                        "ray/autoscaler/_private/cli_logger.py" in files:
                    logger = _parse(source.read("ray/autoscaler/_private/cli_logger.py"))
                    for node in ast.walk(logger) if logger else []:
                        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "CLICK_LOGGING_OPTIONS"
                                                                for t in node.targets):
                            for call in ast.walk(node.value):
                                if isinstance(call, ast.Call) and _click_option(call):
                                    options.append(_click_option(call))
    return sorted(options, key=lambda o: o["names"])


# ---- the rows ----------------------------------------------------------------------------------

def _when_gone(versions: list[str], present: list[bool]) -> tuple[str, str] | None:
    """(last release with it, first release after it without it) when the last release lacks it."""
    if present[-1] or not any(present):
        return None
    last = max(i for i, p in enumerate(present) if p)
    return versions[last], versions[last + 1]


def _first_marked(versions: list[str], marks: list) -> str | None:
    """The first release of the unbroken run of marked releases that ends with the last one."""
    if not marks[-1]:
        return None
    first = len(marks) - 1
    while first > 0 and marks[first - 1]:
        first -= 1
    return versions[first]


def _replacement(marks: list) -> str | None:
    return next((m.get("new") for m in reversed(marks) if m and m.get("new")), None)


def rows_from(releases: list[tuple[str, dict]]) -> list[dict]:
    """The history rows of the releases read (oldest first, the pinned Ray last)."""
    versions = [v for v, _ in releases]
    data = [d for _, d in releases]
    rows = []
    all_modules = sorted({m for d in data for m in d["modules"]})
    final = data[-1]
    def raising(module: str) -> str | None:
        """The exception the pinned Ray raises as `module` (or a package above it) is imported."""
        parts = module.split(".")
        for i in range(2, len(parts) + 1):
            marks = [n for n in final["modules"].get(".".join(parts[:i]), ()) if n.startswith("!")]
            if marks:
                return marks[0][1:]
        return None

    module_rows: set[str] = set()
    for module in all_modules:
        present = [module in d["modules"] for d in data]
        raises = raising(module)
        gone = _when_gone(versions, present)
        if raises and module in final["modules"]:
            # still a file, but importing it raises: gone as far as a script is concerned
            gone = (versions[max(i for i, d in enumerate(data)
                                 if module in d["modules"] and not any(n.startswith("!") for n in d["modules"][module]))]
                    if any(module in d["modules"] and not any(n.startswith("!") for n in d["modules"][module])
                           for d in data) else None, None)
            if gone[0] is None:
                continue
            after = versions[versions.index(gone[0]) + 1]
            gone = (gone[0], after)
        if gone:
            parts = module.split(".")
            if any(".".join(parts[:i]) in module_rows for i in range(2, len(parts))):
                continue  # a package above it is gone (or raises): one row for the package
            module_rows.add(module)
            rows.append({"kind": "module", "name": module, "last": gone[0], "gone": gone[1],
                         "error": raises or "ModuleNotFoundError"})
            continue
        if module not in final["modules"] or "*" in final["modules"][module]:
            continue  # gone above, or a module whose names cannot be told from its text
        bound = {n.lstrip("-") for n in final["modules"][module]}
        names = sorted({n for d in data for n in d["modules"].get(module, ())
                        if n[0] not in "-!*"} - bound)
        for name in names:
            if f"{module}.{name}" in final["modules"]:
                continue  # a submodule of that name
            present = [name in set(d["modules"].get(module, ())) for d in data]
            gone = _when_gone(versions, present)
            if gone:
                marks = [d["deprecated_names"].get(f"{module}.{name}") for d in data]
                rows.append({"kind": "name", "module": module, "name": name, "last": gone[0],
                             "gone": gone[1], "new": _replacement(marks), "error": "ImportError"})
    all_deprecated = sorted(final["deprecated_names"])
    for qualified in all_deprecated:
        marks = [d["deprecated_names"].get(qualified) for d in data]
        module, _, name = qualified.rpartition(".")
        rows.append({"kind": "name", "module": module, "name": name, "deprecated": _first_marked(versions, marks),
                     "new": _replacement(marks), "raises": marks[-1]["error"]})
    written: set[tuple[str, str]] = set()  # (method, kwarg) rows of AlgorithmConfig
    for class_name in (*CLASSES, *ALGORITHM_CONFIGS):
        methods = sorted({m for d in data for m in d["classes"].get(class_name, {})})
        final_class = final["classes"].get(class_name, {})
        for method in methods:
            present = [method in d["classes"].get(class_name, {}) for d in data]
            in_class = [class_name in d["classes"] for d in data]
            gone = _when_gone([v for v, c in zip(versions, in_class) if c],
                              [p for p, c in zip(present, in_class) if c])
            if gone:
                marks = [d["classes"].get(class_name, {}).get(method, {}).get("deprecated") for d in data]
                rows.append({"kind": "method", "class": class_name, "name": method, "last": gone[0],
                             "gone": gone[1], "new": _replacement(marks), "error": "AttributeError"})
                continue
            if method not in final_class:
                continue
            marks = [d["classes"].get(class_name, {}).get(method, {}).get("deprecated") for d in data]
            if marks[-1]:
                rows.append({"kind": "method", "class": class_name, "name": method,
                             "deprecated": _first_marked(versions, marks), "new": _replacement(marks),
                             "raises": marks[-1]["error"]})
            if marks[-1] or final_class[method]["var_kwargs"]:
                continue  # its row covers every call; or it takes any keyword and passes it on
            final_kwargs = set(final_class[method]["kwargs"])
            kwargs = sorted({k for d in data for k in d["classes"].get(class_name, {}).get(method, {}).get("kwargs", ())})
            for kwarg in kwargs:
                kw_present = [kwarg in d["classes"].get(class_name, {}).get(method, {}).get("kwargs", ())
                              for d in data]
                has_method = [method in d["classes"].get(class_name, {}) for d in data]
                gone = _when_gone([v for v, h in zip(versions, has_method) if h],
                                  [p for p, h in zip(kw_present, has_method) if h])
                kw_marks = [d["classes"].get(class_name, {}).get(method, {}).get("kwarg_deprecated", {}).get(kwarg)
                            for d in data]
                if class_name in ALGORITHM_CONFIGS and (method, kwarg) in written:
                    continue  # the row of AlgorithmConfig's own keyword covers every algorithm
                if class_name == "AlgorithmConfig" and ((gone and kwarg not in final_kwargs) or kw_marks[-1]):
                    written.add((method, kwarg))
                if gone and kwarg not in final_kwargs:
                    rows.append({"kind": "kwarg", "class": class_name, "method": method, "name": kwarg,
                                 "last": gone[0], "gone": gone[1], "new": _replacement(kw_marks),
                                 "error": "TypeError"})
                elif kw_marks[-1]:
                    rows.append({"kind": "kwarg", "class": class_name, "method": method, "name": kwarg,
                                 "deprecated": _first_marked(versions, kw_marks), "new": _replacement(kw_marks),
                                 "raises": kw_marks[-1]["error"]})
    return [{k: v for k, v in row.items() if v is not None} for row in rows]


# ---- where each release's source comes from -----------------------------------------------------

def _cache_dir() -> Path:
    from rldoctor.lint.ray_names import _cache_dir as base

    return base() / "ray-wheels"


def _release_source(version: str) -> str:
    for site in sorted(_VENVS.glob(f"ray-{version}/lib/python3*/site-packages/ray")):
        return str(site)
    wheels = _cache_dir()
    found = sorted(wheels.glob(f"ray-{version}-*.whl"))
    if not found:
        import subprocess

        wheels.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.9", "--platform", "manylinux2014_x86_64",
                        f"ray=={version}", "-d", str(wheels)], check=True)
        found = sorted(wheels.glob(f"ray-{version}-*.whl"))
    return str(found[0])


def build(sources: list[tuple[str, str]]) -> dict:
    releases = []
    for version, where in sources:
        releases.append((version, read_release(Source(where))))
        print(f"read Ray {version} from {where}", file=sys.stderr)
    return {"history_version": HISTORY_VERSION, "releases": [v for v, _ in sources],
            "rows": rows_from(releases), "ray_start_options": ray_start_options(Source(sources[-1][1]))}


def write(history: dict, path: Path = HISTORY_PATH) -> None:
    data = json.dumps(history, sort_keys=True, indent=0, separators=(",", ":")).encode()
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))


@functools.lru_cache(maxsize=1)
def load(path: Path = HISTORY_PATH) -> dict:
    """The shipped history; an empty one when it cannot be read (lint then uses its table only)."""
    try:
        history = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError):
        return {"releases": [], "rows": []}
    if history.get("history_version") != HISTORY_VERSION:
        return {"releases": [], "rows": []}
    return history


def main(argv: list[str] | None = None) -> None:
    import argparse

    from rldoctor.lint.ray_names import ray_build, ray_root

    parser = argparse.ArgumentParser(prog="python -m rldoctor.lint.ray_history")
    parser.add_argument("--source", action="append", default=[], metavar="VERSION=PATH",
                        help="a release's wheel, ray/ directory or git:REPO@TAG (git checkout of ray-project/ray)")
    parser.add_argument("--output", default=str(HISTORY_PATH))
    args = parser.parse_args(argv)
    given = dict(s.split("=", 1) for s in args.source)
    versions = list(dict.fromkeys([*RELEASES, *given]))
    versions.sort(key=lambda v: tuple(int(p) for p in v.split(".")))
    root = ray_root()
    installed = ray_build(root)["version"]
    sources = [(v, given.get(v) or _release_source(v)) for v in versions if v != installed]
    sources.append((installed, str(root)))
    history = build(sources)
    write(history, Path(args.output))
    kinds = {}
    for row in history["rows"]:
        key = f"{row['kind']} {'gone' if 'gone' in row else 'deprecated'}"
        kinds[key] = kinds.get(key, 0) + 1
    print(f"{args.output}: Ray {', '.join(history['releases'])}: {len(history['rows'])} rows "
          f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})")


if __name__ == "__main__":
    main()
