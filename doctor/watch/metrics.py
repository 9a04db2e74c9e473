"""What `rldoctor watch` serves on /metrics, in the Prometheus text format.

The names are a contract (docs/architecture.md). Every scrape shows the latest round only: a
finding that is gone has no series at all (never a 0 left behind), and series exist
only for findings' subjects, checks and trainings, never one per node or actor of a
healthy cluster. Built with prometheus_client (it comes with ray[default]); imports no ray.

    rldoctor_finding{code, name, severity, subject}            1 per finding that counts
    rldoctor_finding_rounds{code, name, severity, subject}     consecutive rounds seen
    rldoctor_finding_message{code, subject, message}           1, the finding's message
    rldoctor_check_status{code, name, status}                  1 per check
    rldoctor_muted_findings                                    findings muted this round
    rldoctor_up                                                1 when the last round reached the cluster
    rldoctor_last_run_timestamp_seconds, rldoctor_run_duration_seconds
    rldoctor_rounds_total{result}                              rounds ok / failed since start
    rldoctor_probes                                            probes kept on the cluster
    rldoctor_training_env_steps_per_second{training}
    rldoctor_training_env_runners{training, state}             configured, healthy, restarting, dead
    rldoctor_training_oldest_call_age_seconds{training}        the oldest in-flight env runner call
"""

from __future__ import annotations

import threading

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily


class WatchMetrics:
    """A prometheus_client collector over the latest round; `update`/`down` replace it whole."""

    def __init__(self):
        self._lock = threading.Lock()
        self._up = 0
        self._started = None
        self._duration = None
        self._findings: list = []  # watch_transitions.Open
        self._checks: list[tuple[str, str, str]] = []
        self._trainings: list[dict] = []
        self._muted = 0
        self._probes = None
        self._rounds = {"ok": 0, "failed": 0}

    def update(self, report, findings: dict, started: float, duration: float,
               probes: int | None = None) -> None:
        """A round that reached the cluster: its findings, checks and trainings."""
        checks = [(r.code, r.name, r.status) for r in report.results]
        trainings = [_training_figures(t) for t in report.training or []]
        with self._lock:
            self._up = 1
            self._started, self._duration = started, duration
            self._findings = sorted(findings.values(), key=lambda f: f.key)
            self._checks = checks
            self._trainings = trainings
            self._muted = len(report.muted_findings)
            self._probes = probes
            self._rounds["ok"] += 1

    def down(self, started: float, duration: float) -> None:
        """A round that did not reach the cluster: up 0; the last round's findings stay shown
        (the cluster could not be examined, so nothing is known to be resolved)."""
        with self._lock:
            self._up = 0
            self._started, self._duration = started, duration
            self._rounds["failed"] += 1

    def describe(self):
        return []  # the families change from round to round: no fixed description

    def collect(self):
        with self._lock:
            yield from self._families()

    def _families(self):
        finding = GaugeMetricFamily("rldoctor_finding", "1 for each finding of the latest round "
                                    "(muted ones left out)",
                                    labels=["code", "name", "severity", "subject"])
        rounds = GaugeMetricFamily("rldoctor_finding_rounds", "Consecutive rounds the finding has "
                                   "been seen in, the latest included",
                                   labels=["code", "name", "severity", "subject"])
        message = GaugeMetricFamily("rldoctor_finding_message", "1, with the finding's message "
                                    "as a label (for alert annotations)",
                                    labels=["code", "subject", "message"])
        for f in self._findings:
            finding.add_metric([f.code, f.name, f.severity, f.subject], 1)
            rounds.add_metric([f.code, f.name, f.severity, f.subject], f.rounds)
            message.add_metric([f.code, f.subject, f.message], 1)
        yield from (finding, rounds, message)
        status = GaugeMetricFamily("rldoctor_check_status", "1 for each check's status in the "
                                   "latest round", labels=["code", "name", "status"])
        for code, name, state in self._checks:
            status.add_metric([code, name, state], 1)
        yield status
        yield GaugeMetricFamily("rldoctor_muted_findings", "Findings muted in the latest round "
                                "(--ignore or the ignore file)", value=self._muted)
        yield GaugeMetricFamily("rldoctor_up", "1 when the latest round reached the cluster, 0 "
                                "when it did not (the reason is in the log)", value=self._up)
        if self._started is not None:
            yield GaugeMetricFamily("rldoctor_last_run_timestamp_seconds", "When the latest round "
                                    "started (Unix time)", value=self._started)
            yield GaugeMetricFamily("rldoctor_run_duration_seconds", "Wall seconds the latest "
                                    "round took (collect and checks)", value=self._duration)
        total = CounterMetricFamily("rldoctor_rounds", "Rounds since the watch started",
                                    labels=["result"])
        for result, count in sorted(self._rounds.items()):
            total.add_metric([result], count)
        yield total
        if self._probes is not None:
            yield GaugeMetricFamily("rldoctor_probes", "rldoctor probe actors kept on the cluster "
                                    "between rounds (at most one per node)", value=self._probes)
        yield from self._training_families()

    def _training_families(self):
        rate = GaugeMetricFamily("rldoctor_training_env_steps_per_second", "Env steps per second "
                                 "sampled by the training's env runners", labels=["training"])
        runners = GaugeMetricFamily("rldoctor_training_env_runners", "The training's env runners: "
                                    "configured, healthy (alive), restarting, dead",
                                    labels=["training", "state"])
        oldest = GaugeMetricFamily("rldoctor_training_oldest_call_age_seconds", "Age of the oldest "
                                   "in-flight env runner call (0 when none is in flight)",
                                   labels=["training"])
        for t in self._trainings:
            if t["env_steps_per_s"] is not None:
                rate.add_metric([t["training"]], t["env_steps_per_s"])
            for state, count in t["runners"].items():
                runners.add_metric([t["training"], state], count)
            oldest.add_metric([t["training"]], t["oldest_call_s"])
        yield from (rate, runners, oldest)


def _training_figures(t: dict) -> dict:
    """One training of the report's `training` list, as the figures the metrics show."""
    ages = [m["call_age_s"] for m in t.get("runners") or [] if m.get("call_age_s") is not None]
    return {"training": str(t.get("subject") or t.get("job_id") or "?"),
            "env_steps_per_s": t.get("env_steps_per_s"),
            "runners": {"configured": t.get("runners_configured") or 0,
                        "healthy": t.get("runners_alive") or 0,
                        "restarting": t.get("runners_restarting") or 0,
                        "dead": t.get("runners_dead") or 0},
            "oldest_call_s": max(ages, default=0.0)}


def serve(metrics: WatchMetrics, port: int, host: str):
    """Serve /metrics on host:port (a thread); returns (server, thread). Also the watch
    process's own figures (process_resident_memory_bytes, ...)."""
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.process_collector import ProcessCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    ProcessCollector(registry=registry)
    return start_http_server(port, addr=host, registry=registry)
