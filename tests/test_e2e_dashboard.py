"""End to end: a cluster reached only through one forwarded dashboard port.

A 3-node Ray cluster (the pinned Ray) lives in a network namespace of its own; the test,
like a laptop with `kubectl port-forward svc/<cluster>-head-svc 8265`, reaches it through
one forwarded port and nothing else (tests/portforward.py). `rldoctor check --address
http://127.0.0.1:<port>` must diagnose it as the GCS path does from inside the namespace,
a crash-looping actor included, without importing ray on the client, and leave no job and
no actor behind. Token authentication is on: no token and a wrong token are one line each.
`collect --bundle` through the same port holds every node's logs, host facts and stacks
(of calls hung in a user's `MyEnv.step` on every node), redacted as on the GCS path, and
`watch` through it serves the crash loop on /metrics and leaves no job after SIGTERM.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
import urllib.request
from dataclasses import dataclass

import pytest

from conftest import RLDOCTOR, check_json, run_rldoctor
from faults import DYING_SIMULATOR, HUNG_RUNNER, actor_that_crashes_three_times
from localcluster import LocalCluster, NodeSpec, free_ports
from netns import Hosts, missing_tools
from portforward import PortForward
from test_e2e_reliability import wait_clean
from test_watch_cli import scrape

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def hosts():
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    assert missing_tools() is None, missing_tools()
    with Hosts(1) as made:
        yield made


@pytest.fixture(scope="module")
def cluster(hosts):
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"},
                      command_prefix=hosts.prefix(0)) for _ in range(3)]
    with LocalCluster(specs) as made:
        yield made


@pytest.fixture(scope="module")
def forwarded(cluster, hosts):
    with PortForward(hosts.prefix(0), "127.0.0.1", cluster.dashboard_port) as fwd:
        yield fwd


@pytest.fixture(scope="module")
def crash_loop(cluster):
    return actor_that_crashes_three_times(cluster, cluster.nodes[2].node_id)


def laptop_env(cluster, **extra) -> dict:
    """The test's own namespace, with only the token file of the cluster."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(cluster.home)
    env["RAY_AUTH_TOKEN_PATH"] = str(cluster.token_path)
    env.update(extra)
    return env


def check_through_dashboard(cluster, url: str, out) -> tuple[int, dict, list[str]]:
    """The real CLI, in a Python that reports afterwards whether ray was ever imported."""
    code = ("import sys\nfrom rldoctor.cli import main\n"
            f"try:\n    main(['check', '--address', {url!r}, '--format', 'json', "
            f"'--output', {str(out)!r}])\nexcept SystemExit as exc:\n"
            "    print('EXIT', exc.code, 'RAY', 'ray' in sys.modules, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=180, env=laptop_env(cluster))
    last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    assert last.startswith("EXIT"), proc.stderr[-3000:]
    _, exit_code, _, ray_imported = last.split()
    assert ray_imported == "False", "the client of the dashboard path imported ray"
    return int(exit_code), json.loads(out.read_text()), proc.stderr.splitlines()[:-1]


def rldoctor_jobs(cluster, url: str) -> list[dict]:
    req = urllib.request.Request(url + "/api/jobs/", headers={
        "Authorization": f"Bearer {cluster.token}", "User-Agent": "rldoctor-tests"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        jobs = json.load(resp)
    return [j for j in jobs if (j.get("submission_id") or "").startswith("rldoctor-")]


def warn_fail(report: dict) -> set[tuple[str, str]]:
    return {(f["code"], f["subject"]) for f in report["findings"] if f["severity"] in ("warn", "fail")}


def test_the_dashboard_port_alone_diagnoses_like_the_gcs_path(cluster, forwarded, crash_loop,
                                                              tmp_path):
    inside = check_json(cluster)  # the GCS path, run inside the cluster's namespace
    code, report, _ = check_through_dashboard(cluster, forwarded.url, tmp_path / "r.json")
    assert code == inside.code, (code, inside)
    # every node, each with its own row
    ids = {n.node_id for n in cluster.nodes}
    rows = report["cluster"]["rows"]
    assert {row["node_id"] for row in rows} == ids, report["cluster"]
    # measured from inside the cluster: round trips and transfers, as on the GCS path
    assert all(row["rtt_p50_ms"] is not None and row["bandwidth_mib_s"] for row in rows), rows
    assert report["cluster"]["ray_version"] == "2.60.0"
    # the fault, on the right actor
    restarts = [f for f in report["findings"] if f["code"] == "RLD401"]
    assert restarts and any(crash_loop in f["subject"] for f in restarts), report["findings"]
    # the same warn/fail codes as the GCS path
    assert warn_fail(report) == warn_fail(inside.json()), (report["findings"], inside)
    # the report says which path examined the cluster and with which Ray
    assert report["source"]["path"] == "dashboard"
    assert report["source"]["cluster_ray_version"] == "2.60.0"
    assert any("examined through the dashboard" in n for n in report["notes"])
    # nothing left behind: no job, no probe actor, no copy of the job's output on the head
    assert rldoctor_jobs(cluster, forwarded.url) == []
    assert not any(wait_clean(cluster).values())
    assert_no_output_left(cluster, report["source"]["job"])


def test_the_second_run_skips_the_upload(cluster, forwarded, tmp_path):
    _, report, _ = check_through_dashboard(cluster, forwarded.url, tmp_path / "r.json")
    assert any("already on the cluster" in n for n in report["notes"]), report["notes"]
    assert rldoctor_jobs(cluster, forwarded.url) == []


def test_collect_output_through_the_dashboard(cluster, forwarded, tmp_path):
    out = tmp_path / "snap.json"
    result = run_rldoctor("collect", "--address", forwarded.url, "--output", str(out),
                          env=laptop_env(cluster))
    assert result.code == 0, result
    doc = json.loads(out.read_text())
    assert doc["schema"] == "rldoctor.snapshot/v1" and len(doc["nodes"]) == 3
    assert doc["collectors"]["hosts"]["status"] == "ok" and len(doc["hosts"]) == 3
    assert cluster.token not in out.read_text() + result.stdout + result.stderr
    assert rldoctor_jobs(cluster, forwarded.url) == []
    assert_no_output_left(cluster, doc["source"]["job"])


@pytest.mark.parametrize("token", [None, "not-this-clusters-token-42"])
def test_token_auth_no_token_or_wrong_token(cluster, forwarded, token):
    env = laptop_env(cluster)
    env.pop("RAY_AUTH_TOKEN_PATH")
    if token:
        env["RAY_AUTH_TOKEN"] = token
    result = run_rldoctor("check", "--address", forwarded.url, env=env)
    lines = result.stderr.strip().splitlines()
    assert result.code == 3 and len(lines) == 1, result
    assert ("found no token" in lines[0]) if token is None else ("refused the token" in lines[0])
    assert cluster.token not in result.stdout + result.stderr
    if token:
        assert token not in result.stdout + result.stderr
    assert rldoctor_jobs(cluster, forwarded.url) == []


# -- watch through the dashboard ----------------------------------------------------------------

def test_watch_through_the_dashboard_serves_the_crash_loop_and_sigterm_leaves_no_job(
        cluster, forwarded, crash_loop, hung_calls, tmp_path):
    """One short job per round through the forwarded port; SIGTERM mid-round stops and
    deletes that round's job. (Requests hung_calls first, so that its calls have aged into
    the bundle's stack targets by the bundle's test, below.)"""
    port = free_ports(1)[0]
    log = tmp_path / "transitions.jsonl"
    proc = subprocess.Popen([RLDOCTOR, "watch", "--address", forwarded.url, "--interval", "4",
                             "--metrics-port", str(port), "--log", str(log)],
                            env=laptop_env(cluster), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline, metrics = time.monotonic() + 60, ""
        while time.monotonic() < deadline and proc.poll() is None:
            metrics = scrape(port)
            if "rldoctor_up 1.0" in metrics and 'code="RLD401"' in metrics:
                break
            time.sleep(0.5)
        found = [line for line in metrics.splitlines()
                 if line.startswith("rldoctor_finding{") and 'code="RLD401"' in line]
        assert found and any(crash_loop in line for line in found), (metrics[-3000:],
                                                                     proc.poll())
        opened = [json.loads(line) for line in log.read_text().splitlines()]
        assert any(e.get("event") == "opened" and e.get("code") == "RLD401" for e in opened), opened
        # SIGTERM while a round's job is on the cluster
        deadline = time.monotonic() + 30
        while not rldoctor_jobs(cluster, forwarded.url) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rldoctor_jobs(cluster, forwarded.url), "no round in flight to interrupt"
        stopped_at = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=45)
        print(f"watch through the dashboard: SIGTERM to exit {time.monotonic() - stopped_at:.1f}s")
        assert proc.returncode == 0, err[-2000:]
        assert "Traceback" not in err and cluster.token not in err, err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rldoctor_jobs(cluster, forwarded.url) == []
    assert not any(wait_clean(cluster).values())


# -- the incident bundle through the dashboard ------------------------------------------------

CRASH_SECRET = "crashsecret-9Mf3Rb7Kx2Hn"
MASK = "***redacted***"
LONG_CALL_S = 10  # rldoctor.cluster.stack_targets.LONG_CALL_S: calls this old get a stack

HUNG_CALLS = ('''\
import logging, os, sys, time
import ray

'''
    + HUNG_RUNNER + '\n' + DYING_SIMULATOR + '\n' + '''\
ray.init(address=sys.argv[1], namespace="hung", logging_level=logging.ERROR, log_to_driver=False)
nodes = sys.argv[3:]
sim = Simulator.options(label_selector={"ray.io/node-id": nodes[-1]},
                        runtime_env={"env_vars": {"SIM_PASSWORD": sys.argv[2]}}).remote()
try:
    ray.get(sim.connect.remote(), timeout=60)
except Exception:
    pass
runners = [Runner.options(label_selector={"ray.io/node-id": n}).remote() for n in nodes]
pids = ray.get([r.pid.remote() for r in runners])
calls = [r.sample.remote() for r in runners]
print("PIDS", " ".join(map(str, pids)), flush=True)
time.sleep(3600)
''')


@dataclass
class HungCalls:
    pids: dict  # node id -> pid of the worker hung in MyEnv.step
    line: int
    started: float


@pytest.fixture(scope="module")
def hung_calls(cluster, tmp_path_factory):
    """One call per node hung in `MyEnv.step`, and a dead worker whose last words hold a
    password from its runtime_env env_vars: a driver that runs until the module ends."""
    script = tmp_path_factory.mktemp("hung") / "my_env.py"
    script.write_text(HUNG_CALLS)
    ids = [n.node_id for n in cluster.nodes]
    proc = subprocess.Popen([*cluster.client_prefix, sys.executable, str(script), cluster.address,
                             CRASH_SECRET, *ids], env=cluster.client_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 90
        line = ""
        while not line.startswith("PIDS") and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, f"the hung driver exited {proc.returncode}"
        assert line.startswith("PIDS"), "the hung calls did not start"
        pids = dict(zip(ids, map(int, line.split()[1:])))
        hung_line = next(i for i, l in enumerate(HUNG_CALLS.splitlines(), 1) if "HUNG LINE" in l)
        yield HungCalls(pids, hung_line, time.monotonic())
    finally:
        proc.kill()
        proc.wait()


def bundle_files(path) -> dict[str, bytes]:
    """Every member of the bundle by its name below the top folder, plus the raw archive."""
    found = {"<archive>": gzip.decompress(path.read_bytes())}
    with tarfile.open(fileobj=io.BytesIO(found["<archive>"])) as tar:
        for member in tar:
            if member.isfile():
                found[member.name.split("/", 1)[1]] = tar.extractfile(member).read()
    return found


def driver_log_left(cluster, submission_id: str) -> list[str]:
    """The job's log file on the head (Ray keeps it after the job is deleted), if still there."""
    logs = list(cluster.temp_dir.glob("session_*/logs"))
    assert logs and any((d / "raylet.out").exists() for d in logs), logs  # the right folder
    return [str(p) for d in logs for p in d.glob(f"job-driver-{submission_id}*")]


def assert_no_output_left(cluster, submission_id: str) -> None:
    """No copy of the job's output in the head's logs folder: its driver deleted its log
    file (Ray's job monitor may write one line of its own there afterwards)."""
    assert submission_id and submission_id.startswith("rldoctor-"), submission_id
    for left in driver_log_left(cluster, submission_id):
        text = open(left, errors="replace").read()
        print(f"left by Ray: {left}: {text[-300:]!r}")
        assert "RLDOCTOR-" not in text and len(text) < 2000, text[-2000:]


def test_bundle_through_the_dashboard_has_every_nodes_logs_and_stacks(cluster, forwarded,
                                                                      crash_loop, hung_calls,
                                                                      tmp_path):
    time.sleep(max(0.0, hung_calls.started + LONG_CALL_S + 1 - time.monotonic()))
    path = tmp_path / "incident.tar.gz"
    result = run_rldoctor("collect", "--bundle", str(path), "--address", forwarded.url,
                          env=laptop_env(cluster))
    assert result.code == 0, result
    files = bundle_files(path)
    manifest = json.loads(files["manifest.json"])
    print(f"bundle through the dashboard: {path.stat().st_size} bytes in {result.seconds:.1f}s, "
          f"{len(manifest['items'])} items")
    assert manifest["source"]["path"] == "dashboard"
    items = manifest["items"]
    assert not [i for i in items if i["name"] == "logs, stacks and host facts"], items
    for item in items:  # every item collected is in the archive, under the name it gives
        if item["status"] == "ok" and item["file"]:
            assert item["file"] in files, item
    ids = {n.node_id for n in cluster.nodes}
    assert {n["node_id"] for n in manifest["nodes"]} == ids
    for node_id in ids:  # each node: its raylet log, its host facts, the stack of its hung call
        mine = [i for i in items if i["node_id"] == node_id and i["status"] == "ok"]
        raylet = [i for i in mine if i["name"] == "raylet.out"]
        assert raylet and raylet[0]["bytes"] > 100, mine
        assert b"raylet" in files[raylet[0]["file"]].lower()
        host = [i for i in mine if i["kind"] == "host"]
        assert host and json.loads(files[host[0]["file"]])["details"]["kernel"], mine
        stack = [i for i in mine if i["kind"] == "stack" and i.get("pid") == hung_calls.pids[node_id]]
        assert stack, [i for i in items if i["kind"] == "stack"]
        assert stack[0]["where"] == f"MyEnv.step (my_env.py:{hung_calls.line})", stack
        assert b"MyEnv.step" in files[stack[0]["file"]]
    head = cluster.nodes[0].node_id
    assert any(i["name"] == "gcs_server.out" and i["node_id"] == head and i["status"] == "ok"
               for i in items)
    for name in ("snapshot.json", "report.json", "report.md", "cluster/jobs.json"):
        assert name in files, sorted(files)
    # the crash loop is diagnosed in the bundle's report, as by `check`
    report = json.loads(files["report.json"])
    assert any(f["code"] == "RLD401" and crash_loop in f["subject"] for f in report["findings"])
    # redaction: the dead worker's last words are there, its password is not; nor the token
    crashed = [i for i in items if i["kind"] == "log" and i.get("worker_id")
               and i["node_id"] == cluster.nodes[2].node_id and i["name"].endswith(".err")
               and i["status"] == "ok"]
    assert crashed, items
    assert any(b"login with password=" + MASK.encode() in files[i["file"]] for i in crashed)
    for what, secret in {"env_vars value": CRASH_SECRET, "cluster token": cluster.token}.items():
        leaked = [name for name, data in files.items() if secret.encode() in data]
        assert not leaked, f"{what} found in {leaked}"
        assert secret not in result.stdout + result.stderr, what
    assert manifest["redacted"]["env_vars"] + manifest["redacted"].get("known_values", 0) > 0
    # nothing left: no job, no actor, not even the job's log file on the head
    assert rldoctor_jobs(cluster, forwarded.url) == []
    # (Ray's job monitor may write one line of its own there again, after the deletion, when
    # it sees the supervisor gone: what it must never hold is the job's output)
    assert_no_output_left(cluster, manifest["source"]["job"])
    assert not any(wait_clean(cluster).values())
