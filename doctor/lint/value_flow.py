"""Where dicts and literal values go inside one Python file (read from its AST, never run).

Configs are rarely one literal handed to `tune.run`: they are built over several
statements, copied, updated, filled in by helper functions and passed on through
variables. `ValueFlow` follows them, bounded to the one file and without importing
or executing anything:

- a *dict object* is made by a dict literal or a `dict(...)` call; the keys written
  into it are recorded where they are written: the literal's own keys, keyword
  arguments of `dict()`, `x["k"] = v` (nested: `x["model"]["fcnet_hiddens"] = v`
  records `model` on `x` with the path below it), `x.update({...})`,
  `x.update(k=v)`, `x.setdefault("k", v)`, `x |= {...}`;
- names are bound to the objects of every value assigned to them in their scope
  (flow-insensitive: all assignments count); `copy()`, `deepcopy()`, `dict(x)`,
  `{**x}` and `merge_dicts(a, b)` keep the objects they copy (a key written into a
  copy is judged where it is written); `self.x` is one name per class;
- local functions return the objects of their `return` statements, and their
  parameters are bound to the objects passed at their call sites;
- `{"a": x, "b": y}[key]`, `d.get(key)` with a computed key and `a if c else b`
  give every candidate.

Names also get the set of literal values assigned to them (`trainable = "PPO"`,
`num_gpus = 1 if cuda else 0`), with `complete` False when one assignment is not a
literal (a parameter, a call).

The result is JSON-able: `objects` (one record per dict object: its keys with
spans, the objects stored under each key, the objects it includes), and for each
call argument the ids of the objects it may be (`objects`) and, for a name, its
literal values (`values`, `values_complete`).
"""

from __future__ import annotations

import ast
from typing import Callable

_COPIES = {"copy", "deepcopy", "copy.copy", "copy.deepcopy", "dict"}
_MERGES = {"merge_dicts", "deep_update"}
_MAX_PASSES = 4
# The most dict objects one name may stand for. A name rebound over and over from itself
# (`c = {**c, "xN": 1}` a thousand times) would otherwise hold every one of them, and each
# rebinding copy them all: quadratic in time and memory. Past this the name is not followed
# (a note says so) and what flows through it is not judged.
_MAX_OBJECTS_PER_NAME = 64
_MAX_VALUES = 8
_UNKNOWN = object()


def _const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def dotted(node: ast.AST | None) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None (python_facts reads names with it too)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _project_import_names(body: list[ast.stmt]) -> set[str]:
    """The local names the imports of a module bind, but Ray's (statements only: the bodies of
    compound statements are read, expressions never)."""
    names: set[str] = set()
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            module = getattr(stmt, "module", None) or ""
            for alias in stmt.names:
                top = (module or alias.name).split(".")[0]
                if alias.name != "*" and (getattr(stmt, "level", 0) or top != "ray"):
                    names.add((alias.asname or alias.name).split(".")[0])
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                names |= _project_import_names(inner)
    return names


class _Obj:
    __slots__ = ("id", "span", "keys", "children", "includes", "_seen", "imported")

    def __init__(self, index: int, span: list[int], imported: str | None = None):
        self.id = index
        self.span = span
        self.imported = imported  # what another module of the project gives: NAME, mod.NAME, f()
        self.keys: list[dict] = []
        self.children: dict[str, set[int]] = {}
        self.includes: set[int] = set()
        self._seen: set[tuple] = set()

    def add_key(self, entry: dict) -> None:
        marker = (entry["key"], tuple(entry["span"]), tuple(entry.get("path") or ()))
        if marker not in self._seen:
            self._seen.add(marker)
            self.keys.append(entry)

    def to_json(self) -> dict:
        out = {"id": self.id, "span": self.span, "keys": self.keys,
               "children": {k: sorted(v) for k, v in self.children.items()},
               "includes": sorted(self.includes)}
        if self.imported:
            out["imported"] = self.imported
        return out


class ValueFlow:
    """Run over a module; `objects_of(node)` and `values_of(node)` answer for expressions."""

    def __init__(self, tree: ast.Module, span: Callable[[ast.AST], list[int]],
                 value: Callable[[ast.AST], dict]):
        self.tree = tree
        self._span = span
        self._value = value
        self.objects: list[_Obj] = []
        self._made: dict[int, int] = {}  # id(ast node) -> object id
        self._env: dict[tuple[str, str], set[int]] = {}
        self._lits: dict[tuple[str, str], set] = {}
        self._functions: dict[str, list[tuple[ast.AST, str]]] = {}  # name -> [(def node, scope)]
        self._returns: dict[str, set[int]] = {}  # function scope -> objects
        self._scope_of: dict[int, str] = {}  # id(expression node) -> scope it is evaluated in
        self._parents: dict[str, str] = {}  # scope -> enclosing scope
        self._class_of: dict[str, str] = {}  # scope -> class name (for self.x)
        self._conditions: list[dict] = []
        self._node_conditions: dict[int, list[dict]] = {}
        self._changed = False
        self._opaque: dict[tuple[str, str], _Obj] = {}
        self._active: dict[int, list[ast.AST]] = {}
        self._tests: dict[int, str] = {}
        self.passes = 0
        # Names bound by imports of modules that are not Ray's: what they stand for is in
        # another file, so each gets one object that says so (see `exports`).
        self._import_names = _project_import_names(tree.body)
        self._import_objects: dict[str, int] = {}  # imported name -> the object standing for it
        self._wide: set[tuple[str, str]] = set()  # names past _MAX_OBJECTS_PER_NAME: not followed
        self.notes: list[str] = []

    # -- driving ----------------------------------------------------------------------------
    def run(self) -> "ValueFlow":
        self._index(self.tree, "<module>", None)
        for _ in range(_MAX_PASSES):
            self._changed = False
            self._conditions = []
            self._block(self.tree.body, "<module>")
            self.passes += 1
            if not self._changed:
                break
        return self

    def _index(self, node: ast.AST, scope: str, cls: str | None) -> None:
        """Functions and classes by scope; only statements are visited (never expressions)."""
        children = []
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children += getattr(node, field, None) or []
        for child in children:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = f"{scope}.{child.name}" if scope != "<module>" else child.name
                self._functions.setdefault(child.name, []).append((child, inner))
                self._parents[inner] = scope
                if cls:
                    self._class_of[inner] = cls
                elif scope in self._class_of:
                    self._class_of[inner] = self._class_of[scope]
                self._index(child, inner, None)
            elif isinstance(child, ast.ClassDef):
                inner = f"{scope}.{child.name}" if scope != "<module>" else child.name
                self._parents[inner] = scope
                self._class_of[inner] = child.name
                self._index(child, inner, child.name)
            else:
                self._index(child, scope, cls)

    # -- environment ------------------------------------------------------------------------
    def _key(self, scope: str, name: str) -> tuple[str, str]:
        if name.startswith("self.") and scope in self._class_of:
            return ("class:" + self._class_of[scope], name)
        while (scope, name) not in self._env and (scope, name) not in self._lits and scope in self._parents:
            scope = self._parents[scope]
        return (scope, name)

    def _bind(self, scope: str, name: str, objects: set[int], literals) -> None:
        if name.startswith("self.") and scope in self._class_of:
            key = ("class:" + self._class_of[scope], name)
        else:
            key = (scope, name)
        if key in self._wide:
            return
        have = self._env.setdefault(key, set())
        if not objects <= have:
            if len(have | objects) > _MAX_OBJECTS_PER_NAME:
                self._wide.add(key)
                self._env[key] = set()
                self._lits.pop(key, None)
                self.notes.append(f"`{name}` stands for more than {_MAX_OBJECTS_PER_NAME} dicts "
                                  "(rebound from itself again and again); the keys that flow "
                                  "through it are not checked")
                self._changed = True
                return
            have |= objects
            self._changed = True
        lits = self._lits.setdefault(key, set())
        for value in literals:
            marker = _UNKNOWN if value is _UNKNOWN else ("v", repr(value))
            if marker not in lits:
                lits.add(marker)
                self._changed = True

    def _new(self, node: ast.AST) -> _Obj:
        index = self._made.get(id(node))
        if index is None:
            index = len(self.objects)
            self._made[id(node)] = index
            self.objects.append(_Obj(index, self._span(node)))
        return self.objects[index]

    # -- statements -------------------------------------------------------------------------
    def _block(self, body: list[ast.stmt], scope: str) -> None:
        for stmt in body:
            self._stmt(stmt, scope)

    def _stmt(self, stmt: ast.stmt, scope: str) -> None:
        self._node_conditions[id(stmt)] = list(self._conditions)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = f"{scope}.{stmt.name}" if scope != "<module>" else stmt.name
            saved, self._conditions = self._conditions, []
            self._block(stmt.body, inner)
            self._conditions = saved
            return
        if isinstance(stmt, ast.ClassDef):
            inner = f"{scope}.{stmt.name}" if scope != "<module>" else stmt.name
            self._block(stmt.body, inner)
            return
        if isinstance(stmt, ast.If):
            self._exprs(stmt.test, scope)
            test, positive = stmt.test, True
            while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, positive = test.operand, not positive
            source = self._tests.get(id(test))
            if source is None:
                source = self._tests[id(test)] = ast.unparse(test)[:200]
            self._conditions.append({"test": source, "positive": positive})
            self._block(stmt.body, scope)
            self._conditions[-1] = {"test": source, "positive": not positive}
            self._block(stmt.orelse, scope)
            self._conditions.pop()
            return
        if isinstance(stmt, ast.Assign):
            self._exprs(stmt.value, scope)
            for target in stmt.targets:
                self._assign(target, stmt.value, scope, stmt)
            return
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._exprs(stmt.value, scope)
                self._assign(stmt.target, stmt.value, scope, stmt)
            return
        if isinstance(stmt, ast.AugAssign):
            self._exprs(stmt.value, scope)
            if isinstance(stmt.op, ast.BitOr):
                for obj in self._store_targets(stmt.target, scope):
                    self._merge_into(obj, stmt.value, scope)
            return
        if isinstance(stmt, ast.Return):
            if stmt.value is not None:
                self._exprs(stmt.value, scope)
                objects = self.eval(stmt.value, scope)
                have = self._returns.setdefault(scope, set())
                if not objects <= have:
                    have |= objects
                    self._changed = True
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            self._exprs(getattr(stmt, "iter", None) or getattr(stmt, "test", None), scope)
            self._block(stmt.body, scope)
            self._block(stmt.orelse, scope)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._exprs(item.context_expr, scope)
            self._block(stmt.body, scope)
            return
        if isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self._block(stmt.body, scope)
            for handler in stmt.handlers:
                self._block(handler.body, scope)
            self._block(stmt.orelse, scope)
            self._block(stmt.finalbody, scope)
            return
        if isinstance(stmt, ast.Match):
            self._exprs(stmt.subject, scope)
            for case in stmt.cases:
                self._block(case.body, scope)
            return
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self._exprs(child, scope)

    def _assign(self, target: ast.AST, value: ast.AST, scope: str, stmt: ast.stmt) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and \
                len(value.elts) == len(target.elts) else [None] * len(target.elts)
            for t, v in zip(target.elts, values):
                if v is None:
                    self._bind_name(t, set(), [_UNKNOWN], scope)
                else:
                    self._assign(t, v, scope, stmt)
            return
        if isinstance(target, ast.Subscript):
            self._item_store(target, value, scope)
            return
        self._bind_name(target, self.eval(value, scope), self.literals(value, scope), scope)

    def _bind_name(self, target: ast.AST, objects: set[int], literals, scope: str) -> None:
        name = dotted(target)
        if isinstance(target, ast.Starred):
            name = dotted(target.value)
            literals = [_UNKNOWN]
        if name and (name.count(".") == 0 or name.startswith("self.")):
            self._bind(scope, name, objects, literals)

    def _exprs(self, node: ast.AST | None, scope: str) -> None:
        """Effects inside an expression: mutating calls, calls of local functions, lambdas."""
        if node is None:
            return
        active = self._active.get(id(node))
        if active is None:  # walked once; later passes only revisit the calls and dicts
            active = []
            for sub in ast.walk(node):
                self._scope_of[id(sub)] = scope
                if isinstance(sub, (ast.Call, ast.Dict)):
                    active.append(sub)
            self._active[id(node)] = active
        for sub in active:
            if isinstance(sub, ast.Call):
                self._call_effects(sub, scope)
            if isinstance(sub, ast.Dict) or (isinstance(sub, ast.Call) and dotted(sub.func) == "dict"):
                self.eval(sub, scope)

    # -- item stores, updates, calls of local functions -------------------------------------
    def _subscript_path(self, node: ast.Subscript) -> tuple[ast.AST, list[ast.AST]] | None:
        """`x["a"]["b"]` -> (x, [<"a">, <"b">]); None unless every key is a string constant."""
        keys = []
        while isinstance(node, ast.Subscript):
            if _const_str(node.slice) is None:
                return None
            keys.append(node.slice)
            node = node.value
        return node, list(reversed(keys))

    def _store_targets(self, node: ast.AST, scope: str) -> list[_Obj]:
        """The objects keys are written into; a plain name bound to nothing this file can see
        (`config = ppo.DEFAULT_CONFIG.copy()`, a parameter) gets one object of its own."""
        found = self.eval(node, scope)
        name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if not found and name and (name.count(".") == 0 or name.startswith("self.")):
            key = self._key(scope, name)
            obj = self._opaque.get(key)
            if obj is None:
                obj = self._new(node)
                self._opaque[key] = obj
            self._bind(key[0] if not key[0].startswith("class:") else scope, name, {obj.id}, [])
            found = {obj.id}
        return [self.objects[i] for i in sorted(found)]

    def _item_store(self, target: ast.Subscript, value: ast.AST, scope: str) -> None:
        found = self._subscript_path(target)
        if found is None:
            return
        root, keys = found
        roots = self._store_targets(root, scope)
        stored = self.eval(value, scope)
        facts = self._entry_facts(value, scope)
        conditions = list(self._conditions)
        facts["target"] = ast.unparse(root)[:80]
        for obj in roots:
            self._write_path(obj, keys, stored, facts, conditions, scope, "item")

    def _write_path(self, obj: _Obj, keys: list[ast.AST], stored: set[int], facts: dict,
                    conditions: list[dict], scope: str, how: str) -> None:
        first, rest = keys[0], keys[1:]
        name = first.value
        entry = {"key": name, "span": self._span(first), "path": [k.value for k in rest],
                 "how": how, "conditions": conditions, "scope": scope}
        if rest:
            entry.update(value=None, literal=False, source="", value_span=self._span(first),
                         target=facts.get("target", ""))
        else:
            entry.update(facts)
        before = len(obj.keys)
        obj.add_key(entry)
        if len(obj.keys) != before:
            self._changed = True
        children = obj.children.setdefault(name, set())
        if rest:
            if not children:
                child = self._new(first)
                children.add(child.id)
                self._changed = True
            for child_id in sorted(children):
                self._write_path(self.objects[child_id], rest, stored, facts, conditions, scope, how)
        elif not stored <= children:
            children |= stored
            self._changed = True

    def _merge_into(self, obj: _Obj, source: ast.AST, scope: str) -> None:
        objects = self.eval(source, scope)
        if not objects <= obj.includes and obj.id not in objects:
            obj.includes |= objects - {obj.id}
            self._changed = True

    def _call_effects(self, call: ast.Call, scope: str) -> None:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("update", "setdefault"):
            targets = self._store_targets(func.value, scope)
            if not targets:
                return
            conditions = list(self._conditions)
            for obj in targets:
                if func.attr == "update":
                    for arg in call.args[:1]:
                        self._merge_into(obj, arg, scope)
                    for kw in call.keywords:
                        if kw.arg is None:
                            self._merge_into(obj, kw.value, scope)
                        else:
                            self._keyword_entry(obj, kw, scope, conditions, "update")
                elif call.args and _const_str(call.args[0]) is not None:
                    value = call.args[1] if len(call.args) > 1 else ast.Constant(None)
                    facts = self._entry_facts(value, scope) if len(call.args) > 1 else \
                        {"value_span": self._span(call.args[0]), "source": "None", "value": None, "literal": True}
                    self._write_path(obj, [call.args[0]], self.eval(value, scope) if len(call.args) > 1
                                     else set(), facts, conditions, scope, "setdefault")
            return
        name = func.id if isinstance(func, ast.Name) else None
        if name and name in self._functions:
            for definition, inner in self._functions[name]:
                self._bind_parameters(definition.args, call, inner, scope)

    def _entry_facts(self, value: ast.AST, scope: str) -> dict:
        """What a key entry says of its value: the literal facts, and the values a name may have."""
        facts = self._value(value)
        facts.pop("dict", None)
        facts["value_span"] = facts.pop("span")
        if not facts.get("literal"):
            scope_values = self.values_in(value, scope)
            if scope_values is not None:
                facts["values"], facts["values_complete"] = scope_values["values"], scope_values["complete"]
        return facts

    def _keyword_entry(self, obj: _Obj, kw: ast.keyword, scope: str, conditions: list[dict], how: str) -> None:
        facts = self._entry_facts(kw.value, scope)
        entry = {"key": kw.arg, "span": self._kw_span(kw), "path": [], "how": how,
                 "conditions": conditions, "scope": scope, **facts}
        before = len(obj.keys)
        obj.add_key(entry)
        if len(obj.keys) != before:
            self._changed = True
        stored = self.eval(kw.value, scope)
        children = obj.children.setdefault(kw.arg, set())
        if not stored <= children:
            children |= stored
            self._changed = True

    def _kw_span(self, kw: ast.keyword) -> list[int]:
        line, col, _, _ = self._span(kw)
        return [line, col, line, col + len(kw.arg or "")]

    def _bind_parameters(self, args: ast.arguments, call: ast.Call, inner: str, scope: str) -> None:
        positional = args.posonlyargs + args.args
        offset = 1 if positional and positional[0].arg in ("self", "cls") and isinstance(call.func, ast.Attribute) else 0
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred) or i + offset >= len(positional):
                break
            self._bind(inner, positional[i + offset].arg, self.eval(arg, scope), self.literals(arg, scope))
        names = {a.arg for a in positional + args.kwonlyargs}
        for kw in call.keywords:
            if kw.arg in names:
                self._bind(inner, kw.arg, self.eval(kw.value, scope), self.literals(kw.value, scope))

    # -- evaluation -------------------------------------------------------------------------
    def eval(self, node: ast.AST | None, scope: str, depth: int = 0) -> set[int]:
        """The dict objects `node` may be."""
        if node is None or depth > 12:
            return set()
        if isinstance(node, ast.Dict):
            obj = self._new(node)
            conditions = self._node_conditions.get(id(node), self._conditions)
            for key, value in zip(node.keys, node.values):
                if key is None:
                    objects = self.eval(value, scope, depth + 1)
                    if not objects <= obj.includes:
                        obj.includes |= objects - {obj.id}
                        self._changed = True
                    continue
                name = _const_str(key)
                if name is None:
                    continue
                facts = self._entry_facts(value, scope)
                obj.add_key({"key": name, "span": self._span(key), "path": [], "how": "literal",
                             "conditions": list(conditions), "scope": scope, **facts})
                stored = self.eval(value, scope, depth + 1)
                children = obj.children.setdefault(name, set())
                if not stored <= children:
                    children |= stored
                    self._changed = True
            return {obj.id}
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = dotted(node)
            if name is None:
                return set()
            found = set(self._env.get(self._key(scope, name), ()))
            if not found and name.split(".")[0] in self._import_names and name.count(".") <= 1:
                found = {self._imported(name, node)}
            return found
        if isinstance(node, ast.Call):
            return self._eval_call(node, scope, depth)
        if isinstance(node, ast.Subscript):
            bases = self.eval(node.value, scope, depth + 1)
            key = _const_str(node.slice)
            out: set[int] = set()
            for base in bases:
                children = self.objects[base].children
                out |= children.get(key, set()) if key is not None else set().union(*children.values()) \
                    if children else set()
            return out
        if isinstance(node, ast.IfExp):
            return self.eval(node.body, scope, depth + 1) | self.eval(node.orelse, scope, depth + 1)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.eval(v, scope, depth + 1) for v in node.values))
        if isinstance(node, ast.NamedExpr):
            return self.eval(node.value, scope, depth + 1)
        return set()

    def _eval_call(self, call: ast.Call, scope: str, depth: int) -> set[int]:
        func = call.func
        name = dotted(func) or ""
        last = name.rsplit(".", 1)[-1]
        if name == "dict":
            obj = self._new(call)
            for arg in call.args[:1]:
                objects = self.eval(arg, scope, depth + 1)
                if not objects <= obj.includes:
                    obj.includes |= objects
                    self._changed = True
            conditions = self._node_conditions.get(id(call), self._conditions)
            for kw in call.keywords:
                if kw.arg is None:
                    objects = self.eval(kw.value, scope, depth + 1)
                    if not objects <= obj.includes:
                        obj.includes |= objects
                        self._changed = True
                else:
                    self._keyword_entry(obj, kw, scope, list(conditions), "dict")
            return {obj.id}
        if name in _COPIES and call.args:
            return self.eval(call.args[0], scope, depth + 1)
        if isinstance(func, ast.Attribute) and func.attr == "copy" and not call.args:
            return self.eval(func.value, scope, depth + 1)
        if isinstance(func, ast.Attribute) and func.attr in ("get", "pop") and len(call.args) >= 1:
            bases = self.eval(func.value, scope, depth + 1)
            key = _const_str(call.args[0])
            out: set[int] = set()
            for base in bases:
                children = self.objects[base].children
                out |= children.get(key, set()) if key is not None else set().union(*children.values()) \
                    if children else set()
            if len(call.args) > 1:
                out |= self.eval(call.args[1], scope, depth + 1)
            return out
        if last in _MERGES:
            obj = self._new(call)
            for arg in call.args:
                objects = self.eval(arg, scope, depth + 1)
                if not objects <= obj.includes:
                    obj.includes |= objects
                    self._changed = True
            return {obj.id}
        if isinstance(func, ast.Name) and func.id in self._functions:
            out = set()
            for _, inner in self._functions[func.id]:
                out |= self._returns.get(inner, set())
            return out
        if name and name.split(".")[0] in self._import_names and name.count(".") <= 1 \
                and not self._env.get(self._key(scope, name)):
            return {self._imported(name + "()", call)}
        return set()

    def _imported(self, name: str, node: ast.AST) -> int:
        """The one object standing for what an import of the project gives (NAME, mod.NAME,
        or what a function of it returns, `f()`)."""
        index = self._import_objects.get(name)
        if index is None:
            index = self._import_objects[name] = len(self.objects)
            self.objects.append(_Obj(index, self._span(node), imported=name))
        return index

    def literals(self, node: ast.AST | None, scope: str, depth: int = 0) -> list:
        """The literal values `node` may have; `_UNKNOWN` among them when one is not known."""
        if node is None or depth > 8:
            return [_UNKNOWN]
        if isinstance(node, ast.Constant):
            return [node.value]
        if isinstance(node, ast.IfExp):
            return self.literals(node.body, scope, depth + 1) + self.literals(node.orelse, scope, depth + 1)
        if isinstance(node, ast.Name):
            marks = self._lits.get(self._key(scope, node.id))
            if not marks:
                return [_UNKNOWN]
            out = []
            for mark in marks:
                if mark is _UNKNOWN:
                    out.append(_UNKNOWN)
                else:
                    try:
                        out.append(ast.literal_eval(mark[1]))
                    except (ValueError, SyntaxError):
                        out.append(_UNKNOWN)
            return out
        if isinstance(node, ast.Call) and dotted(node.func) in ("int", "bool", "float") and node.args:
            inner = self.literals(node.args[0], scope, depth + 1)
            func = {"int": int, "bool": bool, "float": float}[dotted(node.func)]
            out = []
            for value in inner:
                try:
                    out.append(_UNKNOWN if value is _UNKNOWN else func(value))
                except (TypeError, ValueError):
                    out.append(_UNKNOWN)
            return out
        try:
            return [ast.literal_eval(node)]
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return [_UNKNOWN]

    # -- answers for the facts --------------------------------------------------------------
    def objects_of(self, node: ast.AST) -> list[int]:
        scope = self._scope_of.get(id(node), "<module>")
        return sorted(self.eval(node, scope))

    def values_of(self, node: ast.AST) -> dict | None:
        """{"values": [...], "complete": bool} for a name or a conditional expression, else None."""
        return self.values_in(node, self._scope_of.get(id(node), "<module>"))

    def values_in(self, node: ast.AST, scope: str) -> dict | None:
        if not isinstance(node, (ast.Name, ast.IfExp, ast.Call)):
            return None
        values = self.literals(node, scope)
        known = []
        for value in values:
            if value is _UNKNOWN:
                continue
            if isinstance(value, (str, int, float, bool)) or value is None:
                if value not in known:
                    known.append(value)
        complete = _UNKNOWN not in values and len(known) == len(
            [v for v in values if v is not _UNKNOWN and (isinstance(v, (str, int, float, bool)) or v is None)])
        known.sort(key=repr)  # sets have no order from one run to the next
        if not known and not complete:
            return {"values": [], "complete": False}
        return {"values": known[:_MAX_VALUES], "complete": complete and len(known) <= _MAX_VALUES}

    def to_json(self) -> list[dict]:
        return [obj.to_json() for obj in self.objects]

    def exports(self) -> dict[str, list[int]]:
        """What another module of the project can import: the dict objects of each module-level
        name, and of what each module-level function returns (as `name()`)."""
        out = {name: sorted(ids) for (scope, name), ids in self._env.items()
               if scope == "<module>" and ids and "." not in name}
        for name, defs in self._functions.items():
            ids = set().union(*(self._returns.get(inner, set()) for _, inner in defs if inner == name))
            if ids:
                out[f"{name}()"] = sorted(ids)
        return out


def value_flow(tree: ast.Module, span: Callable[[ast.AST], list[int]],
               value: Callable[[ast.AST], dict]) -> ValueFlow:
    return ValueFlow(tree, span, value).run()


__all__ = ["ValueFlow", "value_flow"]
