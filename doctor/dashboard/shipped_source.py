"""What a module loses on its way into the shipped package: its docstrings, its comments and
the annotations of its functions' parameters and returns.

The cluster only runs the code, so the package carries none of the prose around it (nor the
annotations: every module defers them with `from __future__ import annotations`, and nothing
on the cluster side reads a function's; a dataclass's fields keep theirs). Every
line keeps its number (a docstring or a comment becomes an empty line, a body that held only
a docstring becomes `pass`), so a traceback from the cluster points at the same line of the
source in the repository. And the package's hash is taken over what remains: editing a
comment or a docstring does not make the cluster upload a new package.
"""

from __future__ import annotations

import ast
import io
import tokenize

_WITH_DOCSTRING = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _docstring(node: ast.AST) -> ast.Expr | None:
    body = getattr(node, "body", None)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[0]
    return None


def _annotation_spans(tree: ast.AST, lines: list[str]) -> dict[int, list[tuple[int, int]]]:
    """{row: [(start, end) byte columns]} of `: annotation` and ` -> annotation` in every
    function signature, where the annotation sits on one line with its parameter."""
    spans: dict[int, list[tuple[int, int]]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]:
            note = arg.annotation
            if note is not None and note.lineno == note.end_lineno == arg.lineno:
                spans.setdefault(arg.lineno - 1, []).append(
                    (arg.col_offset + len(arg.arg.encode()), note.end_col_offset))
        note = node.returns
        if note is not None and note.lineno == note.end_lineno:
            line = lines[note.lineno - 1].encode()
            arrow = line.rfind(b"->", 0, note.col_offset)
            if arrow >= 0 and not line[arrow + 2:note.col_offset].strip():
                spans.setdefault(note.lineno - 1, []).append(
                    (len(line[:arrow].rstrip()), note.end_col_offset))
    return spans


def _without_annotations(text: str) -> str:
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    for row, cuts in _annotation_spans(tree, lines).items():
        line = lines[row].encode()
        for start, end in sorted(cuts, reverse=True):
            line = line[:start] + line[end:]
        lines[row] = line.decode()
    out = "".join(lines)
    ast.parse(out)  # a cut that broke the syntax raises: the caller keeps the annotations
    return out


def strip(text: str) -> str:
    """`text` without docstrings, comments and signature annotations, on the same lines.
    Text that is not valid Python is returned as it is (the cluster's own import then says
    what is wrong)."""
    prose_free = _strip_prose(text)
    try:
        return _without_annotations(prose_free)
    except (SyntaxError, ValueError, UnicodeError):
        return prose_free


def _strip_prose(text: str) -> str:
    try:
        tree = ast.parse(text)
        comments = [tok.start for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                    if tok.type == tokenize.COMMENT]
    except (SyntaxError, tokenize.TokenError, ValueError):
        return text
    lines = text.splitlines(keepends=True)
    for row, col in comments:
        lines[row - 1] = lines[row - 1][:col].rstrip() + "\n"
    for node in ast.walk(tree):
        if not isinstance(node, _WITH_DOCSTRING) or (doc := _docstring(node)) is None:
            continue
        first, last = doc.lineno - 1, doc.end_lineno - 1
        if lines[first][:doc.col_offset].strip() or lines[last][doc.end_col_offset:].strip():
            continue  # shares a line with code (`def f(): "doc"`): left as it is
        for row in range(first, last + 1):
            lines[row] = "\n"
        if len(node.body) == 1:
            lines[first] = " " * doc.col_offset + "pass\n"
    return "".join(line if line.strip() else "\n" for line in lines)
