"""End to end: a real Prometheus server scrapes `rldoctor watch` on a real 3-node cluster.

A crash-looping actor makes rldoctor_finding{code="RLD401"} appear within two rounds and
the shipped alert (alerts/rldoctor.rules.yml) go pending or firing in Prometheus's own
/api/v1/alerts, with the finding's message; stopping the fault removes the series within
two rounds; a worker node killed pages as RLD101 and its probe is dropped (never more
than one probe per node); SIGTERM ends the watch within seconds with no probe left on
the cluster.
The tests run in file order on one cluster, one watch and one Prometheus; the last one
kills the head of a 1-node cluster of its own under a running watch.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time

import pytest

from conftest import RLDOCTOR, ROOT
from faults import actor_that_crashes_three_times
from localcluster import LocalCluster, NodeSpec, free_ports
from prometheus import BINARY, PrometheusServer
from test_e2e_reliability import wait_clean
from test_watch_cli import scrape

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(not __import__("os").path.exists(BINARY),
                                 reason="prometheus missing: run `make prometheus`")]

INTERVAL_S = 3.0
SCRAPE_S = 1.0
# Two rounds, plus a scrape and the time a round itself takes on a busy 2-core machine.
TWO_ROUNDS_S = 2 * INTERVAL_S + SCRAPE_S + 4.0
# Growth of the collector child over rounds 5-20 (test_the_collector_childs_memory_stays_flat_...):
# OWN counts its RSS less file and shared pages (its anonymous memory), RSS all of it.
# Measured on a loaded 2-core host (2026-12-07): OWN +0.07 MiB (no trim) and +0.4 MiB (with
# malloc_trim), RSS +0.07 and +8.4 MiB; earlier runs saw RSS +12 to +49 MiB (a fresh clone's
# full run, the child still warming up). Unbounded arenas grew 1.5-5 MiB a round, all of it
# anonymous: 16 MiB catches even the low end of that (22 MiB in 15 rounds) with 40x margin
# over what a healthy child does; RSS keeps its bar over the 49 MiB seen.
OWN_GROWTH_BAR_MIB = 16
RSS_GROWTH_BAR_MIB = 65


class Watching:
    def __init__(self, cluster, tmp_path, interval_s: float = INTERVAL_S):
        self.port = free_ports(1)[0]
        self.log = tmp_path / "transitions.jsonl"
        self.proc = subprocess.Popen(
            [RLDOCTOR, "watch", "--address", cluster.address, "--interval", str(interval_s),
             "--metrics-port", str(self.port), "--log", str(self.log)],
            env=cluster.client_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)

    def events(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture(scope="module")
def watching(cluster3, tmp_path_factory):
    watch = Watching(cluster3, tmp_path_factory.mktemp("watch"))
    try:
        with PrometheusServer([f"127.0.0.1:{watch.port}"], [ROOT / "alerts" / "rldoctor.rules.yml"],
                              interval_s=SCRAPE_S) as prom:
            deadline = time.monotonic() + 60
            while not prom.query("rldoctor_up == 1"):
                assert watch.proc.poll() is None, watch.proc.communicate()
                assert time.monotonic() < deadline, f"no round scraped in 60s: {prom.log_tail()}"
                time.sleep(0.5)
            yield watch, prom
    finally:
        watch.stop()


def wait_until(predicate, timeout_s: float, step_s: float = 0.25):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step_s)


def test_healthy_cluster_is_up_with_no_restart_finding(watching):
    watch, prom = watching
    assert prom.targets_up()
    assert prom.query('rldoctor_finding{code="RLD401"}') == []
    statuses = prom.query('rldoctor_check_status{code="RLD401"}')
    assert [s["metric"]["status"] for s in statuses] == ["ok"]
    # kept between rounds: one probe per node of the 3-node cluster, never more
    assert prom.query("rldoctor_probes")[0]["value"][1] == "3"
    # a steady round: the first one also joins the cluster and starts the probes (about 4 s
    # on a loaded 2-core host), so the duration is read once a second round was scraped
    assert wait_until(lambda: prom.query("sum(rldoctor_rounds_total) >= 2"), TWO_ROUNDS_S), prom.log_tail()
    rounds = float(prom.query("rldoctor_run_duration_seconds")[0]["value"][1])
    assert 0 < rounds < INTERVAL_S


def test_the_collector_childs_memory_stays_flat_over_rounds(cluster3, tmp_path):
    """Each round's sections run on threads; without a bound on glibc's malloc arenas the
    child grew by 1.5-5 MiB a round (232 MiB after 5 rounds, 336 after 25, 416 after 125).
    Where the rest went (benchmarks/watch_child_memory.py, 90 rounds at --interval 1, with
    the arenas bounded): the Python heap (46 MiB) and glibc's bytes in use (150-154 MiB) stay
    flat; the free bytes glibc kept grew 20 -> 52 MiB by round 20 (the child now hands them
    back after each round, malloc_trim); the pages of the node's object store that the
    network probe's objects pass through (shared memory, 48-57 MiB by round 90, bounded by
    the store's size) are the cluster's memory mapped in, not the child's own."""
    import psutil

    watch = Watching(cluster3, tmp_path, interval_s=1.0)
    try:
        me = psutil.Process(watch.proc.pid)
        rss, own = {}, {}
        deadline = time.monotonic() + 120
        while len(rss) < 2 and time.monotonic() < deadline:
            assert watch.proc.poll() is None, watch.proc.communicate()
            found = re.search(r'^rldoctor_rounds_total\{result="ok"\} (\S+)$', scrape(watch.port), re.M)
            done = float(found.group(1)) if found else 0
            for mark in (5, 20):
                if done >= mark and mark not in rss:
                    [child] = me.children()
                    memory = child.memory_info()
                    rss[mark] = memory.rss / 2**20
                    own[mark] = (memory.rss - memory.shared) / 2**20  # less files, shared memory
                    assert child.environ().get("MALLOC_ARENA_MAX") == "2"
            time.sleep(0.2)
        assert len(rss) == 2, f"20 rounds did not end in 120 s: {rss}"
        print(f"collector child RSS after 5 and 20 rounds: {rss}; less shared pages: {own}")
        assert own[20] - own[5] < OWN_GROWTH_BAR_MIB, (
            f"the collector child's own memory grew {own[20] - own[5]:.0f} MiB in 15 rounds: {own}")
        assert rss[20] - rss[5] < RSS_GROWTH_BAR_MIB, (
            f"the collector child grew {rss[20] - rss[5]:.0f} MiB in 15 rounds: {rss}")
    finally:
        watch.stop()


def test_crash_loop_gives_the_series_within_two_rounds_and_the_alert(watching, cluster3):
    watch, prom = watching
    node1 = cluster3.nodes[1].node_id
    actor_id = actor_that_crashes_three_times(cluster3, node1)
    fault_done = time.monotonic()
    subject = f"actor:{actor_id}"
    query = f'rldoctor_finding{{code="RLD401",severity="fail",subject="{subject}"}}'
    found = wait_until(lambda: prom.query(query), TWO_ROUNDS_S)
    assert found, (f"no {query} within {TWO_ROUNDS_S}s; watch log: {watch.events()[-5:]}")
    seen_after = time.monotonic() - fault_done
    assert found[0]["metric"]["name"] == "actor-restarts"
    assert found[0]["value"][1] == "1"

    def alert():  # its description is the finding's latest message: the actor is up again now
        return [a for a in prom.alerts() if a["labels"].get("alertname") == "RldoctorFailFinding"
                and a["labels"].get("subject") == subject and a["state"] in ("pending", "firing")
                and "crash loop" in a["annotations"].get("description", "")]

    alerts = wait_until(alert, TWO_ROUNDS_S)
    assert alerts, prom.alerts()
    assert alerts[0]["labels"]["code"] == "RLD401" and alerts[0]["labels"]["severity"] == "page"
    description = alerts[0]["annotations"]["description"]
    assert "crash loop" in description and "EnvSimulator" in description, description
    assert "rldoctor explain RLD401" in alerts[0]["annotations"]["runbook"]
    opened = [e for e in watch.events() if e["event"] == "opened" and e["subject"] == subject
              and e["severity"] == "fail"]
    # opened at fail when the round saw it restarting, or up again after three restarts
    assert opened and opened[0]["code"] == "RLD401"
    assert "crash loop" in opened[0]["message"] or "is restarting now" in opened[0]["message"]
    print(f"RLD401 series seen {seen_after:.1f}s after the fault")


def test_stopping_the_fault_removes_the_series_within_two_rounds(watching, cluster3):
    watch, prom = watching
    cluster3.run_driver('ray.kill(ray.get_actor("flaky-sim", namespace="e2e"), no_restart=True)\n'
                        'print("=>", "killed")')
    stopped = time.monotonic()
    gone = wait_until(lambda: not prom.query('rldoctor_finding{code="RLD401"}'), TWO_ROUNDS_S)
    assert gone, (prom.query('rldoctor_finding{code="RLD401"}'), watch.events()[-5:])
    print(f"RLD401 series gone {time.monotonic() - stopped:.1f}s after the fault stopped")
    resolved = [e for e in watch.events() if e["event"] == "resolved" and e["code"] == "RLD401"]
    assert resolved and all(e["subject"].startswith("actor:") for e in resolved)
    assert wait_until(lambda: not [a for a in prom.alerts() if a["labels"].get("code") == "RLD401"],
                      3 * SCRAPE_S + 2)


def test_a_node_lost_pages_as_rld101_and_its_probe_is_dropped(watching, cluster3):
    watch, prom = watching
    killed = cluster3.kill_node(2)
    query = f'rldoctor_finding{{code="RLD101",severity="fail",subject="node:{killed}"}}'
    assert wait_until(lambda: prom.query(query), TWO_ROUNDS_S + 5), watch.events()[-5:]
    assert wait_until(lambda: [a for a in prom.alerts() if a["labels"].get("code") == "RLD101"
                               and a["labels"].get("alertname") == "RldoctorFailFinding"],
                      TWO_ROUNDS_S), prom.alerts()
    # never more than one probe per node; once the GCS marks the node dead, its probe is gone
    probes = []

    def two_probes():
        probes.append(float(prom.query("rldoctor_probes")[0]["value"][1]))
        return probes[-1] == 2

    assert wait_until(two_probes, 60, step_s=1), probes
    assert max(probes) <= 3
    assert prom.query("rldoctor_up")[0]["value"][1] == "1"


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_sigterm_ends_the_watch_within_seconds_with_no_probe_left(watching, cluster3):
    watch, prom = watching
    assert watch.proc.poll() is None
    watch.proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    out, err = watch.proc.communicate(timeout=20)
    took = time.monotonic() - started
    assert watch.proc.returncode == 0, err
    assert took < 10, f"SIGTERM took {took:.1f}s"
    assert "probes removed" in err and "Traceback" not in err
    assert wait_clean(cluster3) == {"actors": 0, "placement_groups": 0, "tasks": 0}
    assert not [line for line in out.splitlines() if line.strip()]  # transitions went to --log
    print(f"SIGTERM to exit: {took:.1f}s")


def test_head_gone_is_up_0_within_two_rounds_and_the_watch_goes_on(tmp_path):
    """The head dies under a running watch: its Ray driver would wait a minute for the GCS;
    the watch instead fails the next round at once (rldoctor_up 0, the reason logged)."""
    with LocalCluster([NodeSpec()], log_monitor=False) as cluster:
        watch = Watching(cluster, tmp_path, interval_s=1.0)
        try:
            assert wait_until(lambda: "\nrldoctor_up 1.0" in scrape(watch.port), 60), \
                watch.proc.poll()
            cluster.kill_node(0)
            killed = time.monotonic()
            assert wait_until(lambda: "\nrldoctor_up 0.0" in scrape(watch.port), 2 * 1.0 + 8)
            print(f"rldoctor_up 0 {time.monotonic() - killed:.1f}s after the head died")
            failed = [e for e in watch.events() if e["event"] == "round_failed"]
            assert failed and f"cannot reach a Ray cluster at {cluster.address}" in failed[0]["reason"]
            time.sleep(2.5)
            assert watch.proc.poll() is None  # it goes on trying
            assert len([e for e in watch.events() if e["event"] == "round_failed"]) > len(failed)
        finally:
            watch.stop()
        assert watch.proc.returncode == 0
