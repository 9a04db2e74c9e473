"""docs/architecture.md's module map, written from the code: every module of doctor/ and checks/
with where it runs and the first sentence of its docstring.

The map sits between two marker lines in docs/architecture.md; tests/test_module_map.py keeps
it equal to what this writes. After adding, moving or redescribing a module:

    .venv/bin/python tests/module_map.py --update

Where it runs, by folder (tests/test_layering.py keeps the arrows): `cluster` for
doctor/cluster/, node/ and job/ (shipped to the cluster), `shared` for the stdlib-only modules
the cluster side imports, `client` for the rest.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- module map: written by `python tests/module_map.py --update`; do not edit by hand -->"
END = "<!-- end of the module map -->"
WIDTH = 100


def _layering():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import test_layering

    return test_layering


def first_sentence(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    match = re.match(r"(.+?[.:;])(?:\s|$)", paragraph)
    return (match.group(1) if match else paragraph).rstrip(":;")


def _wrap(prefix: str, text: str) -> list[str]:
    lines, line = [], prefix
    for word in text.split():
        if len(line) + 1 + len(word) > WIDTH and line.strip():
            lines.append(line)
            line = " " * len(prefix) + word
        else:
            line = f"{line} {word}" if line.strip() else prefix + word
    lines.append(line)
    return lines


def text(root: Path = ROOT) -> str:
    layering = _layering()
    mods = layering.modules(root)
    by_folder: dict[Path, list[tuple[str, Path]]] = {}
    for name, path in mods.items():
        by_folder.setdefault(path.parent, []).append((name, path))
    out = [BEGIN, "", "    side     module"]
    for folder in sorted(by_folder, key=lambda p: p.relative_to(root).as_posix()):
        rel = folder.relative_to(root).as_posix() + "/"
        out.append("")
        for name, path in sorted(by_folder[folder], key=lambda m: (m[1].name != "__init__.py", m[1].name)):
            if layering._within(name, layering.CLUSTER_SIDE):
                side = "cluster"
            elif name in layering.SHARED:
                side = "shared"
            else:
                side = "client"
            shown = rel if path.name == "__init__.py" else "  " + path.name
            out += _wrap(f"    {side:<8} {shown:<28} ", first_sentence(path))
    out += ["", END]
    return "\n".join(out)


def current(doc: str) -> str:
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    return doc[start:end]


def update() -> None:
    doc = DOC.read_text(encoding="utf-8")
    DOC.write_text(doc.replace(current(doc), text()), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        print("usage: python tests/module_map.py --update", file=sys.stderr)
        raise SystemExit(2)
    update()
    print(f"the module map in {DOC.relative_to(ROOT)} is written; review `git diff docs`")
