"""The incident bundle and the stack capture on a real 3-node cluster with a PPO job running.

One module-scoped cluster (token auth; worker node 1 cannot import rldoctor, like a
production node), on which run, each as its own driver process with its own HOME:
- a Tune PPO job on CartPole-v1 whose runtime_env env_vars and training config carry
  secrets (tests/bundle_ppo_job.py);
- an actor whose method blocks inside the user's `MyEnv.step` (a hung env);
- an actor that prints its last words, with a password in them, and dies (os._exit).
The cluster token is a secret too. Tests run in order: the frozen node comes last.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import signal
import stat
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import NO_RLDOCTOR, run_rldoctor
from faults import DYING_SIMULATOR, HUNG_RUNNER
from localcluster import LocalCluster, NodeSpec

pytestmark = [pytest.mark.cluster, pytest.mark.slow]  # a real PPO training runs throughout

JOB = str(Path(__file__).resolve().parent / "bundle_ppo_job.py")
ENV_SECRET = "envsecret-7Hq2Lx9Zr4Vw"
CONFIG_SECRET = "cfgsecret-3Kd8Pm1Ns6Qt"
CRASH_SECRET = "crashsecret-5Bv0Yc2Ju7Xe"
MASK = "***redacted***"
NOISY = {"RLD201", "RLD202"}  # timing on a loaded 2-core machine: may differ between two runs

HUNG_ENV = ('''\
import logging, os, sys, time
import ray

'''
    + HUNG_RUNNER + '\n' + '''\
ray.init(address=sys.argv[1], namespace="hung", logging_level=logging.ERROR, log_to_driver=False)
runner = Runner.options(label_selector={"ray.io/node-id": sys.argv[2]}).remote()
print("PID", ray.get(runner.pid.remote()), flush=True)
runner.sample.remote()
time.sleep(3600)
''')

CRASH = ('''\
import logging, os, sys, time
import ray

'''
    + DYING_SIMULATOR + '\n' + '''\
ray.init(address=sys.argv[1], namespace="crash", logging_level=logging.ERROR, log_to_driver=False)
sim = Simulator.options(label_selector={"ray.io/node-id": sys.argv[2]},
                        runtime_env={"env_vars": {"SIM_PASSWORD": sys.argv[3]}}).remote()
try:
    ray.get(sim.connect.remote(), timeout=60)
except Exception as exc:
    print("=> died", type(exc).__name__, flush=True)
''')

STACKS = '''\
import json, sys, time
from rldoctor.cluster.session import collect_snapshot
from rldoctor.cluster import stacks

node, pid = sys.argv[2], int(sys.argv[3])
out = {}

def take(conn, budget, fleet, doc):
    targets = [{"node_id": node, "pid": pid, "label": "hung runner"},
               {"node_id": node, "pid": 4_000_000, "label": "gone"},
               {"node_id": "ff" * 28, "pid": 1, "label": "nowhere"}]
    started = time.perf_counter()
    out["first"] = stacks.capture(fleet, targets, budget)
    out["first_s"] = time.perf_counter() - started
    started = time.perf_counter()
    out["again"] = stacks.capture(fleet, targets[:1], budget)
    out["again_s"] = time.perf_counter() - started

collect_snapshot(sys.argv[1], 30, extras=(take,))
print("=> " + json.dumps(out))
'''


@dataclass
class Incident:
    cluster: LocalCluster
    env: dict
    root: Path
    hung_pid: int
    hung_line: int


def _wait_for_line(proc: subprocess.Popen, prefix: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                raise RuntimeError(f"driver exited {proc.returncode} before printing {prefix!r}")
            continue
        if line.startswith(prefix):
            return line.strip()
    raise RuntimeError(f"no {prefix!r} within {timeout_s}s")


@pytest.fixture(scope="module")
def incident(tmp_path_factory):
    root = tmp_path_factory.mktemp("bundle-e2e")
    home = root / "home"
    home.mkdir()
    site = root / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_RLDOCTOR)
    specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
    specs[1].env["PYTHONPATH"] = str(site)  # a production node: rldoctor not installed
    with LocalCluster(specs) as cluster:
        env = cluster.client_env(HOME=str(home))
        job = subprocess.Popen([sys.executable, JOB, cluster.address, str(root / "results")],
                               env=dict(env, BUNDLE_ENV_SECRET=ENV_SECRET,
                                        BUNDLE_CONFIG_SECRET=CONFIG_SECRET),
                               stdout=subprocess.PIPE, stderr=(root / "job.err").open("w"), text=True)
        (root / "my_env.py").write_text(HUNG_ENV)
        hung = subprocess.Popen([sys.executable, str(root / "my_env.py"), cluster.address,
                                 cluster.nodes[1].node_id], env=env, stdout=subprocess.PIPE, text=True)
        (root / "crash.py").write_text(CRASH)
        try:
            crashed = subprocess.run([sys.executable, str(root / "crash.py"), cluster.address,
                                      cluster.nodes[2].node_id, CRASH_SECRET], env=env,
                                     capture_output=True, text=True, timeout=90)
            assert "=> died" in crashed.stdout, crashed.stdout + crashed.stderr[-2000:]
            hung_pid = int(_wait_for_line(hung, "PID", 60).split()[1])
            _wait_for_line(job, "=> iteration", 150)
            hung_line = HUNG_ENV.splitlines().index(
                next(l for l in HUNG_ENV.splitlines() if "HUNG LINE" in l)) + 1
            yield Incident(cluster, env, root, hung_pid, hung_line)
        finally:
            for proc in (job, hung):
                proc.kill()
                proc.wait()


# -- Part 1: stacks through the probe fleet ----------------------------------------------------

def test_stacks_name_the_user_frame_of_a_hung_actor(incident):
    node = incident.cluster.nodes[1].node_id  # the node without rldoctor
    proc = subprocess.run([sys.executable, "-c", STACKS, incident.cluster.address, node,
                           str(incident.hung_pid)], env=incident.env, capture_output=True,
                          text=True, timeout=120)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("=> ")), None)
    assert line, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = json.loads(line[3:])
    hung = out["first"][f"{node}:{incident.hung_pid}"]
    assert hung["status"] == "ok", hung
    assert hung["where"] == f"MyEnv.step (my_env.py:{incident.hung_line})"
    assert [f["function"] for f in hung["user_frames"]] == ["MyEnv.step", "Runner.sample"]
    assert any(f["function"] == "Worker.main_loop" for t in hung["threads"] for f in t["frames"])
    gone = out["first"][f"{node}:4000000"]
    assert gone["status"] == "failed" and "no such process" in gone["error"]
    nowhere = out["first"]["ff" * 28 + ":1"]
    assert nowhere["status"] == "failed" and "no probe" in nowhere["error"]
    again = out["again"][f"{node}:{incident.hung_pid}"]
    print(f"stack once the probe is up: {out['again_s']:.3f}s for one, dump {again['duration_s']}s; "
          f"three targets: {out['first_s']:.3f}s")
    assert again["status"] == "ok" and out["again_s"] < 0.6, out["again_s"]


# -- Part 2: the bundle ------------------------------------------------------------------------

def _members(path: Path) -> dict[str, bytes]:
    """Every file of the bundle, nested archives opened, plus the whole tar stream itself."""
    found: dict[str, bytes] = {}

    def walk(name: str, data: bytes) -> None:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
            found[name + "!gunzip"] = data
        try:
            tar = tarfile.open(fileobj=io.BytesIO(data))
        except tarfile.TarError:
            found[name] = data
            return
        with tar:
            for member in tar:
                if member.isfile():
                    walk(f"{name}/{member.name}", tar.extractfile(member).read())

    walk(path.name, path.read_bytes())
    return found


def _manifest(files: dict[str, bytes]) -> tuple[str, dict]:
    """(the prefix of every member's key: "<bundle file>/<top folder>/", the manifest)."""
    name = next(n for n in files if n.endswith("/manifest.json"))
    return name[: -len("manifest.json")], json.loads(files[name])


def _codes(report: dict) -> set[str]:
    return {f["code"] for f in report["findings"]}


@pytest.fixture(scope="module")
def healthy_bundle(incident):
    """A live check, then the bundle of the same cluster state."""
    live = run_rldoctor("check", "--address", incident.cluster.address, "--format", "json",
                        env=incident.env)
    assert live.code in (0, 1), live
    path = incident.root / "incident.tar.gz"
    result = run_rldoctor("collect", "--bundle", str(path), "--address", incident.cluster.address,
                          env=incident.env, timeout=120)
    assert result.code == 0, result
    return live, result, path


def test_bundle_holds_no_secret(incident, healthy_bundle):
    _, _, path = healthy_bundle
    files = _members(path)
    assert len(files) > 20
    secrets = {"env_vars value": ENV_SECRET, "Tune config value": CONFIG_SECRET,
               "password in a dead worker's log": CRASH_SECRET, "cluster token": incident.cluster.token}
    for what, secret in secrets.items():
        leaked = [name for name, data in files.items() if secret.encode() in data]
        assert not leaked, f"{what} found in {leaked}"


def test_bundle_holds_every_node_logs_stacks_and_results(incident, healthy_bundle):
    _, result, path = healthy_bundle
    print(f"bundle: {path.stat().st_size} bytes in {result.seconds:.1f}s")
    assert result.seconds < 30, result
    assert path.stat().st_size < 5 * 10**6
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    files = _members(path)
    top, manifest = _manifest(files)
    assert manifest["schema"] == "rldoctor.bundle/v1"
    node_ids = {n.node_id for n in incident.cluster.nodes}
    assert {n["node_id"] for n in manifest["nodes"]} == node_ids
    items = manifest["items"]
    for item in items:
        if item["status"] == "ok" and item["file"]:
            assert f"{top}{item['file']}" in files, item
    for node_id in node_ids:  # a raylet log tail of every node
        raylet = [i for i in items if i["node_id"] == node_id and i["name"] == "raylet.out"]
        assert raylet and raylet[0]["status"] == "ok" and raylet[0]["bytes"] > 100, raylet
        host = [i for i in items if i["node_id"] == node_id and i["kind"] == "host"]
        assert host and host[0]["status"] == "ok", host
    head = incident.cluster.nodes[0].node_id
    assert any(i["name"] == "gcs_server.out" and i["node_id"] == head and i["status"] == "ok"
               for i in items)
    for name in ("snapshot.json", "report.json", "report.md", "cluster/jobs.json"):
        assert f"{top}{name}" in files

    stacks = [i for i in items if i["kind"] == "stack"]
    runners = [i for i in stacks if "env runner" in i["label"] and i["status"] == "ok"]
    assert len(runners) == 2, stacks
    for runner in runners:
        assert b"SingleAgentEnvRunner" in files[f"{top}{runner['file']}"]
    assert any("algorithm PPO" in i["label"] and i["status"] == "ok" for i in stacks), stacks
    hung = [i for i in stacks if i.get("pid") == incident.hung_pid]
    assert hung and "running for" in hung[0]["label"], stacks
    assert hung[0]["where"] == f"MyEnv.step (my_env.py:{incident.hung_line})"

    crashed = [i for i in items if i["kind"] == "log" and i.get("worker_id")
               and i["node_id"] == incident.cluster.nodes[2].node_id and i["name"].endswith(".err")]
    assert crashed and crashed[0]["status"] == "ok", items
    last_words = files[f"{top}{crashed[0]['file']}"]
    assert b"simulator.connect() failed: login with password=" + MASK.encode() in last_words

    env_agent = [files[f"{top}{i['file']}"] for i in items
                 if i["name"] == "runtime_env_agent.log" and i["status"] == "ok"]
    assert any(b'"env_vars"' in log and MASK.encode() in log for log in env_agent)

    tune = [i for i in items if i["kind"] == "tune" and i["status"] == "ok"]
    assert tune, items
    rows = [json.loads(l) for l in files[f"{top}{tune[0]['file']}"].splitlines()]
    assert rows and rows[-1]["config"]["env_config"]["api_key"] == MASK
    assert rows[-1]["config"]["lr"] == 0.001 and rows[-1]["training_iteration"] >= 1
    counts = manifest["redacted"]
    assert counts["env_vars"] > 0 and counts["tune_config"] > 0
    assert all(isinstance(v, int) for v in counts.values())

    # progress names each node the one way (rldoctor.words.node_label: id, then its address)
    subnet = re.escape(incident.cluster.node_ip(0).rsplit(".", 1)[0] + ".")  # the worker's lane
    assert "raylet.out" in result.stderr and re.search(rf"node [0-9a-f]{{12}} \({subnet}", result.stderr)


def test_check_from_the_bundle_finds_what_the_live_check_found(incident, healthy_bundle):
    live, _, path = healthy_bundle
    offline = run_rldoctor("check", "--from", str(path), "--format", "json", env=incident.env)
    assert offline.code in (0, 1), offline
    files = _members(path)
    top, _ = _manifest(files)
    recorded = json.loads(files[f"{top}report.json"])
    assert _codes(offline.json()) == _codes(recorded)
    assert _codes(offline.json()) - NOISY == _codes(live.json()) - NOISY, (live, offline)
    crash = [f for f in offline.findings("RLD403")
             if f["subject"] == f"node:{incident.cluster.nodes[2].node_id}"]
    assert crash, offline
    pointed = crash[0]["evidence"]["in_bundle"]
    assert Path(pointed["bundle"]).name == path.name
    assert any("/logs/workers/worker-" in f and f.endswith(".err") for f in pointed["files"])
    assert all(f"{path.name}/{f}" in files for f in pointed["files"]), pointed


def test_bundle_report_honours_the_teams_ignore_file_and_ignore_option(incident, healthy_bundle):
    """The bundle's report.json mutes what `check --from` the bundle mutes with the same
    rldoctor.toml (--config) and --ignore: the same findings, marked with the same reasons."""
    _, _, plain = healthy_bundle
    recorded = json.loads(_members(plain)[f"{_manifest(_members(plain))[0]}report.json"])
    crash_node = f"node:{incident.cluster.nodes[2].node_id}"
    assert any(f["code"] == "RLD403" and f["subject"] == crash_node for f in recorded["findings"])
    assert not any(f.get("muted") for f in recorded["findings"])
    config = incident.root / "team-rldoctor.toml"
    config.write_text(f'[[ignore]]\ncode = "RLD403"\nsubject = "{crash_node}"\n'
                      'reason = "the simulator test dies on purpose"\n')
    path = incident.root / "muted.tar.gz"
    # the file's entry mutes the crash; --ignore mutes RLD403 on every other subject too
    options = ("--config", str(config), "--ignore", "worker-crashes")
    result = run_rldoctor("collect", "--bundle", str(path), "--address", incident.cluster.address,
                          *options, env=incident.env, timeout=120)
    assert result.code == 0, result
    files = _members(path)
    report = json.loads(files[f"{_manifest(files)[0]}report.json"])
    muted = {(f["code"], f["subject"]): f["muted"] for f in report["findings"] if f.get("muted")}
    assert muted[("RLD403", crash_node)]["reason"] == "the simulator test dies on purpose"
    assert "team-rldoctor.toml" in muted[("RLD403", crash_node)]["source"]
    assert not [f for f in report["findings"] if f["code"] == "RLD403" and not f.get("muted")]
    [note] = [n for n in report["notes"] if "muted by" in n]
    assert "team-rldoctor.toml" in note and "--ignore" in note, note
    assert "Muted" in files[f"{_manifest(files)[0]}report.md"].decode()
    offline = run_rldoctor("check", "--from", str(path), "--format", "json", *options,
                           env=incident.env)
    again = {(f["code"], f["subject"]) for f in offline.json()["findings"] if f.get("muted")}
    assert {k for k in muted if k[0] not in NOISY} == {k for k in again if k[0] not in NOISY}
    bad = incident.root / "bad.toml"
    bad.write_text("[[ignore]]\ncode = \"RLD999\"\nreason = \"x\"\n")
    refused = run_rldoctor("collect", "--bundle", str(incident.root / "never.tar.gz"), "--address",
                           incident.cluster.address, "--config", str(bad), env=incident.env)
    assert refused.code == 2 and not (incident.root / "never.tar.gz").exists(), refused


def test_existing_bundle_is_refused_without_force(incident, healthy_bundle):
    _, _, path = healthy_bundle
    before = path.read_bytes()
    again = run_rldoctor("collect", "--bundle", str(path), "--address", incident.cluster.address,
                         env=incident.env)
    assert again.code == 3 and "--force" in again.stderr and path.read_bytes() == before


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_frozen_node_costs_its_deadlines_and_its_items_fail(incident):
    """One node stopped (SIGSTOP, every process of it): bundle written, that node's items
    failed with reasons, within the per-item deadlines; with --obfuscate."""
    frozen = incident.cluster.nodes[2].node_id
    path = incident.root / "frozen.tar.gz"
    incident.cluster.kill_node(2, signal.SIGSTOP)
    try:
        result = run_rldoctor("collect", "--bundle", str(path), "--obfuscate", "--timeout", "20",
                              "--address", incident.cluster.address, env=incident.env, timeout=120)
    finally:
        incident.cluster.kill_node(2, signal.SIGCONT)
    assert result.code == 0, result
    print(f"bundle with a frozen node: {result.seconds:.1f}s")
    assert result.seconds < 45, result
    files = _members(path)
    top, manifest = _manifest(files)
    slowest = sorted(manifest["items"], key=lambda i: -(i["duration_s"] or 0))[:4]
    print("slowest items: " + ", ".join(f"{i['name']} {i['duration_s']}s" for i in slowest))
    mine = [i for i in manifest["items"] if i["node_id"] == frozen]
    assert mine and all(i["status"] == "failed" and i["error"] for i in mine), mine
    kinds = {i["kind"] for i in mine}
    # Still alive to the GCS (the usual case): each item tried and failed; already declared
    # dead by its health checks (a slow machine): one item saying so.
    assert kinds >= {"log", "host"} or (kinds == {"node"} and "dead" in mine[0]["error"]), mine
    for node in incident.cluster.nodes[:2]:
        assert any(i["node_id"] == node.node_id and i["name"] == "raylet.out" and i["status"] == "ok"
                   for i in manifest["items"])
    row = next(n for n in manifest["nodes"] if n["node_id"] == frozen)
    assert row["items_failed"] == len(mine) and row["items_ok"] == 0
    # --obfuscate: no real node IP anywhere in the bundle; the map beside it, private
    real_ips = [incident.cluster.node_ip(i) for i in range(3)]
    for name, data in files.items():
        assert not any(re.search(rb"%s\b" % re.escape(ip).encode(), data) for ip in real_ips), name
    the_map = Path(str(path) + ".obfuscation-map.json")
    assert stat.S_IMODE(the_map.stat().st_mode) == 0o600
    mapping = json.loads(the_map.read_text())
    assert set(mapping["ips"].values()) >= set(real_ips)
    assert not any("obfuscation-map" in name for name in files)
    fake_head = next(f for f, real in mapping["ips"].items() if real == real_ips[0])
    assert fake_head.encode() in files[f"{top}snapshot.json"]
    offline = run_rldoctor("check", "--from", str(path), "--format", "json", env=incident.env)
    assert offline.code in (0, 1), offline
