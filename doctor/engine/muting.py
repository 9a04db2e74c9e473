"""Muting: findings an on-call team has accepted, kept in sight but not counted.

Two sources, used together:

- `--ignore CODE[@SUBJECT]` on the command line (repeatable);
- an ignore file: `--config FILE`, else `rldoctor.toml`, else `.rldoctor.toml` in the
  current directory. TOML, one `[[ignore]]` table per entry:

      [[ignore]]
      code = "RLD203"                      # a check code or name, or CODE/RULE (required)
      subject = "cluster"                  # optional: the finding's subject, or a prefix of it
      reason = "two zones on purpose, INC-4711"   # required: why it is accepted
      expires = 2027-01-31                 # optional: muted through that day (UTC)

A CODE/RULE (`RLD801/key-num_workers`) mutes that one row of a check with rules (`rldoctor
list --rules`) and leaves its other rows reporting. A SUBJECT matches a finding whose subject equals it or starts with it (`node:8d80a6e0`
mutes that node by its short id; `file:train.py:` every line of that file, whose line
numbers are matched whole: `file:train.py:3` is line 3, not 30). A muted
finding keeps its place in every report with a `muted` object ({reason, expires,
source}) but is left out of summary.status, the severity counts (counted apart as
`muted`, `muted_<severity>`) and --fail-on. An expired entry mutes nothing: the findings
it matched count again, and the report's notes say so. Anything wrong with the file
(TOML syntax, an unknown key, a missing reason, an unknown code, a bad date) is a usage
error naming the file, the line and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path

from rldoctor.errors import UsageError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, as a package (pyproject.toml)
    import tomli as tomllib

CONFIG_NAMES = ("rldoctor.toml", ".rldoctor.toml")
MAX_CONFIG_BYTES = 2**20  # an ignore file is a few entries
ENTRY_KEYS = ("code", "subject", "reason", "expires")
_HEADER_RE = re.compile(r"^\s*\[\[\s*ignore\s*\]\]")
_TOML_LINE_RE = re.compile(r"\(at line (\d+), column \d+\)")


@dataclass(frozen=True)
class Mute:
    code: str
    subject: str | None
    reason: str
    expires: date | datetime | None
    source: str  # "rldoctor.toml:3" or "--ignore RLD203@cluster"
    origin: str  # the file, or "--ignore"
    rule: str | None = None  # one row of a check with rules: RLD801/<rule>

    def matches(self, finding) -> bool:
        if finding.code != self.code or (self.rule and finding.rule != self.rule):
            return False
        if self.subject is None or finding.subject == self.subject:
            return True
        if not finding.subject.startswith(self.subject):
            return False
        # A line number is matched whole: file:train.py:3 is not file:train.py:30.
        after = finding.subject[len(self.subject)]
        return not (self.subject.startswith("file:") and self.subject[-1].isdigit()
                    and after.isdigit())

    def expired(self, now: datetime) -> bool:
        if self.expires is None:
            return False
        if isinstance(self.expires, datetime):
            when = self.expires if self.expires.tzinfo else self.expires.replace(tzinfo=timezone.utc)
            return now >= when
        return now.date() > self.expires

    def describe(self) -> dict:
        return {"reason": self.reason,
                "expires": self.expires.isoformat() if self.expires else None,
                "source": self.source}

    @property
    def label(self) -> str:
        return self.code + (f"/{self.rule}" if self.rule else "") + (f"@{self.subject}" if self.subject else "")


class _File:
    """The ignore file's lines, to point at the one that is wrong."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()
        self.headers = [i + 1 for i, line in enumerate(self.lines) if _HEADER_RE.match(line)]

    def error(self, line: int | None, why: str, echo: bool = True) -> UsageError:
        """`why`, at `line`; the line itself too when `echo` (never for a file that is not
        TOML at all: that may be any file, /etc/passwd, and its content is not ours to print)."""
        if not line:
            return UsageError(f"{self.path}: {why}")
        shown = self.lines[line - 1].strip() if echo and 0 < line <= len(self.lines) else ""
        return UsageError(f"{self.path}:{line}: {why}" + (f" (the line: {shown})" if shown else ""))

    def entry_line(self, index: int, total: int) -> int | None:
        return self.headers[index] if len(self.headers) == total else None

    def key_line(self, index: int, total: int, key: str) -> int | None:
        start = self.entry_line(index, total)
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        if start is None:
            found = [i + 1 for i, line in enumerate(self.lines) if pattern.match(line)]
            return found[0] if len(found) == 1 else None
        ends = [h for h in self.headers if h > start] + [len(self.lines) + 1]
        return next((i for i in range(start, ends[0]) if pattern.match(self.lines[i - 1])), start)

    def top_key_line(self, key: str) -> int | None:
        pattern = re.compile(rf"^\s*\[*\s*{re.escape(key)}\s*[\]=.]")
        return next((i + 1 for i, line in enumerate(self.lines) if pattern.match(line)), None)


def _expiry(value, where: _File, line: int | None):
    if isinstance(value, (date, datetime)):  # TOML dates and datetimes arrive parsed
        return value
    if isinstance(value, str):
        for parse in (date.fromisoformat, datetime.fromisoformat):
            try:
                return parse(value.strip())
            except ValueError:
                continue
    raise where.error(line, f"expires must be a date like 2027-01-31 (or a date and time), "
                            f"not {value!r}")


def parse_file(path: Path, registry) -> list[Mute]:
    """The entries of one ignore file; a code, name or CODE/RULE is looked up in `registry`."""
    if path.exists() and not path.is_file():  # a FIFO would block the read, a device not end
        raise UsageError(f"--config {path}: not a regular file")
    if path.exists() and path.stat().st_size > MAX_CONFIG_BYTES:
        raise UsageError(f"--config {path}: larger than {MAX_CONFIG_BYTES // 2**20} MB; not an "
                         "ignore file")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"--config {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the ignore file: {exc}") from None
    where = _File(path, text)
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise where.error(None, "not valid TOML here: arrays or tables nested too deep") from None
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_LINE_RE.search(str(exc))
        why = _TOML_LINE_RE.sub("", str(exc)).strip()
        raise where.error(int(match.group(1)) if match else None, f"not valid TOML: {why}",
                          echo=False) from None
    for key in doc:
        if key != "ignore":
            raise where.error(where.top_key_line(key), f"unknown setting {key!r}: an ignore file "
                              "holds [[ignore]] entries (code, subject, reason, expires)")
    entries = doc.get("ignore", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise where.error(where.top_key_line("ignore"),
                          "ignore must be a list of tables: write each entry under [[ignore]]")
    mutes = []
    for index, entry in enumerate(entries):
        total = len(entries)
        head = where.entry_line(index, total)
        for key in entry:
            if key not in ENTRY_KEYS:
                raise where.error(where.key_line(index, total, key) or head,
                                  f"unknown key {key!r} in an [[ignore]] entry; its keys: "
                                  + ", ".join(ENTRY_KEYS))
        for key in ("code", "reason"):
            value = entry.get(key)
            if not isinstance(value, str) or not value.strip():
                what = "has no" if key not in entry else "needs a non-empty text as its"
                hint = ("say why the finding is accepted, e.g. reason = \"two zones on purpose, "
                        "INC-4711\"" if key == "reason" else "e.g. code = \"RLD203\"")
                raise where.error(where.key_line(index, total, key) if key in entry else head,
                                  f"[[ignore]] entry {index + 1} {what} {key}: {hint}")
        code_line = where.key_line(index, total, "code")
        try:
            check, rule = registry.selector(entry["code"], "code =")
        except UsageError as exc:
            raise where.error(code_line, exc.reason) from None
        subject = entry.get("subject")
        if subject is not None and (not isinstance(subject, str) or not subject.strip()):
            raise where.error(where.key_line(index, total, "subject"),
                              "subject must be a non-empty text such as \"cluster\" or \"node:8d80a6e0\"")
        expires = None
        if "expires" in entry:
            expires = _expiry(entry["expires"], where, where.key_line(index, total, "expires"))
        mutes.append(Mute(check.code, subject.strip() if subject else None, entry["reason"].strip(),
                          expires, f"{path}:{code_line or head or index + 1}", str(path), rule))
    return mutes


def parse_option(values, registry) -> list[Mute]:
    """`--ignore CODE[/RULE][@SUBJECT]` values."""
    mutes = []
    for value in values:
        code_text, _, subject = value.strip().partition("@")
        try:
            check, rule = registry.selector(code_text, "--ignore")
        except UsageError as exc:
            raise UsageError(f"--ignore {value!r} is not a check or rule here: {exc.reason}; expected "
                             "CODE[/RULE][@SUBJECT], e.g. RLD203@cluster") from None
        if "@" in value and not subject.strip():
            raise UsageError(f"--ignore {value!r}: nothing after '@'; give a subject "
                             "(e.g. node:8d80a6e0) or leave out the '@'")
        mutes.append(Mute(check.code, subject.strip() or None, "accepted on the command line", None,
                          f"--ignore {value.strip()}", "--ignore", rule))
    return mutes


def config_path(explicit: str | None, cwd: Path | None = None) -> tuple[Path | None, list[str]]:
    """(the ignore file to read, notes): --config, else rldoctor.toml, else .rldoctor.toml."""
    if explicit:
        return Path(explicit), []
    here = cwd or Path.cwd()
    found = [Path(name) if cwd is None else here / name for name in CONFIG_NAMES
             if (here / name).is_file()]
    notes = [f"ignore file {found[1]} was not read: {found[0].name} takes its place"] \
        if len(found) > 1 else []
    return (found[0] if found else None), notes


def load(ignores, config: str | None, registry) -> tuple[list[Mute], list[str]]:
    """Every mute from --ignore and the ignore file, checked against the registry's codes."""
    path, notes = config_path(config)
    mutes = parse_file(path, registry) if path else []
    return mutes + parse_option(ignores or (), registry), notes


def apply(report, mutes: list[Mute], notes: list[str] = (), now: datetime | None = None) -> None:
    """Mark the findings `mutes` cover; report expired entries in the notes."""
    now = now or datetime.now(timezone.utc)
    report.notes.extend(notes)
    live = [m for m in mutes if not m.expired(now)]
    for result in report.results:
        muted = 0
        for finding in result.findings:
            mute = next((m for m in live if m.matches(finding)), None)
            if mute:
                finding.muted = mute.describe()
                muted += 1
        if muted:
            result.detail = "; ".join(x for x in (result.detail, f"{muted} muted") if x)
    if report.cluster is not None:
        from rldoctor.report.overview import mark_findings

        mark_findings(report.cluster["rows"], report.findings)
    for mute in mutes:
        if mute in live:
            continue
        back = [f for f in report.findings if mute.matches(f) and not f.muted]
        report.notes.append(
            f"mute {mute.label} ({mute.source}: {mute.reason}) expired on "
            f"{mute.expires.isoformat()}: "
            + (f"{len(back)} finding(s) it muted count again; " if back else
               "it matches no finding now; ")
            + "renew its expires date or remove the entry")
    if mutes:
        count = len(report.muted_findings)
        sources = sorted({m.origin for m in mutes})
        report.notes.append(f"{count} finding(s) muted by {', '.join(sources)} "
                            f"({len(live)} active mute(s), {len(mutes) - len(live)} expired)")
