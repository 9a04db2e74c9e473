"""Which `ray` modules and names the installed Ray still has, read from its files (never imported).

For the modules a linted file imports (`import ray.rllib.agents.ppo`, `from
ray.rllib.evaluation import Episode`), this answers, per module:

- `exists`: a `.py` file, a package directory or an extension module of that name
  is in the installed Ray;
- `names`: for each name imported from it (or read off it as an attribute), whether
  the module still has it: a submodule of that name, or a line of the module's text
  that could bind it (a def, a class, an assignment, an import, a quoted name); a name
  no line could bind is missing, one that some line could bind is taken as bound, so a
  miss is never claimed on a guess; left out when
  the module can make up names at run time (a module-level `__getattr__`, a star
  import, `globals()` filled in, as generated protobuf modules do);
- `deprecated`: top-level functions and classes whose `@Deprecated(..., error=True)`
  decorator makes every use raise, with the decorator's `new`/`help` words.

Only the modules that are asked for are read; the answers are cached per Ray
build next to the cache of `rldoctor.lint.ray_names`.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

from rldoctor.lint.ray_names import RayNotInstalled, _cache_dir, ray_build, ray_root

CACHE_VERSION = 4
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


_STAR_IMPORT = re.compile(r"^\s*from\s+\S+\s+import\s+\*", re.M)
_MODULE_GETATTR = re.compile(r"^def __getattr__\s*\(", re.M)


def _deprecated(text: str) -> dict[str, str]:
    """Top-level functions and classes decorated @Deprecated(..., error=True)."""
    if "@Deprecated" not in text:
        return {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    out = {}
    for stmt in tree.body:
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


def _text(root: Path, module: str) -> tuple[bool, str | None]:
    exists, source = _module_file(root, module)
    if source is None:
        return exists, None
    try:
        return exists, source.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return exists, None


def _read(root: Path, module: str) -> dict:
    """What is cached of a module: whether it exists, whether its names can be known from its
    text, and its @Deprecated(error=True) members. Names are answered per request (`_has`)."""
    exists, text = _text(root, module)
    entry: dict = {"exists": exists, "names": {}}
    if text is None:
        entry["knowable"] = False
        return entry
    # a module that makes names up at run time: a star import, a module __getattr__, or
    # generated code (protobuf) that fills globals()
    entry["knowable"] = not (_STAR_IMPORT.search(text) or _MODULE_GETATTR.search(text) or "globals()" in text)
    entry["deprecated"] = _deprecated(text)
    return entry


# A name "could be bound" by a module's text when some line could define, assign or import
# it, or quote it (as `__all__` and lazy registries do). Broad on purpose, so that only a name
# nothing in the module could bind is called missing. Each pattern captures the names it binds:
_WORD = re.compile(r"\w+")
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)  # def NAME, class NAME
_ASSIGN = re.compile(r"^[ \t]*([\w \t,()\[\].*]*)(?::[^=\n]*)?=(?!=)", re.M)  # every word left of `=`
_AFTER = re.compile(r"\b(?:import|global)\b([^\n]*)")  # every word after import / global on its line
_ALONE = re.compile(r"^[ \t]*(\w+)[ \t]*,?[ \t]*(?:#[^\n]*)?$", re.M)  # NAME alone on a line (a list)
_AS = re.compile(r"\bas[ \t]+(\w+)")  # ... as NAME
_QUOTED = re.compile(r"(?=[\"'](\w+)[\"'])")  # "NAME" or 'NAME'


@functools.lru_cache(maxsize=32)
def bindable_names(text: str) -> frozenset:
    """Every name a line of this module's text could bind (tests/test_ray_table.py holds the
    same rule written per name, and checks that both agree on Ray's own files)."""
    out = set(_DEF.findall(text)) | set(_ALONE.findall(text)) | set(_AS.findall(text))
    out.update(_QUOTED.findall(text))
    for match in _ASSIGN.finditer(text):
        out.update(_WORD.findall(match.group(1)))
    for match in _AFTER.finditer(text):
        out.update(_WORD.findall(match.group(1)))
    return frozenset(out)


def _has(root: Path, module: str, name: str, entry: dict) -> bool | None:
    """Does `module` still have `name`? None when that cannot be told. A name that appears
    nowhere in the module's text is not bound there; one that appears is taken as bound."""
    if name in entry["names"]:
        return entry["names"][name]
    if _submodule(root, module, name):
        answer: bool | None = True
    elif not entry.get("knowable"):
        answer = None
    else:
        _, text = _text(root, module)
        answer = None if text is None else name in bindable_names(text)
    entry["names"][name] = answer
    return answer


def _submodule(root: Path, module: str, name: str) -> bool:
    return _module_file(root, f"{module}.{name}")[0]


def module_index(wanted: dict[str, set[str]]) -> dict:
    """{module: {"exists", "names": {name: bool}, "deprecated": {name: words}}} for `ray.*` modules."""
    try:
        root = ray_root()
        build = ray_build(root)
    except RayNotInstalled:  # the client-only install: the pinned Ray's table shipped with rldoctor
        from rldoctor.lint import ray_table

        try:
            return ray_table.module_index(wanted)
        except ray_table.NoTable as exc:
            return {"error": str(exc)}
    except OSError as exc:
        return {"error": f"cannot read the installed Ray's modules: {exc}"}
    cache_path = _cache_dir() / f"ray-modules-{build['version']}-{build['commit'][:12]}.json"
    try:
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
        if not isinstance(cache, dict) or cache.get("cache_version") != CACHE_VERSION \
                or not isinstance(cache.get("modules", {}), dict):
            cache = {}  # another version's, or not a cache at all (a list): read afresh
    except (OSError, ValueError, RecursionError):
        cache = {}
    modules = cache.setdefault("modules", {})
    dirty = False
    out: dict[str, dict] = {}
    for module in sorted(wanted):
        if module != "ray" and not module.startswith("ray."):
            continue
        if not isinstance(modules.get(module), dict) or "exists" not in modules[module]:
            modules[module] = _read(root, module)
            dirty = True
        entry = modules[module]
        answer: dict = {"exists": entry["exists"], "deprecated": {}}
        if entry["exists"]:
            names = {}
            for name in sorted(wanted[module]):
                known = name in entry["names"]
                has = _has(root, module, name, entry)
                dirty = dirty or not known
                if has is not None:
                    names[name] = has
            answer["names"] = names
            answer["deprecated"] = {n: w for n, w in (entry.get("deprecated") or {}).items()
                                    if n in wanted[module]}
        out[module] = answer
    if dirty:
        from rldoctor.errors import RldoctorError
        from rldoctor.safe_write import SHARED, write_file

        try:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            cache["cache_version"] = CACHE_VERSION
            write_file(str(cache_path), json.dumps(cache), what="", mode=SHARED)
        except (OSError, RldoctorError):
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
