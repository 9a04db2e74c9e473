"""Ages in a report from logs count from now, and the report says where the logs end (issue 48):
a session read three days later must not say "(0 s ago)". A live cluster's snapshot keeps its
ages from the time it was taken."""

from __future__ import annotations

import json

from conftest import FIXTURES, run_rldoctor
from rldoctor.inputs.logdir import read_logs
from rldoctor.report.timeline import build, logs_end
from rldoctor.snapshot import load, validate

SESSION = FIXTURES / "sessions" / "env-raises"
DAY = 86400.0


def test_a_session_read_three_days_later_gives_ages_from_now_and_states_the_logs_end():
    snap = validate(read_logs(str(SESSION)), "env-raises")
    end = snap["jobs"]["now"]  # the logs' last line
    later = lambda: end + 3 * DAY  # noqa: E731
    rows = build(snap, clock=later)
    assert rows and rows[-1]["epoch"] > end - 60  # the last events: seconds before the end
    assert rows[-1]["age"] == "3.0 d ago", rows[-1]
    assert all(row["age"].endswith(" d ago") for row in rows if row["age"])
    assert logs_end(snap, clock=later) == {"time": _clock(end), "epoch": end, "age": "3.0 d ago"}
    # the window (--since) still counts back from the logs' end: the job's events are all kept
    assert {"job_failed", "job_started"} <= {row["kind"] for row in rows}


def _clock(epoch: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_a_live_snapshot_keeps_its_ages_from_the_time_it_was_taken():
    snap = load(FIXTURES / "node-faults.json")
    rows = build(snap, clock=lambda: 4e9)  # a clock far away changes nothing
    assert rows == build(snap) and logs_end(snap) is None


def test_the_report_from_logs_says_where_they_end_in_every_format():
    out = run_rldoctor("check", "--from", str(SESSION), "--format", "json")
    doc = out.json()
    end = doc["source"]["logs_end"]
    assert end["epoch"] >= max(e["epoch"] for e in doc["timeline"] if e["epoch"])
    assert all(e["age"] != "0 s ago" for e in doc["timeline"]), doc["timeline"][-3:]
    table = run_rldoctor("check", "--from", str(SESSION)).stdout
    assert f"ages from now; the logs end at {end['time']}" in table, table
    markdown = run_rldoctor("check", "--from", str(SESSION), "--format", "markdown").stdout
    assert f"the logs end at {end['time']}" in markdown
    assert "logs_end" not in json.dumps(run_rldoctor("check", "--from", str(FIXTURES / "node-faults.json"),
                                                     "--format", "json").json()["source"])
