"""The `rldoctor watch` part of `make demo`: metrics, a real Prometheus, an alert firing.

On the demo's running cluster: `rldoctor watch --interval 2` (its transition log on this
terminal), a Prometheus server on a free port scraping it every second with the shipped
rules (alerts/rldoctor.rules.yml), then a crash-looping actor: the RLD401 series appears,
the page alert fires in Prometheus, the actor is stopped and both go away; SIGTERM ends
the watch. Without a prometheus binary, /metrics is read directly instead.

Each step waits for what it shows (the watch up, the series, the alert, the series gone),
never for a time, with deadlines that hold on a busy host: a round there takes seconds, the
first one up to --timeout (30 s) after its child's start, and the alert needs two rounds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from faults import actor_that_crashes_three_times
from localcluster import BIN, LocalCluster, free_ports

ROOT = Path(__file__).resolve().parent.parent
FIRST_ROUND_S = 120.0  # the collector child's start, its join and one probe per node, loaded
ROUNDS_S = 90.0  # a few rounds of a loaded host (the alert needs the series in two)


def _wait(predicate, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.5)


def _metric_lines(port: int, code: str) -> list[str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return []
    return [line for line in text.splitlines()
            if line.startswith("rldoctor_finding{") and f'code="{code}"' in line]


def _up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return "\nrldoctor_up 1.0" in r.read().decode()
    except OSError:
        return False


def demo_watch(cluster: LocalCluster) -> int:
    from prometheus import BINARY, PrometheusServer

    port = free_ports(1)[0]
    print(f"\nrunning: rldoctor watch --address {cluster.address} --interval 2 "
          f"--metrics-port {port}   (transitions below, one JSON line each)", flush=True)
    watch = subprocess.Popen([str(BIN / "rldoctor"), "watch", "--address", cluster.address,
                              "--interval", "2", "--metrics-port", str(port)],
                             env=cluster.client_env(), start_new_session=True)
    prom = PrometheusServer([f"127.0.0.1:{port}"], [ROOT / "alerts" / "rldoctor.rules.yml"]) \
        if os.path.exists(BINARY) else None
    try:
        if prom:
            prom.start()
            print(f"Prometheus {prom.url} scrapes it every second with alerts/rldoctor.rules.yml",
                  flush=True)
        if not _wait(lambda: _up(port), FIRST_ROUND_S):  # joins, starts one probe per node
            print(f"the watch did not reach the cluster within {FIRST_ROUND_S:.0f} s", flush=True)
            return 1
        print("\ninjecting a fault: an actor on node 1 that crashes three times (max_restarts=5)",
              flush=True)
        actor_id = actor_that_crashes_three_times(cluster, cluster.nodes[1].node_id)
        lines = _wait(lambda: [x for x in _metric_lines(port, "RLD401") if "fail" in x], ROUNDS_S)
        print("\n/metrics now serves:\n  " + "\n  ".join(lines or ["(nothing yet)"]), flush=True)
        if prom:
            firing = _wait(lambda: [a for a in prom.alerts() if a["state"] == "firing"
                                    and a["labels"].get("alertname") == "RldoctorFailFinding"
                                    and a["labels"].get("code") == "RLD401"], ROUNDS_S)
            for a in firing:
                print(f"\nPrometheus /api/v1/alerts: {a['labels']['alertname']} {a['state']} "
                      f"(severity={a['labels']['severity']})\n  summary: {a['annotations']['summary']}"
                      f"\n  description: {a['annotations']['description']}\n  runbook: "
                      f"{a['annotations']['runbook']}", flush=True)
            if not firing:
                print(f"the alert did not fire within {ROUNDS_S:.0f} s", flush=True)
        print("\nstopping the fault: ray.kill(the actor)", flush=True)
        cluster.run_driver('ray.kill(ray.get_actor("flaky-sim", namespace="e2e"), '
                           'no_restart=True)\nprint("=>", "killed")')
        gone = _wait(lambda: not _metric_lines(port, "RLD401"), ROUNDS_S)
        print(f"RLD401 series {'gone' if gone else 'still there'} (actor {actor_id[:12]})",
              flush=True)  # its "resolved" line was logged in the round that dropped it
        return 0 if lines and gone else 1
    finally:
        watch.send_signal(signal.SIGTERM)
        try:
            watch.wait(20)
        except subprocess.TimeoutExpired:
            watch.kill()
        if prom:
            prom.stop()
        sys.stdout.flush()
