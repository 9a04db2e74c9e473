"""Facts about one Python source, read from its AST (the code is never run).

`python_facts(text)` returns plain JSON-able data for the lint rules:

- `calls`: every call, with the dotted name it calls (`tune.run`), the method
  (`training`), the method chain it belongs to and that chain's root
  (`PPOConfig()` or the name `config`), positional and keyword arguments with
  their literal values where they are literals, the name a chain is assigned
  to, and the call it is an argument of (`RunConfig(...)` inside `Tuner(...)`);
- `dicts`: dict literals with string keys, where they flow (argument of which
  call, bound to which name, nested under which key);
- `exports` (the dict objects of each module-level name and of what each module-level
  function returns, as `name()`: what another module of the files given imports),
- `imports`, `attributes`, `subscripts` (string keys), `assignments`,
  `classes` (bases, methods and their parameters), `free_names` (names used but
  never bound in the file), `ray_name_loads` (uses of names imported from ray),
  `env_strings` (string literals that look like Ray environment variable names);
- for each fact the enclosing `if` conditions (`{"test": "args.old_api_stack",
  "positive": False}`), the scope (`Class.method`) and whether it sits in a
  `try` that catches ImportError.

Spans are `[line, col, end_line, end_col]`: lines from 1, columns from 0 in
characters, as `ast` gives them.
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Any

from rldoctor.lint.value_flow import dotted, value_flow

ENV_NAME_RE = re.compile(r"^RAY_[A-Za-z0-9_]+$")
_MAX_SOURCE = 240
_BUILTINS = set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__builtins__",
                                  "get_ipython", "display"}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


class NotALiteral(Exception):
    pass


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, float) and value != value:  # NaN
            raise NotALiteral
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63:
            raise NotALiteral
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, (str, int, float, bool)) for k in value):
            raise NotALiteral
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted((_jsonable(v) for v in value), key=repr)
    raise NotALiteral


_ARITH = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
          ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
          ast.FloorDiv: lambda a, b: a // b}


def literal(node: ast.AST) -> Any:
    """The value of a literal expression (numbers folded: `1024 * 1024`), else NotALiteral."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        left, right = literal(node.left), literal(node.right)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
            raise NotALiteral
        try:
            return _jsonable(_ARITH[type(node.op)](left, right))
        except (ZeroDivisionError, OverflowError):
            raise NotALiteral from None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        left, right = literal(node.left), literal(node.right)
        if isinstance(left, int) and isinstance(right, int) and 0 <= right <= 64 and abs(left) < 2**16:
            return _jsonable(left ** right)
        raise NotALiteral
    try:
        return _jsonable(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise NotALiteral from None


class _Facts(ast.NodeVisitor):
    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines()
        self._bytes = [line.encode("utf-8") for line in self.lines]
        self.calls: list[dict] = []
        self.dicts: list[dict] = []
        self.imports: list[dict] = []
        self.attributes: list[dict] = []
        self.subscripts: list[dict] = []
        self.assignments: list[dict] = []
        self.classes: list[dict] = []
        self.env_strings: list[dict] = []
        self.returns: list[dict] = []
        self.functions: list[str] = []
        self.signatures: dict[str, dict] = {}  # function name -> its parameters (the first def)
        self._loads: list[tuple[str, list[int]]] = []
        self._bound: set[str] = set()
        self._conditions: list[dict] = []
        self._scope: list[str] = []
        self._guarded = 0
        self._call_ids: dict[int, int] = {}
        self._dict_ids: dict[int, int] = {}
        self._chain_parent: dict[int, ast.Call] = {}
        self._func_nodes: set[int] = set()
        self._pending_store: dict[int, dict] = {}
        self._from_ray: set[str] = set()  # names bound by `import ray...` / `from ray... import`
        self._decorates: dict[int, str] = {}
        self._call_args: dict[int, dict] = {}  # a call used as an argument -> {call, kw, pos}
        self._call_nodes: list[ast.Call] = []

    # -- helpers -----------------------------------------------------------------------------
    def _col(self, line: int, byte_col: int) -> int:
        """ast columns count UTF-8 bytes; locations count characters."""
        raw = self._bytes[line - 1] if 0 < line <= len(self._bytes) else b""
        if raw.isascii():
            return byte_col
        return len(raw[:byte_col].decode("utf-8", errors="replace"))

    def _span(self, node: ast.AST) -> list[int]:
        line = node.lineno
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        end_col = node.col_offset if end_col is None else end_col
        return [line, self._col(line, node.col_offset), end_line, self._col(end_line, end_col)]

    def _source(self, node: ast.AST) -> str:
        line, end_line = node.lineno, getattr(node, "end_lineno", None) or node.lineno
        col, end_col = node.col_offset, getattr(node, "end_col_offset", None) or 0
        if line == end_line:
            raw = self._bytes[line - 1][col:end_col] if line <= len(self._bytes) else b""
        else:
            parts = [self._bytes[line - 1][col:]] + self._bytes[line:end_line - 1] + \
                    [self._bytes[end_line - 1][:end_col]]
            raw = b"\n".join(parts)
        if len(raw) > _MAX_SOURCE * 4:
            raw = raw[:_MAX_SOURCE * 4]
        segment = raw.decode("utf-8", errors="replace")
        return segment if len(segment) <= _MAX_SOURCE else segment[:_MAX_SOURCE] + "..."

    def _tail_span(self, node: ast.AST, name: str) -> list[int]:
        """The span of the last `name` characters of `node` (an attribute's name)."""
        end_line = getattr(node, "end_lineno", None) or node.lineno
        end_col = self._col(end_line, getattr(node, "end_col_offset", None) or 0)
        return [end_line, max(end_col - len(name), 0), end_line, end_col]

    def _context(self) -> dict:
        return {"conditions": list(self._conditions), "scope": ".".join(self._scope) or "<module>"}

    def _value(self, node: ast.AST) -> dict:
        out: dict[str, Any] = {"span": self._span(node), "source": self._source(node)}
        try:
            out["value"], out["literal"] = literal(node), True
        except NotALiteral:
            out["value"], out["literal"] = None, False
        if isinstance(node, ast.Name):
            out["name"] = node.id
        elif isinstance(node, ast.Attribute):
            out["name"] = dotted(node)
        if isinstance(node, ast.Dict):
            out["dict"] = self._dict(node)
        if isinstance(node, ast.Lambda):
            out["signature"] = self._signature(node.args, self._span(node))
        if isinstance(node, ast.Call):
            out["call_func"] = dotted(node.func)
        return out

    def _dict(self, node: ast.Dict, parent: dict | None = None) -> int:
        if id(node) in self._dict_ids:  # met first as a plain value: the key it sits under is known now
            index = self._dict_ids[id(node)]
            if parent and self.dicts[index]["parent"] is None:
                self.dicts[index]["parent"] = parent
            return index
        index = len(self.dicts)
        self._dict_ids[id(node)] = index
        record: dict[str, Any] = {"id": index, "span": self._span(node), "keys": [], "bound_to": None,
                                  "parent": parent, "arg_of": None, **self._context()}
        self.dicts.append(record)
        for key, value in zip(node.keys, node.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            value_facts = self._value(value)
            value_facts.pop("dict", None)
            value_facts["value_span"] = value_facts.pop("span")
            entry = {"key": key.value, "span": self._span(key), **value_facts}
            if isinstance(value, ast.Dict):
                entry["dict"] = self._dict(value, {"dict": index, "key": key.value})
            record["keys"].append(entry)
        return index

    def _chain(self, call: ast.Call) -> tuple[int, str | None, str | None]:
        """(chain id, root, root call): `config` and `config.training` for `config.training().x()`,
        None and `PPOConfig` for `PPOConfig().training()`."""
        top = call
        while id(top) in self._chain_parent:
            top = self._chain_parent[id(top)]
        node = call
        while True:
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
                node = func.value
                continue
            root_call = dotted(func)
            root = dotted(func.value) if isinstance(func, ast.Attribute) else None
            break
        return id(top), root, root_call

    # -- visitors ----------------------------------------------------------------------------
    def visit_Module(self, node: ast.Module) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                func = sub.func
                self._func_nodes.add(id(func))
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
                    self._chain_parent[id(func.value)] = sub
        self.generic_visit(node)

    def _visit_branches(self, test_node: ast.AST, body: list, orelse: list) -> None:
        """Visit the branches of an `if` with the condition each runs under."""
        self.visit(test_node)
        test, positive = test_node, True
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, positive = test.operand, not positive
        source = self._source(test)
        self._conditions.append({"test": source, "positive": positive})
        for stmt in body:
            self.visit(stmt)
        self._conditions[-1] = {"test": source, "positive": not positive}
        for stmt in orelse:
            self.visit(stmt)
        self._conditions.pop()

    def visit_If(self, node: ast.If) -> None:
        self._visit_branches(node.test, node.body, node.orelse)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._visit_branches(node.test, [node.body], [node.orelse])

    def visit_Try(self, node: ast.Try) -> None:
        guards = any(self._catches_import_error(h) for h in node.handlers)
        self._guarded += guards
        for stmt in node.body:
            self.visit(stmt)
        self._guarded -= guards
        for part in (node.handlers, node.orelse, node.finalbody):
            for stmt in part:
                self.visit(stmt)

    visit_TryStar = visit_Try

    @staticmethod
    def _catches_import_error(handler: ast.excepthandler) -> bool:
        if handler.type is None:
            return True
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        return any((dotted(n) or "").split(".")[-1] in _IMPORT_ERRORS for n in names)

    def _signature(self, args: ast.arguments, span: list[int]) -> dict:
        """The positional parameters a call must fill (no default), and whether *args/**kwargs
        take the rest: what decides whether a callback fits the arguments Ray passes it."""
        positional = args.posonlyargs + args.args
        first_default = len(positional) - len(args.defaults)
        return {"span": span, "params": [p.arg for p in positional],
                "required": [p.arg for i, p in enumerate(positional) if i < first_default],
                "var_args": args.vararg is not None, "var_kwargs": args.kwarg is not None}

    def _visit_function(self, node) -> None:
        self._bound.add(node.name)
        self.functions.append(node.name)
        self.signatures.setdefault(node.name, self._signature(node.args, self._span(node)))
        for decorator in node.decorator_list:
            self._decorates[id(decorator)] = "function"
        self._scope.append(node.name)
        self._bind_arguments(node.args)
        self.generic_visit(node)
        self._scope.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def _bind_arguments(self, args: ast.arguments) -> None:
        """A function's or lambda's parameters are names bound in its body."""
        for a in args.posonlyargs + args.args + args.kwonlyargs:
            self._bound.add(a.arg)
        for a in (args.vararg, args.kwarg):
            if a is not None:
                self._bound.add(a.arg)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._bind_arguments(node.args)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bound.add(node.name)
        for decorator in node.decorator_list:
            self._decorates[id(decorator)] = "class"
        methods = []
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = stmt.args
                positional = a.posonlyargs + a.args
                first_default = len(positional) - len(a.defaults)
                methods.append({
                    "name": stmt.name, "span": self._span(stmt),
                    "params": [{"name": p.arg, "kind": "positional",
                                "default": i >= first_default, "span": self._span(p)}
                               for i, p in enumerate(positional)]
                    + [{"name": p.arg, "kind": "keyword", "default": d is not None, "span": self._span(p)}
                       for p, d in zip(a.kwonlyargs, a.kw_defaults)],
                    "kwargs": a.kwarg.arg if a.kwarg else None,
                    "varargs": a.vararg.arg if a.vararg else None,
                })
        self.classes.append({"name": node.name, "span": self._span(node),
                             "bases": [dotted(b) or self._source(b) for b in node.bases],
                             "methods": methods, **self._context()})
        self._scope.append(node.name)
        self.generic_visit(node)
        self._scope.pop()

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._bound.add((alias.asname or alias.name).split(".")[0])
            if alias.name.split(".")[0] == "ray":
                self._from_ray.add((alias.asname or alias.name).split(".")[0])
            self.imports.append({"module": alias.name, "name": None, "asname": alias.asname,
                                 "span": self._span(node), "module_span": self._span(alias), "name_span": None,
                                 "level": 0, "guarded": self._guarded > 0, **self._context()})

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        module_span = None
        if module and node.level == 0:
            line = self.lines[node.lineno - 1] if node.lineno - 1 < len(self.lines) else ""
            at = line.find(module, self._col(node.lineno, node.col_offset))
            if at >= 0:
                module_span = [node.lineno, at, node.lineno, at + len(module)]
        for alias in node.names:
            self._bound.add(alias.asname or alias.name)
            if module.split(".")[0] == "ray" and node.level == 0:
                self._from_ray.add(alias.asname or alias.name)
            start = self._col(alias.lineno, alias.col_offset)
            name_span = [alias.lineno, start, alias.lineno, start + len(alias.name)]
            self.imports.append({"module": module, "name": alias.name, "asname": alias.asname,
                                 "span": self._span(node), "module_span": module_span,
                                 "name_span": name_span, "level": node.level,
                                 "guarded": self._guarded > 0, **self._context()})

    def visit_Global(self, node) -> None:
        self._bound.update(node.names)

    visit_Nonlocal = visit_Global

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node) -> None:
        if node.name:
            self._bound.add(node.name)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._loads.append((node.id, self._span(node)))
        else:
            self._bound.add(node.id)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and len(node.value) < 200 and ENV_NAME_RE.match(node.value):
            self.env_strings.append({"value": node.value, "span": self._span(node), **self._context()})

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.attributes.append({
            "attr": node.attr, "receiver": dotted(node.value),
            "receiver_call": dotted(node.value.func) if isinstance(node.value, ast.Call) else None,
            "span": self._tail_span(node, node.attr),
            "ctx": type(node.ctx).__name__.lower(), "is_call_func": id(node) in self._func_nodes,
            **self._context()})
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            self.subscripts.append({
                "receiver": dotted(node.value), "key": key.value, "key_span": self._span(key),
                "receiver_call": dotted(node.value.func) if isinstance(node.value, ast.Call) else None,
                "receiver_source": self._source(node.value),
                "ctx": type(node.ctx).__name__.lower(), "span": self._span(node), **self._context()})
        self.generic_visit(node)

    def _assign(self, targets: list[ast.AST], value: ast.AST | None) -> None:
        if value is None:
            return
        for target in targets:
            name = dotted(target)
            if name is None:
                if isinstance(target, ast.Subscript):
                    self._subscript_store(target, value)
                continue
            record: dict[str, Any] = {"target": name, "line": target.lineno, "kind": "other",
                                      "value_source": self._source(value)[:120], **self._context()}
            if isinstance(value, ast.Dict):
                record.update(kind="dict", dict=self._dict(value))
                self.dicts[record["dict"]]["bound_to"] = name
            elif isinstance(value, ast.Call):
                record.update(kind="call", call_node=value)
            elif isinstance(value, (ast.Name, ast.Attribute)):
                record.update(kind="name", name=dotted(value))
            self.assignments.append(record)

    def _subscript_store(self, target: ast.Subscript, value: ast.AST) -> None:
        key = target.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            self._pending_store[id(target)] = self._value(value)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._pending_store = {}
        self._assign(node.targets, node.value)
        pending = self._pending_store
        stored = {}
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                stored[tuple(self._tail_span(target, target.attr))] = self._value(node.value)
        before_subs, before_attrs = len(self.subscripts), len(self.attributes)
        self.generic_visit(node)
        for record in self.subscripts[before_subs:]:
            for target in node.targets:
                if isinstance(target, ast.Subscript) and id(target) in pending and \
                        record["span"] == self._span(target):
                    record["stored"] = pending[id(target)]
        for record in self.attributes[before_attrs:]:
            if record["ctx"] == "store" and tuple(record["span"]) in stored:
                record["stored"] = {k: v for k, v in stored[tuple(record["span"])].items() if k != "dict"}

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._pending_store = {}
        self._assign([node.target], node.value)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        chain, root, root_call = self._chain(node)
        record: dict[str, Any] = {
            "id": len(self.calls), "func": dotted(func),
            "method": func.attr if isinstance(func, ast.Attribute) else None,
            "name": func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None),
            "receiver": dotted(func.value) if isinstance(func, ast.Attribute) else None,
            "receiver_source": self._source(func.value) if isinstance(func, ast.Attribute) else None,
            "chain": chain, "root": root, "root_call": root_call, "span": self._span(node),
            "args": [], "kwargs": [], "starargs": False, "assigned_to": None,
            "decorates": self._decorates.get(id(node)), "arg_of": self._call_args.get(id(node)),
            **self._context()}
        if isinstance(func, ast.Attribute):
            record["name_span"] = self._tail_span(func, func.attr)
        else:
            record["name_span"] = self._span(func)
        self._call_ids[id(node)] = record["id"]
        self.calls.append(record)
        self._call_nodes.append(node)
        for i, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                record["starargs"] = True
                continue
            value = self._value(arg)
            if "dict" in value:
                self.dicts[value["dict"]]["arg_of"] = {"call": record["id"], "kw": None, "pos": i}
            if isinstance(arg, ast.Call):
                self._call_args[id(arg)] = {"call": record["id"], "kw": None, "pos": i}
            record["args"].append(value)
        for kw in node.keywords:
            if kw.arg is None:
                record["starargs"] = True
                continue
            value = self._value(kw.value)
            value["value_span"] = value.pop("span")
            value["name"], value["ref"] = kw.arg, value.get("name")
            start = self._col(kw.lineno, kw.col_offset)
            value["span"] = [kw.lineno, start, kw.lineno, start + len(kw.arg)]
            if "dict" in value:
                self.dicts[value["dict"]]["arg_of"] = {"call": record["id"], "kw": kw.arg, "pos": None}
            if isinstance(kw.value, ast.Call):
                self._call_args[id(kw.value)] = {"call": record["id"], "kw": kw.arg, "pos": None}
            record["kwargs"].append(value)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.returns.append({"scope": ".".join(self._scope) or "<module>", "name": dotted(node.value),
                                 "call_node": node.value if isinstance(node.value, ast.Call) else None})
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        self._dict(node)
        self.generic_visit(node)

    # -- result ------------------------------------------------------------------------------
    def add_flow(self, flow) -> None:
        """Each call argument's dict objects and literal values (see rldoctor.lint.value_flow)."""
        for record, node in zip(self.calls, self._call_nodes):
            args = [a for a in node.args if not isinstance(a, ast.Starred)]
            kws = [k for k in node.keywords if k.arg is not None]
            for facts, arg in list(zip(record["args"], args)) + list(zip(record["kwargs"], [k.value for k in kws])):
                facts["objects"] = flow.objects_of(arg)
                values = flow.values_of(arg)
                if values is not None:
                    facts["values"], facts["values_complete"] = values["values"], values["complete"]
        self.objects = flow.to_json()
        self.exports = flow.exports()
        self.flow_notes = list(flow.notes)

    def result(self) -> dict:
        chains: dict[int, int] = {}
        for record in self.calls:  # small stable chain numbers instead of object ids
            record["chain"] = chains.setdefault(record["chain"], len(chains))
        for record in self.assignments:
            node = record.pop("call_node", None)
            if node is not None and id(node) in self._call_ids:
                call = self.calls[self._call_ids[id(node)]]
                call["assigned_to"] = record["target"]
                record["call"] = call["id"]
                record["chain"] = call["chain"]
        for record in self.returns:
            node = record.pop("call_node", None)
            record["call"] = self._call_ids.get(id(node)) if node is not None else None
        free = [{"name": name, "span": where} for name, where in self._loads
                if name not in self._bound and name not in _BUILTINS]
        from_ray = [{"name": name, "span": where} for name, where in self._loads
                    if name in self._from_ray]
        return {"calls": self.calls, "dicts": self.dicts, "imports": self.imports,
                "attributes": self.attributes, "subscripts": self.subscripts,
                "assignments": self.assignments, "classes": self.classes,
                "free_names": free, "ray_name_loads": from_ray, "env_strings": self.env_strings,
                "objects": getattr(self, "objects", []), "exports": getattr(self, "exports", {}),
                "returns": self.returns,
                "functions": sorted(set(self.functions)), "signatures": self.signatures,
                "notes": getattr(self, "flow_notes", [])}


class PythonSyntaxError(Exception):
    def __init__(self, message: str, line: int = 0, column: int = 0):
        super().__init__(message)
        self.line, self.column = line, column


def parse(text: str, filename: str = "<lint>") -> ast.Module:
    try:
        return ast.parse(text, filename=filename)
    except SyntaxError as exc:
        raise PythonSyntaxError(f"syntax error: {exc.msg}", exc.lineno or 0,
                                (exc.offset or 1) - 1) from None
    except (RecursionError, MemoryError):
        raise PythonSyntaxError("too deeply nested to parse") from None
    except ValueError as exc:  # e.g. source code string cannot contain null bytes
        raise PythonSyntaxError(f"cannot parse: {exc}") from None


def python_facts(text: str, filename: str = "<lint>") -> dict:
    """Facts about `text`; raises PythonSyntaxError when it does not parse."""
    tree = parse(text, filename)
    visitor = _Facts(text)
    try:
        visitor.visit(tree)
        visitor.add_flow(value_flow(tree, visitor._span, visitor._value))
    except RecursionError:
        raise PythonSyntaxError("too deeply nested to analyse") from None
    return visitor.result()
