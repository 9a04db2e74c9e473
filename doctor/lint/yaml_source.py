"""YAML read the way `ray up` reads it (safe_load), but safe against hostile files.

`load_yaml(text)` composes each document first and refuses one whose aliases
expand to more than `MAX_NODES` nodes (the "billion laughs" bomb: PyYAML shares
the aliased objects, but anything that walks the data afterwards, JSON
Schema validation included, pays for every expansion), or that nests deeper
than `MAX_DEPTH`, or that refers to itself. Then it constructs the data with
PyYAML's SafeConstructor, so the values are exactly what `yaml.safe_load`
gives, and records where every key sits (`/provider/worker_ips` -> line,
column) and which keys appear twice in one mapping (the last one wins,
silently, in `yaml.safe_load`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import re

import yaml

MAX_NODES = 100_000
MAX_DEPTH = 200


class YamlProblem(Exception):
    def __init__(self, status: str, message: str, line: int = 0, column: int = 0):
        super().__init__(message)
        self.status, self.line, self.column = status, line, column


@dataclass
class YamlDocument:
    data: object
    locations: dict[str, list[int]] = field(default_factory=dict)  # JSON pointer -> [line, col]
    duplicates: list[dict] = field(default_factory=list)
    line: int = 1


def _pointer_part(key: object) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _children(node: yaml.Node) -> list:
    """The nodes directly under `node`: a mapping's keys and values, a sequence's items."""
    if isinstance(node, yaml.MappingNode):
        return [c for pair in node.value for c in pair]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return []


def _check_size(root: yaml.Node) -> None:
    """Expanded node count (aliases counted every time they are used), in linear time."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            total = 1 + sum(sizes[id(c)] for c in children)
            if total > MAX_NODES:
                mark = node.start_mark
                raise YamlProblem("yaml-bomb", f"aliases expand to more than {MAX_NODES:,} nodes "
                                  "(a YAML bomb); not linted", mark.line + 1, mark.column + 1)
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            mark = node.start_mark
            raise YamlProblem("yaml-bomb", "an anchor refers to itself (recursive alias); not linted",
                              mark.line + 1, mark.column + 1)
        if depth > MAX_DEPTH:
            mark = node.start_mark
            raise YamlProblem("yaml-error", f"nested deeper than {MAX_DEPTH} levels; not linted",
                              mark.line + 1, mark.column + 1)
        on_path.add(key)
        stack.append((node, depth, True))
        for child in _children(node):
            if id(child) not in sizes:
                stack.append((child, depth + 1, False))


def _locate(root: yaml.Node, doc: YamlDocument) -> None:
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, pointer = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = key_node.value
                child = f"{pointer}/{_pointer_part(key)}"
                mark = key_node.start_mark
                if key in first and key != "<<":
                    doc.duplicates.append({"pointer": child, "line": mark.line + 1,
                                           "column": mark.column + 1, "first_line": first[key]})
                first.setdefault(key, mark.line + 1)
                doc.locations[child] = [mark.line + 1, mark.column + 1]
                stack.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                child = f"{pointer}/{i}"
                mark = item.start_mark
                doc.locations[child] = [mark.line + 1, mark.column + 1]
                _locate_options(item, child, doc)
                stack.append((item, child))


_OPTION = re.compile(r"(?<![^\s'\"])--[A-Za-z][A-Za-z0-9-]*")


def _locate_options(node: yaml.Node, pointer: str, doc: YamlDocument) -> None:
    """A command written over several lines (`- >-` and its continuation lines): where each of its
    `--option` words sits, as `POINTER#--option`, so a finding about one flag names its own line."""
    start, end = node.start_mark, node.end_mark
    if not isinstance(node, yaml.ScalarNode) or end.line <= start.line or start.buffer is None:
        return
    for offset, text in enumerate(start.buffer[start.index:end.index].split("\n")):
        for match in _OPTION.finditer(text):
            column = match.start() + (start.column if offset == 0 else 0)
            doc.locations.setdefault(f"{pointer}#{match.group()}", [start.line + offset + 1, column + 1])


def load_yaml(text: str) -> list[YamlDocument]:
    """Every document of `text`; raises YamlProblem for bombs and malformed YAML."""
    loader = yaml.SafeLoader(text)
    docs = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            _check_size(node)
            data = loader.construct_document(node)
            doc = YamlDocument(data=data, line=node.start_mark.line + 1)
            _locate(node, doc)
            docs.append(doc)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        reason = exc.problem or exc.context or "invalid YAML"
        raise YamlProblem("yaml-error", f"not valid YAML: {reason}", line, column) from None
    except yaml.YAMLError as exc:
        raise YamlProblem("yaml-error", f"not valid YAML: {exc}") from None
    except RecursionError:
        raise YamlProblem("yaml-error", "nested too deeply to parse; not linted") from None
    except ValueError as exc:  # Python's own bound: an integer of more than 4,300 digits
        why = ("an integer of more digits than Python reads (4,300)"
               if "integer string conversion" in str(exc) else f"a value it cannot read ({exc})")
        raise YamlProblem("yaml-error", f"not valid YAML here: {why}; not linted") from None
    finally:
        loader.dispose()
    return docs
