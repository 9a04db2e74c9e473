"""`rldoctor watch` without a cluster: its rounds replayed from recorded snapshots.

The collector is replaced by one that hands out fixtures (and fails when told to); the
checks, muting, metrics, exposition and transition log are the real ones.
"""

from __future__ import annotations

import copy
import io
import json
import re
from datetime import datetime, timezone

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from conftest import FIXTURES
from rldoctor.engine.pipeline import Diagnosis
from rldoctor.engine.registry import load_registry
from rldoctor.snapshot import validate
from rldoctor.watch.rounds import RoundFailed, Watch
from rldoctor.watch.metrics import WatchMetrics
from rldoctor.watch.transitions import TransitionLog

REGISTRY = load_registry(include_plugins=False)


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def expected(name: str) -> set[tuple[str, str, str]]:
    found = json.loads((FIXTURES / f"{name}.expected.json").read_text())["findings"]
    return {(f["code"], f["severity"], f["subject"]) for f in found}


class Replay:
    """Hands out recorded snapshots round after round; an Exception in the list is raised."""

    def __init__(self, rounds: list):
        self.rounds = list(rounds)

    def snapshot(self, stop):
        item = self.rounds.pop(0)
        if isinstance(item, Exception):
            raise item
        return copy.deepcopy(item)


class MemoryLog(TransitionLog):
    def __init__(self):
        self.path = None
        self._out = io.StringIO()

    @property
    def events(self) -> list[dict]:
        return [json.loads(line) for line in self._out.getvalue().splitlines()]


def watch_of(rounds: list, ignores=()) -> tuple[Watch, WatchMetrics, MemoryLog]:
    diagnosis = Diagnosis.from_options(ignores=ignores, registry=REGISTRY)  # as `watch` builds it

    def diagnose_round(doc):
        return diagnosis.run(validate(doc, "replay"), {})

    metrics, log = WatchMetrics(), MemoryLog()
    return Watch(Replay(rounds), metrics, log, diagnose_round, interval_s=0), metrics, log


def scrape(metrics: WatchMetrics) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    return generate_latest(registry).decode()


def series(text: str, name: str) -> dict[tuple, float]:
    """{(label pairs...): value} of one metric in the exposition text."""
    out = {}
    for line in text.splitlines():
        m = re.match(rf"^{name}(?:\{{(.*)\}})? (\S+)$", line)
        if m:
            labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1) or "")))
            out[labels] = float(m.group(2))
    return out


def finding_keys(text: str) -> set[tuple[str, str, str]]:
    return {(dict(k)["code"], dict(k)["severity"], dict(k)["subject"])
            for k in series(text, "rldoctor_finding")}


def test_a_round_serves_exactly_the_findings_of_check_with_their_streaks_and_messages():
    watch, metrics, log = watch_of([fixture("training-hung")] * 2)
    watch.run(max_rounds=1)
    text = scrape(metrics)
    assert finding_keys(text) == expected("training-hung")
    assert set(series(text, "rldoctor_finding").values()) == {1.0}
    assert series(text, "rldoctor_up") == {(): 1.0}
    hung = dict(next(k for k in series(text, "rldoctor_finding") if dict(k)["code"] == "RLD605"))
    assert hung["name"] == "env-runner-hung"
    messages = {dict(k)["code"]: dict(k)["message"] for k in series(text, "rldoctor_finding_message")}
    assert "RLD605" in messages and len(messages["RLD605"]) > 20
    # every check the watch runs (all but lint's `code` area, as `check`) has exactly one status series
    statuses = series(text, "rldoctor_check_status")
    assert sorted(dict(k)["code"] for k in statuses) == sorted(c.code for c in REGISTRY.select())
    assert {dict(k)["code"]: dict(k)["status"] for k in statuses}["RLD605"] == "fail"
    # the opened events: one per finding, nothing resolved
    assert {(e["code"], e["severity"], e["subject"]) for e in log.events} == expected("training-hung")
    assert {e["event"] for e in log.events} == {"opened"}
    # the second round: the same findings, seen twice, nothing logged
    watch.run(max_rounds=2)
    text = scrape(metrics)
    assert set(series(text, "rldoctor_finding_rounds").values()) == {2.0}
    assert len(log.events) == len(expected("training-hung"))


def test_training_figures_come_from_the_training_section():
    doc = fixture("training-hung")
    watch, metrics, _ = watch_of([doc])
    watch.run(max_rounds=1)
    text = scrape(metrics)
    training = doc["training"]["trainings"][0]
    runners = {dict(k)["state"]: v for k, v in series(text, "rldoctor_training_env_runners").items()}
    assert runners["configured"] == training["runners_configured"]
    assert runners["healthy"] == training["runners_alive"]
    ages = [r["call"]["age_s"] for r in training["runners"] if (r.get("call") or {}).get("age_s")]
    oldest = series(text, "rldoctor_training_oldest_call_age_seconds")
    assert list(oldest.values()) == [pytest.approx(max(ages))]
    assert dict(next(iter(oldest)))["training"] == training["subject"]


def test_a_finding_that_is_gone_loses_its_series_and_is_logged_resolved():
    watch, metrics, log = watch_of([fixture("training-hung"), fixture("training-healthy")])
    watch.run(max_rounds=2)
    text = scrape(metrics)
    assert finding_keys(text) == expected("training-healthy")
    assert {(dict(k)["code"], dict(k)["subject"]) for k in series(text, "rldoctor_finding_message")} \
        == {(code, subject) for code, _, subject in expected("training-healthy")}
    resolved = {(e["code"], e["severity"], e["subject"]) for e in log.events if e["event"] == "resolved"}
    assert resolved == expected("training-hung") - expected("training-healthy")
    assert all(e["message"] and e["time"] for e in log.events)


def test_a_failed_round_sets_up_0_keeps_the_last_findings_and_logs_why():
    doc = fixture("training-hung")
    watch, metrics, log = watch_of([doc, RoundFailed("cannot reach a Ray cluster at 10.0.0.1:6380"), doc])
    watch.run(max_rounds=1)
    watch.one_round()
    text = scrape(metrics)
    assert series(text, "rldoctor_up") == {(): 0.0}
    assert finding_keys(text) == expected("training-hung")  # unknown, so not resolved
    assert log.events[-1]["event"] == "round_failed"
    assert "10.0.0.1:6380" in log.events[-1]["reason"]
    assert series(text, "rldoctor_rounds_total") == {(("result", "failed"),): 1.0, (("result", "ok"),): 1.0}
    watch.one_round()  # the next round reaches the cluster again: nothing opened twice
    text = scrape(metrics)
    assert series(text, "rldoctor_up") == {(): 1.0}
    assert [e["event"] for e in log.events].count("opened") == len(expected("training-hung"))


def test_muted_findings_have_no_series_and_no_transitions():
    hung = next(code for code, _, subject in expected("training-hung") if code == "RLD605")
    watch, metrics, log = watch_of([fixture("training-hung")], ignores=(hung,))
    watch.run(max_rounds=1)
    text = scrape(metrics)
    assert "RLD605" not in {c for c, _, _ in finding_keys(text)}
    assert "RLD605" not in {e["code"] for e in log.events}
    assert series(text, "rldoctor_muted_findings") == {(): 1.0}


def test_a_healthy_cluster_has_no_series_per_node_or_actor():
    watch, metrics, _ = watch_of([fixture("healthy-3node")])
    watch.run(max_rounds=1)
    text = scrape(metrics)
    node_ids = [n["node_id"] for n in fixture("healthy-3node")["nodes"]]
    assert not any(node_id[:8] in text for node_id in node_ids)
    lines = [line for line in text.splitlines() if line.startswith("rldoctor_")]
    assert len(lines) < len(REGISTRY.checks) + 15  # one status per check and a few figures


def test_messages_in_the_log_and_the_metrics_are_redacted():
    from rldoctor.watch import transitions as watch_transitions

    watch, _, log = watch_of([])
    secret = "ray-token-" + "a" * 40
    report = watch.diagnose_round(fixture("training-hung"))
    report.active_findings[0].message += f" RAY_AUTH_TOKEN={secret}"
    now = watch_transitions.current(report, {})
    assert any("RAY_AUTH_TOKEN" in f.message for f in now.values())
    assert all(secret not in f.message for f in now.values())
    for event in watch_transitions.changes({}, now, datetime.now(timezone.utc)):
        log.write(event)
    assert secret not in log._out.getvalue()


def test_a_watch_closes_the_ticket_of_a_crash_older_than_its_window(monkeypatch, tmp_path):
    """`rldoctor watch` itself (run_watch) judges RLD403 with its own window: crashes 11
    minutes old are a fail in `check` (24 h) but info in a watch of --interval 15 (10 min):
    no ticket stays open for them, the finding (and its series) is still there."""
    import signal

    from rldoctor.watch import rounds as watch_module
    from rldoctor.snapshot import Snapshot

    data = fixture("worker-faults")
    newest = max(w["end_time_ms"] for w in data["workers"]["dead"] if w["exit_type"] == "SYSTEM_ERROR")
    data["created_at"] = datetime.fromtimestamp(newest / 1000 + 660, timezone.utc).isoformat()
    diagnosis = Diagnosis(REGISTRY, REGISTRY.checks)
    checked = diagnosis.run(Snapshot(data), {})
    assert {f.severity.label for f in checked.findings if f.code == "RLD403"} == {"fail"}

    class OneSnapshot(Replay):
        def __init__(self, address, timeout_s):
            super().__init__([data])

        def stop(self):
            pass

    monkeypatch.setattr(watch_module, "CollectorProcess", OneSnapshot)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    log = tmp_path / "transitions.jsonl"
    try:
        code = watch_module.run_watch("127.0.0.1:1", 15, 0, "127.0.0.1", str(log), diagnosis, 10,
                                      max_rounds=1)
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    assert code == 0
    opened = [json.loads(line) for line in log.read_text().splitlines()]
    assert {e["severity"] for e in opened if e["code"] == "RLD403"} == {"info"}, opened


def _rss_anon_mib() -> float:
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("RssAnon:")).split()[1]) / 1024


def test_the_collector_child_hands_back_the_free_memory_glibc_keeps_after_a_round():
    """What a round leaves behind: blocks freed between others still in use, which glibc
    keeps (RSS) until malloc_trim gives their pages back."""
    from rldoctor.watch.gcs_child import give_back_free_memory

    blocks = [bytes(4000) + bytes([i % 251]) for i in range(12_000)]  # ~46 MiB, past pymalloc
    kept = blocks[::16]
    del blocks
    held = _rss_anon_mib()
    assert give_back_free_memory() is True
    assert held - _rss_anon_mib() > 20, "malloc_trim gave nothing back"
    assert len(kept) == 750
