"""The files given to one `rldoctor lint` as one project: a dict config that one module
builds (a module-level variable, or what a function returns) and another module hands to
RLlib (`from .config import DEFAULTS`, `import settings; tune.run(..., config=settings.CONFIG)`)
is judged where its keys are written, as an RLlib config, as if both were one file.

`reached(records, sinks)` maps each imported name that reaches an RLlib call to the module
of the files given that defines it (relative imports from the importing file's folder,
absolute ones by the module path at the end of a file's path) and returns, per file, the
objects of its exports that reach RLlib, with where they do.
"""

from __future__ import annotations

from pathlib import PurePosixPath


def _module_files(records: list[dict]) -> dict[str, list[dict]]:
    """Every dotted name a file can be imported by (`c`, `b.c`, `a.b.c` for a/b/c.py; a
    package's __init__.py by its folder)."""
    out: dict[str, list[dict]] = {}
    for record in records:
        parts = list(PurePosixPath(record["path"]).with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        parts = [p for p in parts if p not in ("/", "", ".", "..")]
        for start in range(len(parts)):
            out.setdefault(".".join(parts[start:]), []).append(record)
    return out


def _nearest(candidates: list[dict], importer: str) -> dict | None:
    """The candidate module whose path shares the most folders with the importing file."""
    here = PurePosixPath(importer).parent.parts
    best, score = None, -1
    for record in candidates:
        there = PurePosixPath(record["path"]).parent.parts
        common = next((i for i, (a, b) in enumerate(zip(here, there)) if a != b), min(len(here), len(there)))
        if common > score and record["path"] != importer:
            best, score = record, common
    return best


def _relative(importer: str, level: int, module: str, by_path: dict[str, dict]) -> list[tuple[dict, str]]:
    """(record, the dotted rest) for `from ..module import x` in `importer`."""
    base = PurePosixPath(importer).parent
    for _ in range(level - 1):
        base = base.parent
    target = base.joinpath(*module.split(".")) if module else base
    found = []
    for path in (f"{target}.py", f"{target}/__init__.py"):
        if path in by_path:
            found.append(by_path[path])
    return found


def _defining(imp: dict, rest: str, importer: str, modules, by_path) -> tuple[dict, str] | None:
    """(the record that defines what `imp` binds, the name there) for one imported name."""
    module, name = imp["module"], imp["name"]
    if name is None:  # import settings / import pkg.settings as s: rest is "CONFIG" or "f()"
        candidates = modules.get(module, [])
        record = _nearest(candidates, importer)
        return (record, rest) if record and rest else None
    if imp["level"]:
        for record in _relative(importer, imp["level"], module, by_path):
            return record, name + rest
        for record in _relative(importer, imp["level"], f"{module}.{name}" if module else name, by_path):
            return (record, rest.lstrip(".")) if rest.lstrip(".") else None  # from . import settings
        return None
    record = _nearest(modules.get(module, []), importer)
    if record is not None:
        return record, name + rest
    record = _nearest(modules.get(f"{module}.{name}", []), importer)  # from pkg import settings
    return (record, rest.lstrip(".")) if record and rest.lstrip(".") else None


def reached(records: list[dict], sinks: dict[str, tuple[dict, list[dict]]]) -> dict[str, dict[int, str]]:
    """{path: {object id: "train.py:12 (Tuner)"}} for the exports of the files given that
    another of them hands to RLlib. `sinks` holds, per importing file, its imports by local
    name and the imported names its RLlib calls take as a config (ConfigDicts.imported_sinks)."""
    modules = _module_files(records)
    by_path = {r["path"]: r for r in records}
    out: dict[str, dict[int, str]] = {}
    for importer, (imports, found) in sinks.items():
        for sink in found:
            text = sink["name"]
            call = text.endswith("()")
            dotted = text[:-2] if call else text
            local, _, attr = dotted.partition(".")
            imp = imports.get(local)
            if imp is None:
                continue
            rest = (f".{attr}" if attr else "") + ("()" if call else "")
            if imp["name"] is None:
                rest = rest.lstrip(".")
            target = _defining(imp, rest, importer, modules, by_path)
            if target is None:
                continue
            record, name = target
            exports = (record.get("python") or {}).get("exports") or {}
            where = f"{importer}:{sink['line']}" + (f" ({sink['call']})" if sink.get("call") else "")
            for index in exports.get(name, []):
                out.setdefault(record["path"], {}).setdefault(index, where)
    return out
