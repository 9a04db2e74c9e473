"""The results of a training run, read from Tune's result.json (`rldoctor check --run PATH`).

PATH is a result.json file, a trial directory holding one, or an experiment directory
whose trials hold one each. Nothing is imported but the standard library: no ray, no
torch, no cluster.

Tune writes one JSON object per line and iteration, and every row embeds the whole
training config (secrets included, ~12 KB of a ~17 KB PPO row). rldoctor never keeps
a config value but the few training settings a fix needs (lr, batch sizes, runner
counts), and skips the config while it reads: Tune puts it after RLlib's metrics, so a
row is parsed up to `"config": {` only (the whole row when that fails).

Reading is streamed and bounded: a file up to FULL_READ_BYTES is read whole; a larger
one is read from its end (the last TAIL_ROWS rows) plus SAMPLE_ROWS rows spread evenly
over the rest by seeking, so a result.json of 100,000 rows costs what one of 3,000
does. Each run's series are kept at a bounded number of points (every row of the
recent part, evenly thinned earlier), and the evidence says how many rows were read.
"""

from __future__ import annotations

import json
from pathlib import Path

from rldoctor import words
from rldoctor.errors import Undiagnosable
from rldoctor.metric_numbers import point_of  # noqa: F401 (the one result-row reader, re-exported)

RESULT_FILE = "result.json"
FULL_READ_BYTES = 64 * 2**20
TAIL_ROWS = 1000
SAMPLE_ROWS = 1000
MAX_POINTS = 2000
MAX_TRIALS = 200
_CONFIG_START = '"config": {'
# What a check may judge on; everything else in a row is left unread.
SETTINGS = ("env", "lr", "train_batch_size_per_learner", "train_batch_size", "minibatch_size",
            "num_epochs", "num_env_runners", "num_envs_per_env_runner", "num_learners",
            "rollout_fragment_length", "gamma", "lambda", "entropy_coeff", "clip_param",
            "grad_clip", "sample_timeout_s")


def find_result_files(path: str) -> list[Path]:
    """The result.json files PATH stands for; exit 3 (one line) when it is not a run."""
    p = Path(path)
    if not p.exists():
        raise Undiagnosable(f"--run {path}: no such file or directory")
    if p.is_file():
        if p.name != RESULT_FILE and p.suffix not in (".json", ".jsonl"):
            raise Undiagnosable(f"--run {path}: not a Tune result file (expected {RESULT_FILE} "
                                "or a trial/experiment directory)")
        return [p]
    if (p / RESULT_FILE).is_file():
        return [p / RESULT_FILE]
    found = sorted(q for q in p.glob(f"*/{RESULT_FILE}") if q.is_file())
    found = found or sorted(q for q in p.glob(f"*/*/{RESULT_FILE}") if q.is_file())
    if not found:
        raise Undiagnosable(f"--run {path}: not a run: no {RESULT_FILE} in it or in its "
                            "trial folders (point --run at a Tune trial or experiment directory)")
    return found[:MAX_TRIALS]


def _parse_row(line: str) -> dict:
    """A row without its config (fast); the whole row when the cut does not parse."""
    cut = line.find(_CONFIG_START)
    if cut > 0:
        head = line[:cut].rstrip()
        if head.endswith(","):
            try:
                return json.loads(head[:-1] + "}")
            except ValueError:
                pass
    return json.loads(line)


def _settings_of(line: str) -> dict:
    """The allow-listed training settings from one row's config (parsed once per run)."""
    try:
        config = json.loads(line).get("config") or {}
    except (ValueError, AttributeError):
        return {}
    return {k: config[k] for k in SETTINGS if isinstance(config.get(k), (int, float, str))
            and not isinstance(config.get(k), bool) and len(str(config.get(k))) < 80}


class _Series:
    """Points of one run: every row of the recent part, thinned evenly before it."""

    def __init__(self):
        self.points: list[dict] = []
        self.stride = 1
        self.seen = 0

    def add(self, point: dict) -> None:
        self.seen += 1
        if (self.seen - 1) % self.stride == 0:
            self.points.append(point)
        if len(self.points) > MAX_POINTS:
            self.points = self.points[::2]
            self.stride *= 2


def _lines(path: Path, size: int):
    """(line, is_last, sampled) of the file: whole, or its tail and an even sample."""
    with open(path, "rb") as f:
        if size <= FULL_READ_BYTES:
            data = f.read()
            lines = data.split(b"\n")
            tail_has_newline = data.endswith(b"\n")
            if tail_has_newline:
                lines.pop()
            for i, raw in enumerate(lines):
                yield raw, i == len(lines) - 1 and not tail_has_newline, False
            return
        # Large file: evenly spaced rows of the first part, then the last TAIL_ROWS.
        tail_start = max(0, size - 64 * 2**20 // 4)
        step = max(1, tail_start // SAMPLE_ROWS)
        for offset in range(0, tail_start, step):
            f.seek(offset)
            if offset:
                f.readline()  # to the start of the next row
            raw = f.readline()
            if raw.endswith(b"\n"):
                yield raw[:-1], False, True
        f.seek(tail_start)
        if tail_start:
            f.readline()
        rest = f.read().split(b"\n")
        complete = rest[-1] == b""
        if complete:
            rest.pop()
        rest = rest[-TAIL_ROWS:]
        for i, raw in enumerate(rest):
            yield raw, i == len(rest) - 1 and not complete, False


def read_run(path: Path) -> dict:
    """One trial's result.json: its series, what could not be read, its settings."""
    size = path.stat().st_size
    series = _Series()
    run = {"path": str(path.parent if path.name == RESULT_FILE else path), "file": str(path),
           "bytes": size, "rows_read": 0, "rows_in_file": None, "bad_lines": 0,
           "truncated_last_line": False, "not_rllib_rows": 0, "sampled": size > FULL_READ_BYTES,
           "settings": {}, "trial_id": None}
    last_good = None
    for raw, is_last, _sampled in _lines(path, size):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
            row = _parse_row(line)
        except (UnicodeDecodeError, ValueError):
            if is_last:
                run["truncated_last_line"] = True
            else:
                run["bad_lines"] += 1
            continue
        if not isinstance(row, dict):
            run["bad_lines"] += 1
            continue
        run["rows_read"] += 1
        point = point_of(row)
        if point is None:
            run["not_rllib_rows"] += 1
            continue
        run["trial_id"] = row.get("trial_id") or run["trial_id"]
        series.add(point)
        last_good = line
    if last_good:
        run["settings"] = _settings_of(last_good)
    if not run["sampled"]:
        run["rows_in_file"] = run["rows_read"] + run["bad_lines"]
    run["points"] = series.points
    run["stride"] = series.stride
    return run


def read_runs(paths: list[str]) -> list[dict]:
    """Every run the --run paths stand for (each path must name at least one)."""
    runs = []
    for path in paths:
        for file in find_result_files(path):
            try:
                runs.append(read_run(file))
            except OSError as exc:
                raise Undiagnosable(f"--run {file}: cannot read: {exc.strerror or exc}") from None
    return runs


