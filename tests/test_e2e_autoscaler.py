"""The autoscaler on real autoscaling clusters (tests/autoscaling.py): Ray's own autoscaler, v1
and v2, launching real raylets through Ray's fake multi-node provider, with a provider
subclass that fails the way clouds do (tests/fake_providers.py). `rldoctor preflight` is tried
on both clusters too: a config that fits only once the autoscaler adds cpu_workers, and one
more than it can ever add.

One cluster per autoscaler version, shared by the assertions of this module (scale-up is
slow on a shared 2-core machine): node type cpu_worker (1 CPU, max 2), quota_worker (0
CPUs + `quota`, every launch refused with a quota error), ghost_worker (0 CPUs + `ghost`,
recorded by the provider but its raylet never starts), a head with 0 CPUs, max_workers 4.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from autoscaling import autoscaling_cluster, wait_nodes, worker_type
from conftest import check_json, run_rldoctor
from localcluster import LocalCluster, NodeSpec, _pids_of
from ray_venvs import ray_venv
from test_e2e_preflight import CONFIGS, one, preflight

pytestmark = pytest.mark.cluster

QUOTA = "QuotaExceeded: Quota 'CPUS' exceeded. Limit: 8.0 in region us-west-2."
TYPES = {"cpu_worker": worker_type(1, max_workers=2),
         "quota_worker": worker_type(0, max_workers=1, quota=1),
         "ghost_worker": worker_type(0, max_workers=1, ghost=1)}
PROVIDER = {"rldoctor_fail_types": {"quota_worker": QUOTA}, "rldoctor_ghost_types": ["ghost_worker"]}

LEARNERS = """
import ray, sys, time
ray.init(address=sys.argv[1], namespace='train')
@ray.remote(num_cpus=1)
class Learner:
    def ping(self): return 1
ls = [Learner.options(name=f'learner{i}').remote() for i in range(int(sys.argv[2]))]
print('=> up', flush=True)
while True: time.sleep(60)
"""
BLOCKED = """
import ray, sys, time
ray.init(address=sys.argv[1], namespace='blocked')
@ray.remote(num_cpus=1)
class Learner:
    def ping(self): return 1
more = [Learner.options(name=f'learner{i}').remote() for i in (2, 3)]
@ray.remote(num_gpus=1)
class GpuLearner: pass
g = GpuLearner.remote()
@ray.remote(num_cpus=0, resources={'quota': 1})
class QuotaActor: pass
q = QuotaActor.remote()
@ray.remote(num_cpus=0, resources={'ghost': 1})
class GhostActor: pass
gh = GhostActor.remote()
from ray.autoscaler.sdk import request_resources
request_resources(bundles=[{'CPU': 1, 'custom_accel': 1}])
print('=> asked', flush=True)
while True: time.sleep(60)
"""
RUNNERS = """
import ray, sys, time
ray.init(address=sys.argv[1], namespace='rl')
@ray.remote(num_cpus=1, max_restarts=1)
class SingleAgentEnvRunner:
    def sample(self): return ray.get_runtime_context().get_node_id()
rs = [SingleAgentEnvRunner.remote() for _ in range(2)]
print('=>', ' '.join(ray.get([r.sample.remote() for r in rs])), flush=True)
while True: time.sleep(60)
"""


def _driver(cluster, code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([cluster.python, "-u", "-c", code, cluster.address, *args],
                            env=cluster.client_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)


def _first_line(proc: subprocess.Popen, timeout_s: float = 120) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("=>"):
            return line[2:].strip()
        if not line and proc.poll() is not None:
            raise RuntimeError(f"driver exited {proc.returncode}")
    raise RuntimeError("driver printed nothing")


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _by(result, code: str) -> dict:
    return {f["evidence"].get("cause", f["subject"]): f for f in result.findings(code)}


_RUNNING: list["Scenario"] = []  # the module's autoscaling cluster that is up, if any


class Scenario:
    """One autoscaling cluster walked through: a healthy scale-up, then blocked demands."""

    def __init__(self, v2: bool, release: str | None = None, idle_timeout_minutes: float = 5.0):
        # release: another Ray's venv (tests/ray_venvs.py), reached through its dashboard
        self.cluster = autoscaling_cluster(TYPES, v2=v2, max_workers=4, provider=PROVIDER,
                                           bin_dir=ray_venv(release) if release else None,
                                           token_auth=release is None,
                                           idle_timeout_minutes=idle_timeout_minutes)
        self.drivers: list[subprocess.Popen] = []

    def __enter__(self):
        # One autoscaling cluster at a time: the module's earlier one (its tests are over, the
        # module runs in file order) would go on launching and failing beside this one.
        while _RUNNING:
            _RUNNING.pop().__exit__()
        _RUNNING.append(self)
        self.cluster.start()
        try:
            learners = _driver(self.cluster, LEARNERS, "2")
            self.drivers.append(learners)
            wait_nodes(self.cluster, 3, timeout_s=300)
            _first_line(learners)
            self.healthy = check_json(self.cluster)
            self.drivers.append(_driver(self.cluster, BLOCKED))
            _first_line(self.drivers[-1])
            self.blocked = self._blocked_check()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _blocked_check(self, timeout_s: float = 90):
        """Check until the autoscaler has tried every blocked type (a failed launch and a node
        that was launched and is still missing)."""
        deadline = time.monotonic() + timeout_s
        while True:
            result = check_json(self.cluster)
            causes = _by(result, "RLD108")
            if {"launch-fails", "never-joins", "at-max-workers", "no-type-fits"} <= set(causes) \
                    or time.monotonic() > deadline:
                return result
            time.sleep(3)

    def __exit__(self, *exc):
        for proc in self.drivers:
            _stop(proc)
        self.cluster.stop()


@pytest.fixture(scope="module")
def v1():
    # its cpu_workers go 30 s after they idle: the preflight test lets them (the drivers keep
    # them busy until then; test_v1_preempted_... starts its runners as soon as it stops them)
    with Scenario(v2=False, idle_timeout_minutes=0.5) as scenario:
        yield scenario


@pytest.fixture(scope="module")
def v2():
    with Scenario(v2=True, idle_timeout_minutes=0.5) as scenario:  # as v1's
        yield scenario


def _assert_blocked(result, version: str) -> None:
    causes = _by(result, "RLD108")
    assert result.json()["autoscaler"]["version"] == version, result
    gpu = causes["no-type-fits"]
    assert gpu["severity"] == "fail"
    assert "GpuLearner" in gpu["message"] and "no node type offers {GPU: 1}" in gpu["message"], gpu
    quota = causes["launch-fails"]
    assert quota["subject"] == "node_type:quota_worker" and QUOTA.split(": ", 1)[1] in quota["message"], quota
    assert "QuotaActor" in quota["message"] and "Learner" not in quota["message"], quota
    at_max = causes["at-max-workers"]
    assert at_max["subject"] == "node_type:cpu_worker", at_max
    assert "2 x {CPU: 1} (a training's learners (2: Learner))" in at_max["message"], at_max
    assert "cpu_worker 2/2" in at_max["message"], at_max
    # RLD103 no longer calls the quota-blocked demand infeasible, nor the learners startable
    rld103 = result.findings("RLD103")
    quota_103 = [f for f in rld103 if "QuotaActor" in f["message"]]
    assert quota_103 and quota_103[0]["severity"] == "warn", rld103
    assert "infeasible" not in quota_103[0]["message"] and "RLD108" in quota_103[0]["message"]
    learners_103 = [f for f in rld103 if "{CPU: 1}" in f["message"] and "2 task" in f["message"]]
    assert learners_103 and "no node will be added" in learners_103[0]["message"], rld103
    gpu_103 = [f for f in rld103 if "GpuLearner" in f["message"]]
    assert gpu_103 and gpu_103[0]["severity"] == "fail", rld103


def test_no_autoscaler_is_said_and_blames_no_launch():
    """A plain cluster: the report says no autoscaler runs; a waiting demand gets RLD103 and at
    most an info RLD108 that nothing adds nodes, never one about launches."""
    with LocalCluster([NodeSpec(num_cpus=1)]) as cluster:
        proc = subprocess.Popen([cluster.python, "-u", "-c", (
            "import ray, sys, time\nray.init(address=sys.argv[1])\n"
            "@ray.remote(num_cpus=1)\nclass A:\n    pass\n"
            "a = [A.remote() for _ in range(2)]\nprint('=> up', flush=True)\n"
            "while True: time.sleep(60)\n"), cluster.address], env=cluster.client_env(),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            _first_line(proc)
            deadline = time.monotonic() + 30
            while True:
                result = check_json(cluster)
                if result.findings("RLD103") or time.monotonic() > deadline:
                    break
                time.sleep(1)
        finally:
            _stop(proc)
    section = result.json()["autoscaler"]
    assert section["version"] is None and not section["running"], section
    assert all(f["severity"] == "info" and f["evidence"]["cause"] == "no-autoscaler"
               for f in result.findings("RLD108")), result
    assert result.findings("RLD103"), result


def test_v1_healthy_scale_up_names_the_autoscaler_and_blocks_nothing(v1):
    result = v1.healthy
    assert not result.findings("RLD108"), result
    section = result.json()["autoscaler"]
    assert section["version"] == "v1" and section["running"]
    types = {t["name"]: t for t in section["node_types"]}
    assert (types["cpu_worker"]["min_workers"], types["cpu_worker"]["max_workers"],
            types["cpu_worker"]["current"]) == (0, 2, 2), section
    assert "__autoscaling_status" in section["decided_from"] or "v1" in section["decided_from"]
    check = run_rldoctor("check", "--address", v1.cluster.address, "--only", "RLD101",
                         env=v1.cluster.client_env())
    assert "Autoscaler: v1; node types cpu_worker 2 (0-2)" in check.stdout, check
    # the dashboard path: the collectors run inside the cluster, as a job on the head (the
    # blocked demands of the module's scenario are in force by now)
    through = run_rldoctor("check", "--address", v1.cluster.dashboard_url, "--format", "json",
                           "--only", "RLD108", env=v1.cluster.client_env(), timeout=180)
    assert through.code in (0, 1), through
    assert {f["evidence"]["cause"] for f in through.findings("RLD108")} >= {"no-type-fits"}, through
    section = through.json()["autoscaler"]
    assert section["version"] == "v1" and section["max_workers"] == 4, section
    assert {t["name"]: t["max_workers"] for t in section["node_types"]}["cpu_worker"] == 2, section


def test_v1_blocked_demands_one_finding_per_cause(v1):
    result = v1.blocked
    _assert_blocked(result, "v1")
    ghost = _by(result, "RLD108")["never-joins"]
    assert ghost["subject"] == "node_type:ghost_worker" and "GhostActor" in ghost["message"], ghost
    assert "never joined" in ghost["message"]


def test_v1_request_resources_is_read_and_judged(v1):
    """v1 keeps request_resources() in a KV key the v2 SDK does not read."""
    demands = v1.blocked.findings("RLD108")
    leftover = [f for f in demands if f["subject"] == "request_resources"]
    assert leftover and "custom_accel: 1" in leftover[0]["message"], demands
    assert "autoscaler_resource_request" in leftover[0]["message"]


def test_v1_preempted_node_under_env_runners_is_rld109(v1):
    """Env runners on a node the provider preempts (drained by Ray's GCS with the preemption
    reason, then its raylet killed): RLD109 names the node and the runners lost."""
    for proc in v1.drivers:
        _stop(proc)
    v1.drivers.clear()
    runners = _driver(v1.cluster, RUNNERS)
    v1.drivers.append(runners)
    node_ids = _first_line(runners, 150).split()
    victim = next(n for n in node_ids if n != "f" * 51 + "00000")
    v1.cluster.run_driver(
        "import time\nfrom ray._raylet import GcsClient\n"
        "g = GcsClient(address=ray.get_runtime_context().gcs_address)\n"
        f"print('=>', g.drain_node(node_id={victim!r}, reason=2, reason_message='spot "
        "instance preempted (rldoctor test)', deadline_timestamp_ms=int(time.time() * 1000) + 1000))\n",
        expect_lines=1)
    for pid in _pids_of(marker=v1.cluster.marker):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if any(a in (f"--node_id={victim}".encode(), f"--node-id={victim}".encode()) for a in args):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while True:
        result = check_json(v1.cluster)
        found = [f for f in result.findings("RLD109") if f["subject"] == f"node:{victim}"]
        if found or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert found, result
    assert "preempted" in found[0]["message"] and "1 env runner(s)" in found[0]["message"], found
    assert "SingleAgentEnvRunner" in found[0]["message"]
    assert found[0]["evidence"]["death_reason"] == "AUTOSCALER_DRAIN_PREEMPTED"


CPU_NODES = "print('=>', sum(1 for n in ray.nodes() if n['Alive'] and n['Resources'].get('CPU')))"


def _cpu_workers_let_go(scenario: Scenario, timeout_s: float = 150) -> None:
    """Stop the scenario's drivers and wait until the autoscaler has ended its idle cpu_workers
    (the head has no CPU): none is then in the middle of going while preflight probes it."""
    for proc in scenario.drivers:
        _stop(proc)
    scenario.drivers.clear()
    deadline = time.monotonic() + timeout_s
    while True:
        up = int(scenario.cluster.run_driver(CPU_NODES, expect_lines=1))
        if up == 0:
            time.sleep(3)  # the autoscaler's own count (what rldoctor reads) follows each second
            return
        assert time.monotonic() < deadline, f"{up} cpu_worker(s) still up after {timeout_s} s"
        time.sleep(3)


def test_v1_preflight_names_the_scale_up_a_config_needs_and_the_max_it_cannot_pass(v1):
    """RLD901 on Ray's fake multi-node provider: 2 bundles of {CPU: 1} fit only once the
    autoscaler adds cpu_workers (the nodes up have fewer CPUs: the count is taken from those
    the finding saw); 41 CPUs are more than its max_workers ever give."""
    _assert_preflight_scale_up_and_max(v1)


def _assert_preflight_scale_up_and_max(scenario: Scenario) -> None:
    _cpu_workers_let_go(scenario)
    cpu_max = TYPES["cpu_worker"]["max_workers"]
    result, report = preflight(scenario.cluster, f"{CONFIGS}:fits_after_scale_up")
    finding = one(report, "RLD901")
    up = sum(1 for shown in finding["evidence"]["nodes"].values() if "CPU: 1" in shown)
    assert up < cpu_max, finding
    assert finding["severity"] == "warn", finding
    assert "placeable only after scale-up" in finding["message"], finding
    assert f"needs {cpu_max - up} x cpu_worker more node(s)" in finding["message"], finding
    assert finding["evidence"]["scale_up"] == {"cpu_worker": cpu_max - up}, finding
    assert result.code == 0, result  # a wait, not a failure
    assert [f for f in report["findings"] if f["severity"] == "fail"] == [], report["findings"]

    result, report = preflight(scenario.cluster, f"{CONFIGS}:too_many_runners")
    assert result.code == 1, result
    finding = one(report, "RLD901")
    assert finding["severity"] == "fail" and "never placeable" in finding["message"], finding
    assert "asks for {CPU: 41} in all" in finding["message"], finding
    assert "the autoscaler cannot add enough (max_workers 4;" in finding["message"], finding
    assert "cpu_worker at most 2 x {CPU: 1}" in finding["message"], finding
    assert finding["evidence"]["max_workers"]["node_types"]["cpu_worker"] == cpu_max, finding


@pytest.fixture(scope="module")
def v2_ray255():
    with Scenario(v2=True, release="2.55.0") as scenario:
        yield scenario


@pytest.mark.slow
def test_v2_of_ray_255_through_its_dashboard_one_finding_per_cause(v2_ray255):
    """Ray 2.55's autoscaler v2 (the collectors run inside the cluster with its Ray)."""
    assert not v2_ray255.healthy.findings("RLD108"), v2_ray255.healthy
    assert v2_ray255.healthy.json()["source"]["path"] == "dashboard"
    _assert_blocked(v2_ray255.blocked, "v2")
    ghost = _by(v2_ray255.blocked, "RLD108").get("never-joins")
    assert ghost and ghost["subject"] == "node_type:ghost_worker", v2_ray255.blocked


def test_v2_blocked_demands_one_finding_per_cause(v2):
    assert not v2.healthy.findings("RLD108"), v2.healthy
    assert v2.healthy.json()["autoscaler"]["version"] == "v2"
    _assert_blocked(v2.blocked, "v2")


def test_v2_a_node_that_never_joins_is_named(v2):
    """v2: the ghost type's launch is an instance that never gets a Ray node."""
    causes = _by(v2.blocked, "RLD108")
    ghost = causes.get("never-joins")
    assert ghost, {c: f["message"] for c, f in causes.items()}
    assert ghost["subject"] == "node_type:ghost_worker" and "GhostActor" in ghost["message"], ghost
    assert "never joined" in ghost["message"]


def test_v2_preflight_names_the_scale_up_a_config_needs_and_the_max_it_cannot_pass(v2):
    """As on v1, with autoscaler v2 (its count of a type's nodes: those that joined)."""
    _assert_preflight_scale_up_and_max(v2)
