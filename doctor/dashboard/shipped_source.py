"""What a module loses on its way into the shipped package: its docstrings, its comments,
the annotations of its functions' parameters and returns, and three of every four spaces of
its indentation.

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


def shipped(text: str) -> str:
    """`text` as it travels to the cluster: stripped, then reindented."""
    return reindent(strip(text))


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


def reindent(text: str) -> str:
    """`text` with one space per block level instead of four, on the same lines: the package
    is deflated one module at a time, and leading spaces are most of what the prose left.
    A continuation line gets one more space than its statement; a line that starts inside a
    string is left as it is. Text whose syntax tree would change is returned as it is."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        before = ast.dump(ast.parse(text))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return text
    lines = text.splitlines(keepends=True)
    depth, in_statement, fstrings = 0, False, []  # fstrings: the rows the open f-strings start on
    levels: dict[int, int] = {}  # row -> spaces for the rows that may move
    inside: set[int] = set()  # rows that start inside a string
    for tok in tokens:
        kind = tok.type
        if kind == tokenize.INDENT:
            depth += 1
            continue
        if kind == tokenize.DEDENT:
            depth -= 1
            continue
        row = tok.start[0] - 1
        if kind not in (tokenize.NL, tokenize.NEWLINE) and row not in levels and not fstrings:
            levels[row] = depth + (1 if in_statement else 0)
        if tok.end[0] > tok.start[0] and kind not in (tokenize.NL, tokenize.NEWLINE):
            inside.update(range(tok.start[0], tok.end[0]))
        name = tokenize.tok_name.get(kind, "")
        if name == "FSTRING_START":  # Python 3.12 and later tokenize inside f-strings
            fstrings.append(row)
        elif name == "FSTRING_END":
            inside.update(range(fstrings.pop() + 1, tok.end[0]))
        if kind == tokenize.NEWLINE:
            in_statement = False
        elif kind not in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
            in_statement = True
    for row, spaces in levels.items():
        if row not in inside and row < len(lines):
            lines[row] = " " * spaces + lines[row].lstrip(" \t")
    out = "".join(lines)
    try:
        return out if ast.dump(ast.parse(out)) == before else text
    except SyntaxError:
        return text
