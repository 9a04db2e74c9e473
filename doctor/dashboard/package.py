"""The package the dashboard path ships to the cluster: the cluster side of the tree and
what it imports, nothing else.

That is every module of rldoctor.cluster (the driver side that joins the cluster),
rldoctor.node (what is pickled by value onto the nodes) and rldoctor.job (the job's entry
point), except smoke-train's driver and trainer (rldoctor.cluster.smoke, rldoctor.node.smoke:
the job never runs them), plus the stdlib-only shared modules they import (snapshot, errors,
redact, metric_numbers, rllib_roles, the bundle's stdlib-only format modules, ...). No
checks, reports, pipeline, CLI, HTTP client or bundle writing: tests/test_layering.py keeps
the cluster side from importing them, and tests/test_dashboard_units.py fails when one lands
in the zip. So its hash changes only when cluster-side code (or a module it imports) does.

The files are found by following `rldoctor.*` imports (function-level ones too) from those
folders; the zip is byte-for-byte the same for the same sources (fixed timestamps, sorted
names), so its name `_ray_pkg_<sha1>.zip` says whether the cluster already holds it. Ray
unpacks a `gcs://` py_modules zip as is, so `rldoctor/` is the zip's top folder.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from rldoctor.cache import cache_dir
from rldoctor.dashboard import shipped_source
from rldoctor.errors import RldoctorError
from rldoctor.safe_write import SHARED, write_file

FOLDERS = ("cluster", "node", "job")  # the cluster side: shipped whole, with what it imports
NOT_SHIPPED = ("rldoctor.cluster.smoke", "rldoctor.node.smoke")  # smoke-train runs them from the client
ROOTS = ("rldoctor.job.main",)
_ZIP_TIME = (2020, 1, 1, 0, 0, 0)


def _source_of(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


# `import a.b, c` and `from x import (y, z)` (parenthesised over lines too), anywhere in a
# file: function-level imports count. Only names matter here, so a regular expression over
# the text does what a syntax tree would, in a tenth of the time (the package is built on
# every run of the dashboard path).
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w. \t,]+)", re.M)
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)", re.M)


def _imported(path: Path, package: str) -> set[str]:
    """Every module named by an import in `path` (function-level imports included)."""
    text = path.read_text(encoding="utf-8")
    names: set[str] = set()
    for match in _IMPORT.finditer(text):
        names.update(part.split()[0] for part in match.group(1).split(",") if part.strip())
    for match in _FROM.finditer(text):
        module, imported = match.group(1), match.group(2)
        level = len(module) - len(module.lstrip("."))
        if level:  # relative: resolve against the importing package
            base = package.rsplit(".", level - 1)[0] if level > 1 else package
            module = f"{base}.{module[level:]}" if module[level:] else base
        names.add(module)
        for alias in imported.strip("()").replace("\\", " ").split(","):
            alias = alias.split("#")[0].split()
            if alias:
                names.add(f"{module}.{alias[0]}")
    return names


def shipped_modules() -> dict[str, Path]:
    """{module name: source file} of the cluster side and what it imports from rldoctor."""
    found: dict[str, Path] = {}
    todo = list(ROOTS)
    for folder in FOLDERS:
        folder_dir = _source_of(f"rldoctor.{folder}").parent
        todo += [f"rldoctor.{folder}.{p.stem}" for p in sorted(folder_dir.glob("*.py"))
                 if p.stem != "__init__" and f"rldoctor.{folder}.{p.stem}" not in NOT_SHIPPED]
    while todo:
        name = todo.pop()
        if name in found or name in NOT_SHIPPED or not (name == "rldoctor" or name.startswith("rldoctor.")):
            continue
        try:
            path = _source_of(name)
        except (ImportError, ValueError):
            path = None
        if path is None:
            continue  # `from rldoctor.x import name` also names x.name, which may be an attribute
        found[name] = path
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages
        todo.extend(_imported(path, package))
    return found


def archive_name(module: str, path: Path) -> str:
    return "/".join(module.split(".")) + ("/__init__.py" if path.name == "__init__.py" else ".py")


@dataclass
class Package:
    data: bytes
    sha1: str
    modules: list[str]

    @property
    def name(self) -> str:
        return f"_ray_pkg_{self.sha1}.zip"

    @property
    def uri(self) -> str:
        return f"gcs://{self.name}"


def _members(modules: dict[str, Path]) -> list[tuple[str, bytes]]:
    return sorted((archive_name(m, p), p.read_bytes()) for m, p in modules.items())


def _digest(members: list[tuple[str, bytes]]) -> str:
    digest = hashlib.sha1()
    for name, data in members:
        digest.update(name.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


def _zipped(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data, compresslevel=9)  # a ZipInfo of its own keeps zlib's 6
    return buffer.getvalue()


def _this_module():
    import sys

    return sys.modules[__name__]


def build() -> Package:
    """The package of the sources installed here. Stripping them (shipped_source) takes
    about 0.3 s, so the zip is kept in rldoctor's cache under the digest of the sources it
    was made from: later runs with the same sources read it back."""
    modules = shipped_modules()
    members = _members(modules)
    cache = cache_dir() / "packages"
    # The way they are stripped is part of what the zip is made from: a new stripper
    # (this module or shipped_source) never reads back a zip the old one made.
    makers = [(m.__name__, Path(m.__file__).read_bytes()) for m in (shipped_source, _this_module())]
    source_digest = _digest(members + makers)
    for kept in sorted(cache.glob(f"{source_digest}-*.zip")) if cache.is_dir() else ():
        try:
            return Package(data=kept.read_bytes(), sha1=kept.stem.split("-", 1)[1],
                           modules=sorted(modules))
        except OSError:
            break
    stripped = [(name, shipped_source.shipped(data.decode("utf-8")).encode("utf-8"))
                for name, data in members]
    pkg = Package(data=_zipped(stripped), sha1=_digest(stripped), modules=sorted(modules))
    try:
        cache.mkdir(parents=True, exist_ok=True)
        for old in cache.glob("*.zip"):  # one package per rldoctor install is enough
            old.unlink(missing_ok=True)
        write_file(str(cache / f"{source_digest}-{pkg.sha1}.zip"), pkg.data, what="", mode=SHARED)
    except (OSError, RldoctorError):
        pass  # a cache that cannot be written is not kept
    return pkg
