"""Where checks come from: the modules of `checks/` (found, not listed) and the
`rldoctor.checks` entry points.

A check is a pure function of a Snapshot, declared with `@check(...)`. Its
docstring is its documentation: a one-line summary, then the sections
Symptom, Cause and Fix (and optionally Advice: popular advice about the symptom, quoted,
and when it is right; `explain` prints it as "Common advice"; "Article" is read as Advice).
`rldoctor explain CODE` prints it and the error table of docs/checks.md is built from it.

A built-in check says its fix once: `@check(..., fixes={case: text})`, the texts its findings
carry (`str.format` templates the check always fills in, `.format()` when there is nothing to
fill, so a literal brace is doubled; a `{name}` that is another case's key is that text, a
fragment), and its docstring has no Fix section: the documentation's Fix is written from the
table (`render_fixes`), so what `explain` says and what a finding says cannot drift.
"""

from __future__ import annotations

import importlib
import inspect
import re
import string
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from rldoctor.errors import UsageError
from rldoctor.model import Finding, Note, Severity

CODE_RE = re.compile(r"^[A-Z]{2,6}[0-9]{3}$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
DOC_SECTIONS = ("Symptom", "Cause", "Fix")
_SECTION_RE = re.compile(r"^(Symptom|Cause|Fix|Advice|Article|Evidence|Options):\s*$")
_SECTION_ALIASES = {"Article": "Advice"}  # the older name of the Advice section
ENTRY_POINT_GROUP = "rldoctor.checks"
CHECKS_PACKAGE = "rldoctor.checks"  # every public module of it holds checks; `_helpers` do not
LINT_RULES_PACKAGE = "rldoctor.lint.rules"  # the `code` area: one module per lint rule
CHECK_PACKAGES = (CHECKS_PACKAGE, LINT_RULES_PACKAGE)  # the packages the registry scans
LINT_AREA = "code"  # checks of source files: `rldoctor lint` runs them, `rldoctor check` does not
PREFLIGHT_AREA = "preflight"  # a training before it is submitted: `rldoctor preflight` runs them
# A code's lifecycle (ruff's model): `stable` once its findings, wording and bars are settled;
# `preview` while they may still change between releases. Both run; `list` and `explain` say
# which. A code is never reused either way.
LIFECYCLES = {"stable": "its findings, wording and bars are settled",
              "preview": "its findings, wording and bars may still change between releases; its "
                         "code will not be reused"}


@dataclass
class Check:
    code: str
    name: str
    area: str
    requires: tuple[str, ...]
    func: Callable[..., Iterable[Finding]]
    params: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None
    origin: str = "rldoctor"
    rule_table: Callable[[], dict[str, "Rule"]] | None = None  # a check whose findings are rows
    lifecycle: str = "stable"  # a key of LIFECYCLES
    fixes: dict[str, str] = field(default_factory=dict)  # {case: the fix its findings carry}

    @property
    def rules(self) -> dict[str, "Rule"]:
        """{rule id: Rule} of a check that reports rows of a table (RLD801), else {}."""
        return self.rule_table() if self.rule_table else {}

    @property
    def doc(self) -> dict[str, str]:
        doc = parse_doc(self.func.__doc__ or "")
        if self.fixes:
            doc["Fix"] = render_fixes(self.fixes)
        return doc

    @property
    def summary(self) -> str:
        return self.doc.get("summary", "")

    def __call__(self, snapshot, params=None):
        return self.func(snapshot, {**self.params, **(params or {})})


@dataclass(frozen=True)
class Rule:
    """One row of a check's table (RLD801 has one per stale usage): selected, muted and
    explained by `CODE/ID`, its findings carry that id in `Finding.rule`."""

    id: str
    severity: str
    summary: str  # one line: the usage and what Ray does with it
    text: str = ""  # what `rldoctor explain CODE/ID` prints below the summary


def check(code: str, name: str, area: str, requires: Iterable[str] = (),
          params: dict[str, Any] | None = None, timeout_s: float | None = None,
          rules: Callable[[], dict[str, Rule]] | None = None, lifecycle: str = "stable",
          fixes: dict[str, str] | None = None):
    """Declare a check. The decorated function is `(snapshot, params) -> Iterable[Finding]`.
    `rules` returns the rows a check reports by (read only when asked for); `lifecycle` is
    `stable` or `preview` (LIFECYCLES); `fixes` the texts of its findings' fixes, by case
    (the module docstring's paragraph on fixes)."""
    if lifecycle not in LIFECYCLES:
        raise ValueError(f"check {code}: lifecycle {lifecycle!r} is not one of {', '.join(LIFECYCLES)}")
    if not CODE_RE.match(code):
        raise ValueError(f"check code {code!r} must look like RLD101")
    if not NAME_RE.match(name):
        raise ValueError(f"check name {name!r} must be kebab-case")

    def wrap(func):
        if fixes and parse_doc(func.__doc__ or "").get("Fix"):
            raise ValueError(f"check {code}: its fix is said once, in `fixes`; its docstring "
                             "has a Fix section too")
        return Check(code=code, name=name, area=area, requires=tuple(requires), func=func,
                     params=dict(params or {}), timeout_s=timeout_s, rule_table=rules,
                     lifecycle=lifecycle, fixes=dict(fixes or {}))

    return wrap


def _fields(template: str) -> list[tuple[str, str | None]]:
    """(literal text, field name or None) of a `str.format` template, in order."""
    return [(literal, name) for literal, name, _, _ in string.Formatter().parse(template)]


def render_fixes(fixes: dict[str, str]) -> str:
    """The documentation's Fix, written from a check's fix table: each case that is no other
    case's fragment, as "When <case>: <text>" (the text alone for one case), a fragment written
    in where it is used, the values a check fills in as <name>."""
    import textwrap

    cases = fix_cases(fixes)
    if len(cases) == 1:
        return textwrap.fill(cases[0][1], 88)
    return "\n\n".join(textwrap.fill(f"When {case}: {t}", 88) for case, t in cases)


def fix_cases(fixes: dict[str, str]) -> list[tuple[str, str]]:
    """(case, its text for people) of each case of a fix table that is no other case's fragment
    (a fragment is written in where it is used; a value to fill in reads <name>)."""

    def text(template: str, depth: int = 0) -> str:
        out = []
        for literal, name in _fields(template):
            out.append(literal)
            if name is None:
                continue
            if name in fixes and depth < 4:
                out.append(text(fixes[name], depth + 1))
            else:
                out.append(f"<{name.replace('_', ' ')}>")
        return "".join(out)

    fragments = {name for t in fixes.values() for _, name in _fields(t) if name in fixes}
    return [(case, text(t)) for case, t in fixes.items() if case not in fragments]


def fix_pattern(fixes: dict[str, str]) -> re.Pattern:
    """What a finding's fix may be: one case of the table filled in, or several joined (a check
    that composes its fix from its cases); a value filled in is any text."""

    def one(template: str) -> str:
        return "".join(re.escape(literal) + ("" if name is None else "(?:.*?)")
                       for literal, name in _fields(template))

    case = "(?:" + "|".join(f"(?:{one(t)})" for t in fixes.values()) + ")"
    return re.compile(rf"{case}(?:[\s;,.:]*{case})*", re.DOTALL)


def parse_doc(docstring: str) -> dict[str, str]:
    """Split a check docstring into summary and named sections."""
    text = inspect.cleandoc(docstring)
    lines = text.splitlines()
    sections: dict[str, list[str]] = {"summary": []}
    current = "summary"
    for line in lines:
        header = _SECTION_RE.match(line.strip()) if not line.startswith(" ") else None
        if header:
            current = _SECTION_ALIASES.get(header.group(1), header.group(1))
            sections[current] = []
            continue
        sections[current].append(line)
    out = {}
    for key, body in sections.items():
        out[key] = inspect.cleandoc("\n".join(body)) if any(s.strip() for s in body) else ""
    return out


# Findings: a check says what it saw; the runner stamps the code on it. `finding` is the one
# way to make one of a severity given as data (Severity or its label "info", "warn", "fail");
# `info`, `warn` and `fail` are it with the severity fixed.
def finding(severity: Severity | str, subject: str, message: str, evidence: dict | None = None,
            fix: str = "") -> Finding:
    level = severity if isinstance(severity, Severity) else Severity.parse(severity)
    return Finding("", level, subject, message, evidence or {}, fix)


def info(subject: str, message: str, evidence: dict | None = None, fix: str = "") -> Finding:
    return finding(Severity.INFO, subject, message, evidence, fix)


def warn(subject: str, message: str, evidence: dict | None = None, fix: str = "") -> Finding:
    return finding(Severity.WARN, subject, message, evidence, fix)


def fail(subject: str, message: str, evidence: dict | None = None, fix: str = "") -> Finding:
    return finding(Severity.FAIL, subject, message, evidence, fix)


def note(subject: str, message: str, evidence: dict | None = None) -> Note:
    """Not a finding: what a check examined and let go (a node slow once, fine when measured
    again). It goes into the check's detail and the report's `checks[].notes`."""
    return Note(subject, message, evidence or {})


def _checks_in(obj: Any) -> list[Check]:
    if isinstance(obj, Check):
        return [obj]
    if isinstance(obj, types.ModuleType):
        return [v for v in vars(obj).values() if isinstance(v, Check)]
    if isinstance(obj, (list, tuple)):
        return [c for c in obj if isinstance(c, Check)]
    return []


@dataclass
class Registry:
    checks: list[Check]
    problems: list[str]  # plugins that failed to load, duplicate codes, ...

    def by_code(self) -> dict[str, Check]:
        return {c.code: c for c in self.checks}

    def selector(self, text: str, option: str) -> tuple[Check, str | None]:
        """(the check, the rule id or None) that `CODE`, `NAME` or `CODE/RULE` names (any case
        for the code); a usage error naming `option` for a code or rule that does not exist
        (its `reason` is the same words without the option, for an ignore file's line)."""
        wanted = text.strip()
        code_text, slash, rule = wanted.partition("/")
        rule = rule.strip()
        found = next((c for c in self.checks if c.code == code_text.strip().upper()
                      or c.name == code_text.strip().lower()), None)
        if found is None:
            reason = (f"unknown check code {code_text.strip()!r}; valid codes: "
                      + ", ".join(c.code for c in self.checks))
        elif not slash:
            return found, None
        elif not found.rule_table:
            reason = (f"{found.code} has no rules to name after '/'; checks with rules: "
                      + (", ".join(c.code for c in self.checks if c.rule_table) or "none"))
        elif rule in found.rules:
            return found, rule
        else:  # words, not "RULE: x": a rule id such as key-... before a colon reads as a secret
            close = sorted(r for r in found.rules if rule and rule.lower() in r.lower())[:5]
            reason = (f"{found.code} has no rule {rule!r}"
                      + (f" (did you mean {', '.join(found.code + '/' + r for r in close)}?)" if close else "")
                      + f"; `rldoctor list --rules {found.code}` lists them")
        error = UsageError(f"{option} {wanted!r} is not a check or rule here: {reason}")
        error.reason = reason
        raise error

    def select(self, only: Iterable[str] = (), skip: Iterable[str] = (),
               lint: bool = False, preflight: bool = False) -> list[Check]:
        """The checks to run: the `code` area's for `rldoctor lint`, the `preflight` area's for
        `rldoctor preflight`, all the others otherwise."""
        only, skip = set(only), set(skip)
        return [c for c in self.checks
                if (c.area == LINT_AREA) == lint and (c.area == PREFLIGHT_AREA) == preflight
                and (not only or c.code in only or c.name in only) and c.code not in skip
                and c.name not in skip]


def builtin_modules() -> list[str]:
    """The check modules of rldoctor: every module of `checks/` (its area subpackages
    included) and of the lint rules package whose name does not start with "_" (those are
    helpers), found in the packages, so a new area's module runs without being listed
    anywhere."""
    import pkgutil

    found = []
    for package_name in CHECK_PACKAGES:
        package = importlib.import_module(package_name)
        for m in pkgutil.walk_packages(package.__path__, f"{package_name}."):
            parts = m.name[len(package_name) + 1:].split(".")
            if not m.ispkg and not any(part.startswith("_") for part in parts):
                found.append(m.name)
    return sorted(found)


def builtin_checks() -> list[Check]:
    found: list[Check] = []
    for module_name in builtin_modules():
        found.extend(_checks_in(importlib.import_module(module_name)))
    return sorted(found, key=lambda c: c.code)


def _entry_points():
    from importlib.metadata import entry_points

    eps = entry_points(group=ENTRY_POINT_GROUP)
    unique = {(ep.name, ep.value): ep for ep in eps}  # a dist on sys.path twice counts once
    return [unique[key] for key in sorted(unique)]


def load_registry(include_plugins: bool = True) -> Registry:
    """Built-ins in code order, then plugins in entry-point name order."""
    checks = builtin_checks()
    problems: list[str] = []
    if not include_plugins:
        return Registry(checks, problems)
    seen = {c.code for c in checks}
    for ep in _entry_points():
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        origin = f"{dist}[{ep.name}]"
        try:
            loaded = ep.load()
        except BaseException as exc:  # a broken plugin must not take the doctor down
            problems.append(f"plugin {origin} ({ep.value}) failed to load: "
                            f"{type(exc).__name__}: {exc}")
            continue
        plugin_checks = sorted(_checks_in(loaded), key=lambda c: c.code)
        if not plugin_checks:
            problems.append(f"plugin {origin} ({ep.value}) declares no checks")
        for c in plugin_checks:
            if c.code in seen:
                problems.append(f"plugin {origin}: check code {c.code} is already taken; ignored")
                continue
            seen.add(c.code)
            c.origin = origin
            checks.append(c)
    return Registry(checks, problems)
