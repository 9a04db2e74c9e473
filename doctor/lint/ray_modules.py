"""Which `ray` modules and names the installed Ray still has, read from its files (never imported).

For the modules a linted file imports (`import ray.rllib.agents.ppo`, `from
ray.rllib.evaluation import Episode`), this answers, per module:

- `exists`: a `.py` file, a package directory or an extension module of that name
  is in the installed Ray;
- `names`: for each name imported from it, whether the module still binds it at
  top level (a def, a class, an assignment, an import, in any top-level `if` or
  `try`) or has a submodule of that name; left out when the module can make up
  names at run time (a module-level `__getattr__`, a star import, `globals()` filled
  in, as generated protobuf modules do);
- `deprecated`: top-level functions and classes whose `@Deprecated(..., error=True)`
  decorator makes every use raise, with the decorator's `new`/`help` words.

Only the modules that are asked for are read; the answers are cached per Ray
build next to the cache of `rldoctor.lint.ray_names`.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

from rldoctor.lint.ray_names import RayNotInstalled, _cache_dir, ray_build, ray_root

CACHE_VERSION = 2
_EXTENSIONS = (".so", ".pyd")


def _module_file(root: Path, module: str) -> tuple[bool, Path | None]:
    """(exists, the source file to read or None) for `ray.a.b` under the installed `ray/`."""
    parts = module.split(".")[1:]
    base = root.joinpath(*parts) if parts else root
    if base.is_dir():
        init = base / "__init__.py"
        return True, init if init.exists() else None
    source = base.with_name(base.name + ".py")
    if source.exists():
        return True, source
    parent = base.parent
    if parent.is_dir() and any(p.name.startswith(base.name + ".") and p.suffix in _EXTENSIONS
                               for p in parent.iterdir()):
        return True, None
    return False, None


def _bound(body: list[ast.stmt], names: set[str]) -> bool:
    """Collect top-level bindings into `names`; False when the module can make names up."""
    knowable = True
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
            if stmt.name == "__getattr__":
                knowable = False
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        names.add(node.id)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.name == "*":
                    knowable = False
                else:
                    names.add(alias.asname or alias.name)
        elif isinstance(stmt, ast.If):
            knowable &= _bound(stmt.body, names) & _bound(stmt.orelse, names)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            knowable &= _bound(stmt.body, names) & _bound(stmt.orelse, names) & _bound(stmt.finalbody, names)
            for handler in stmt.handlers:
                knowable &= _bound(handler.body, names)
        elif isinstance(stmt, (ast.With, ast.For, ast.While)):
            knowable &= _bound(stmt.body, names)
    return knowable


def _deprecated(body: list[ast.stmt]) -> dict[str, str]:
    out = {}
    for stmt in body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for decorator in stmt.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            func = decorator.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name != "Deprecated":
                continue
            words = {kw.arg: kw.value.value for kw in decorator.keywords
                     if isinstance(kw.value, ast.Constant)}
            if words.get("error") is True:
                out[stmt.name] = str(words.get("new") or words.get("help") or "")
    return out


def _read(root: Path, module: str) -> dict:
    exists, source = _module_file(root, module)
    entry: dict = {"exists": exists}
    if source is None:
        return entry
    try:
        text = source.read_text(encoding="utf-8", errors="replace")
        tree = ast.parse(text)
    except (SyntaxError, ValueError, OSError, RecursionError):
        return entry
    names: set[str] = set()
    text_builds_names = "globals()" in text
    if _bound(tree.body, names) and not text_builds_names:  # generated protobuf modules fill globals()
        entry["names"] = sorted(names)
    entry["deprecated"] = _deprecated(tree.body)
    if source.name == "__init__.py":
        entry["package"] = True
    return entry


def _submodule(root: Path, module: str, name: str) -> bool:
    return _module_file(root, f"{module}.{name}")[0]


def module_index(wanted: dict[str, set[str]]) -> dict:
    """{module: {"exists", "names": {name: bool}, "deprecated": {name: words}}} for `ray.*` modules."""
    try:
        root = ray_root()
        build = ray_build(root)
    except (RayNotInstalled, OSError) as exc:
        return {"error": f"cannot read the installed Ray's modules: {exc}"}
    cache_path = _cache_dir() / f"ray-modules-{build['version']}-{build['commit'][:12]}.json"
    try:
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
        if cache.get("cache_version") != CACHE_VERSION:
            cache = {}
    except (OSError, ValueError):
        cache = {}
    modules = cache.setdefault("modules", {})
    dirty = False
    out: dict[str, dict] = {}
    for module in sorted(wanted):
        if module != "ray" and not module.startswith("ray."):
            continue
        if module not in modules:
            modules[module] = _read(root, module)
            dirty = True
        entry = modules[module]
        answer: dict = {"exists": entry["exists"], "deprecated": {}}
        if entry["exists"]:
            known = set(entry.get("names") or ())
            names = {}
            for name in sorted(wanted[module]):
                if name in known:
                    names[name] = True
                elif _submodule(root, module, name):
                    names[name] = True
                elif "names" in entry:
                    names[name] = False
            answer["names"] = names
            answer["deprecated"] = {n: w for n, w in (entry.get("deprecated") or {}).items()
                                    if n in wanted[module]}
        out[module] = answer
    if dirty:
        try:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            temporary = cache_path.with_suffix(f".{os.getpid()}.tmp")
            cache["cache_version"] = CACHE_VERSION
            temporary.write_text(json.dumps(cache), encoding="utf-8")
            os.replace(temporary, cache_path)
        except OSError:
            pass
    return out


def module_aliases(imports: list[dict]) -> dict[str, str]:
    """Local name -> the `ray.*` dotted path an import binds it to."""
    aliases = {}
    for imp in imports:
        module = imp["module"]
        if imp.get("level") or not (module == "ray" or module.startswith("ray.")):
            continue
        if imp["name"] is None:
            local = imp["asname"] or module.split(".")[0]
            aliases[local] = module if imp["asname"] else local
        elif imp["name"] != "*":
            aliases[imp["asname"] or imp["name"]] = f"{module}.{imp['name']}"
    return aliases


def resolve(aliases: dict[str, str], dotted: str | None) -> str | None:
    if not dotted:
        return None
    head, _, rest = dotted.partition(".")
    if head not in aliases:
        return None
    full = aliases[head]
    return f"{full}.{rest}" if rest else full


def wanted_modules(records: list[dict]) -> dict[str, set[str]]:
    """The `ray.*` modules (and names imported from them or read off them) of the linted files."""
    wanted: dict[str, set[str]] = {}
    for record in records:
        facts = record.get("python") if record.get("status") == "ok" else None
        aliases = module_aliases((facts or {}).get("imports") or [])
        for attr in (facts or {}).get("attributes") or []:
            full = resolve(aliases, attr["receiver"]) if attr["ctx"] == "load" else None
            if full and (full == "ray" or full.startswith("ray.")):
                wanted.setdefault(full, set()).add(attr["attr"])
        for imp in (facts or {}).get("imports") or []:
            module = imp["module"]
            if imp.get("level") or not (module == "ray" or module.startswith("ray.")):
                continue
            names = wanted.setdefault(module, set())
            if imp["name"] and imp["name"] != "*":
                names.add(imp["name"])
            # `import ray.a.b` needs every parent too; `from ray.a import b` needs ray.a
            parts = module.split(".")
            for i in range(1, len(parts)):
                wanted.setdefault(".".join(parts[:i]), set()).add(parts[i])
    return wanted
