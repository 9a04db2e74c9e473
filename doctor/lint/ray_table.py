"""What lint reads of the pinned Ray, as a table shipped with rldoctor (for the client-only install).

`rldoctor lint` reads two things of the installed Ray's own files: the settings it knows
(`rldoctor.lint.ray_names`: `_system_config` keys and `RAY_` names, for RLD803) and its
modules and the names each could bind (`rldoctor.lint.ray_modules`, for RLD801's imports
that are gone). A client installed without Ray (`pip install rldoctor-ray`) reads the same
facts from `ray_table.json.gz`, generated from the pinned Ray by this module:

    python -m rldoctor.lint.ray_table          # rewrite doctor/lint/ray_table.json.gz

Every module of the installed `ray/` (a directory, a `.py` file or an extension module) is
one entry: whether its names can be told from its text, its @Deprecated(error=True)
members, and the names a line of it could bind (`ray_modules.bindable_names`). The table
holds no code of Ray's, only names. tests/test_ray_table.py fails when the shipped table
disagrees with the installed Ray.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from pathlib import Path

TABLE_PATH = Path(__file__).with_name("ray_table.json.gz")
TABLE_VERSION = 1
_EXTENSIONS = (".so", ".pyd")
_SKIP_DIRS = {"__pycache__"}


def note(ray_build: dict) -> str | None:
    """The report's note when lint read the shipped table instead of an installed Ray."""
    if not ray_build.get("table"):
        return None
    from rldoctor.install import NO_RAY_HERE

    return (f"{NO_RAY_HERE}: RLD801 and RLD803 read the names of Ray {ray_build.get('version')} "
            "from the table shipped with rldoctor; pip install 'rldoctor-ray[cluster]' adds Ray")


class NoTable(Exception):
    """The shipped table is missing or unreadable."""


def module_names(root: Path) -> list[str]:
    """Every `ray.*` module `ray_modules` would find in the installed Ray, sorted."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        parts = Path(dirpath).relative_to(root).parts
        base = ".".join(("ray",) + parts)
        found.add(base)
        for name in filenames:
            if name.endswith(".py") and name != "__init__.py":
                found.add(f"{base}.{name[:-3]}")
            elif os.path.splitext(name)[1] in _EXTENSIONS:
                found.add(f"{base}.{name.split('.')[0]}")
    return sorted(found)


def build(root: Path) -> dict:
    """The table of the Ray installed at `root` (reads every module; tens of seconds)."""
    from rldoctor.lint import ray_modules
    from rldoctor.lint.ray_names import _scan, ray_build

    modules = {}
    for module in module_names(root):
        entry = ray_modules._read(root, module)
        row: dict = {"knowable": bool(entry.get("knowable"))}
        if entry.get("deprecated"):
            row["deprecated"] = entry["deprecated"]
        if row["knowable"]:
            _, text = ray_modules._text(root, module)
            row["names"] = sorted(ray_modules.bindable_names(text or ""))
        modules[module] = row
    return {"table_version": TABLE_VERSION, **ray_build(root), **_scan(root), "modules": modules}


def write(table: dict, path: Path = TABLE_PATH) -> None:
    data = json.dumps(table, sort_keys=True, separators=(",", ":")).encode()
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))


@functools.lru_cache(maxsize=1)
def load(path: Path = TABLE_PATH) -> dict:
    try:
        table = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError) as exc:
        raise NoTable(f"cannot read the Ray table shipped with rldoctor ({path.name}): {exc}") from None
    if table.get("table_version") != TABLE_VERSION:
        raise NoTable(f"the Ray table {path.name} is of another rldoctor (version "
                      f"{table.get('table_version')})")
    return table


def build_info() -> dict:
    """`ray_build` of the lint section when Ray is not installed: the table's Ray."""
    table = load()
    return {"version": table["version"], "commit": table["commit"], "table": True}


def known_names() -> dict:
    """What `ray_names.known_names` answers, from the table."""
    table = load()
    return {"version": table["version"], "commit": table["commit"],
            "system_config_keys": table["system_config_keys"], "env_names": table["env_names"],
            "cached": True, "table": True}


def module_index(wanted: dict[str, set[str]]) -> dict:
    """What `ray_modules.module_index` answers, from the table."""
    modules = load()["modules"]
    names_of: dict[str, frozenset] = {}
    out: dict[str, dict] = {}
    for module in sorted(wanted):
        if module != "ray" and not module.startswith("ray."):
            continue
        row = modules.get(module)
        answer: dict = {"exists": row is not None, "deprecated": {}}
        if row is not None:
            names = {}
            for name in sorted(wanted[module]):
                if f"{module}.{name}" in modules:
                    names[name] = True
                elif row["knowable"]:
                    if module not in names_of:
                        names_of[module] = frozenset(row.get("names") or ())
                    names[name] = name in names_of[module]
            answer["names"] = names
            answer["deprecated"] = {n: w for n, w in (row.get("deprecated") or {}).items()
                                    if n in wanted[module]}
        out[module] = answer
    return out


def main() -> None:
    from rldoctor.lint.ray_names import ray_root

    table = build(ray_root())
    write(table)
    print(f"{TABLE_PATH}: Ray {table['version']} ({table['commit'][:12]}), "
          f"{len(table['modules'])} modules, {len(table['system_config_keys'])} _system_config keys, "
          f"{len(table['env_names'])} RAY_ names, {TABLE_PATH.stat().st_size} bytes")


if __name__ == "__main__":
    main()
