"""The code cells of a Jupyter notebook as one Python source, with a way back to the cells.

Cells are joined in order, so a name defined in cell 2 is known in cell 5.
IPython lines (`%magic`, `!shell`, `%%cell magic` cells) become `pass` with the
same indentation, and the lines a trailing backslash continues them on become
blank, so line numbers stay put. Locations are reported as
`path:cell N:line:col`, N counting every cell of the notebook from 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rldoctor import jsonread

_IPY_LINE = re.compile(r"^(\s*)(%|!|\?)")


class NotebookError(Exception):
    pass


@dataclass
class Notebook:
    source: str  # the joined code
    cells: list[dict] = field(default_factory=list)  # {"cell": N, "first_line": L, "lines": k}
    document: dict = field(default_factory=dict)

    def where(self, line: int) -> tuple[int, int]:
        """(cell number, line within the cell) for a line of the joined source."""
        for cell in self.cells:
            if cell["first_line"] <= line < cell["first_line"] + cell["lines"]:
                return cell["cell"], line - cell["first_line"] + 1
        return 0, line


def _cell_text(cell: dict, number: int) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise NotebookError(f"not a notebook: the source of cell {number} is not text")


def _python_lines(text: str) -> list[str]:
    lines = text.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        return ["pass"] + [""] * (len(lines) - 1)  # a cell magic: the whole cell is not Python
    out = []
    continued = None  # the indentation of a `!shell \` or `%magic \` line that goes on
    for line in lines:
        if continued is not None:
            out.append("")
            continued = continued if line.rstrip().endswith("\\") else None
            continue
        match = _IPY_LINE.match(line)
        out.append(f"{match.group(1)}pass" if match else line)
        if match and line.rstrip().endswith("\\"):
            continued = match.group(1)
    return out


def read_notebook(text: str) -> Notebook:
    try:
        document = jsonread.loads(text)
    except ValueError as exc:  # broken, nested too deep, or a number of thousands of digits
        raise NotebookError(f"not a notebook: invalid JSON ({jsonread.problem(exc)})") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("not a notebook: no \"cells\" list")
    lines: list[str] = []
    cells = []
    for number, cell in enumerate(document["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        code = _python_lines(_cell_text(cell, number))
        if not code:
            continue
        cells.append({"cell": number, "first_line": len(lines) + 1, "lines": len(code)})
        lines.extend(code)
    return Notebook(source="\n".join(lines) + ("\n" if lines else ""), cells=cells, document=document)


def cell_sources(document: dict) -> dict[int, list[str]]:
    """Cell number -> its source lines (with line ends), as the notebook stores them."""
    out = {}
    for number, cell in enumerate(document.get("cells") or [], start=1):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            out[number] = _cell_text(cell, number).splitlines(keepends=True)
    return out
