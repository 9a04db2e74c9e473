"""What a module loses on its way into the shipped package: its docstrings and comments.

The cluster only runs the code, so the package carries none of the prose around it. Every
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


def strip(text: str) -> str:
    """`text` without docstrings and comments, on the same lines. Text that is not valid
    Python is returned as it is (the cluster's own import then says what is wrong)."""
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
