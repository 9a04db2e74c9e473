"""End to end: trainings that failed, diagnosed after the fact (RLD405, the timeline, the bundle).

One 3-node cluster (one CPU each) runs real PPO jobs submitted with `ray job submit`, RLlib's
fault tolerance off (restart_failed_env_runners=False, ignore_env_runner_failures=False;
tests/failed_training.py). The user's env package `warehouse_env` is on the PYTHONPATH of the
head and node 1 only: node 2 is a host where it is not installed. In order:

- a job that succeeds and one its user stops (never above info);
- a job whose env raises RuntimeError("warehouse sensor 7 returned garbage: ...") in step() on
  runner 1: RLD405 with the exception, the user's frame and the runner (pid and node from the
  env itself), on the GCS and the dashboard address and in the bundle; RLD403 is silent about
  that runner;
- a job whose env comes from `warehouse_env`: the runner on node 2 cannot import it;
- a job under which node 2 is killed (SIGKILL of its processes): RLD405 tied to that node, RLD101.
After each failing case the session directory is copied into the test's tmp dir, as a log volume
keeps it (for `check --from DIR`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from conftest import CliResult, check_json, run_rldoctor
from failed_training import SENSOR_ERROR, WAREHOUSE_MODULE
from localcluster import LocalCluster, NodeSpec

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TESTS = Path(__file__).resolve().parent
SCRIPT = TESTS / "failed_training.py"
RAY = str(Path(sys.executable).parent / "ray")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")  # the user's package, installed on two hosts only
    (site / "warehouse_env.py").write_text(WAREHOUSE_MODULE)
    specs = [NodeSpec(num_cpus=1, env={"PYTHONPATH": str(site)}),
             NodeSpec(num_cpus=1, env={"PYTHONPATH": str(site)}),
             NodeSpec(num_cpus=1)]
    with LocalCluster(specs) as c:
        c.marks = tmp_path_factory.mktemp("marks")
        yield c


def ray_cli(cluster, *args, timeout=60) -> str:
    done = subprocess.run([RAY, *args], env=cluster.client_env(), capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode:
        raise RuntimeError(f"ray {' '.join(args)} failed: {done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    return done.stdout


def submit(cluster, sid: str, *args: str, entrypoint=None) -> str:
    ray_cli(cluster, "job", "submit", "--address", cluster.dashboard_url, "--no-wait",
            "--submission-id", sid, "--", *(entrypoint or [sys.executable, str(SCRIPT), *args]))
    return sid


def status(cluster, sid: str) -> str:
    """The job's status from the Jobs API (what `ray job status` prints)."""
    return cluster.job_status(sid)


def wait_status(cluster, sid: str, wanted=("SUCCEEDED", "FAILED", "STOPPED"), timeout_s=240) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = status(cluster, sid)
        if found in wanted:
            return found
        time.sleep(2)
    raise AssertionError(f"job {sid} did not reach {wanted} in {timeout_s}s (last {found})")


def marks(cluster, name: str) -> dict[int, tuple[str, int]]:
    """{runner index: (node id, pid)} as each env wrote it."""
    path = cluster.marks / name
    out = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        index, node_id, pid = line.split()
        out[int(index)] = (node_id, int(pid))
    return out


def keep_session(cluster, dest: Path) -> Path:
    """The session directory, copied as a log volume keeps it (sockets left out)."""
    session = (cluster.temp_dir / "session_latest").resolve()
    target = dest / session.name
    shutil.copytree(session, target, symlinks=True, ignore=shutil.ignore_patterns("sockets"),
                    ignore_dangling_symlinks=True)
    return target


def job_findings(result: CliResult, sid: str) -> list[dict]:
    return [f for f in result.findings("RLD405") if f["subject"] == f"job:{sid}"]


def from_logs(session: Path, sid: str) -> tuple[CliResult, dict]:
    """`check --from DIR` on the copied session directory: the same job's RLD405."""
    out = run_rldoctor("check", "--from", str(session), "--format", "json")
    assert out.code == 1, out
    assert out.json()["source"]["kind"] == "logs"
    found = job_findings(out, sid)
    assert len(found) == 1, out
    return out, found[0]


def not_named_above_info(result: CliResult, *words: str) -> None:
    for f in result.json()["findings"]:
        if f["severity"] in ("warn", "fail"):
            text = json.dumps(f)
            for word in words:
                assert word not in text, (word, f)


@pytest.fixture(scope="module")
def ended_well(cluster):
    """A PPO job that succeeds and a job its user stops, both before the failures."""
    ok = submit(cluster, "ppo-succeeds", "--runners", "1", "--iterations", "1")
    stopped = submit(cluster, "user-stops-it", entrypoint=[sys.executable, "-c",
                                                           "import time; time.sleep(600)"])
    wait_status(cluster, stopped, ("RUNNING",), 60)
    ray_cli(cluster, "job", "stop", "--address", cluster.dashboard_url, stopped)
    assert wait_status(cluster, stopped) == "STOPPED"
    return ok, stopped


@pytest.fixture(scope="module")
def sensor_job(cluster, ended_well, tmp_path_factory):
    sid = submit(cluster, "warehouse-sensor", "--runners", "2", "--raise-runner", "1",
                 "--iterations", "50", "--mark", str(cluster.marks / "sensor"))
    assert wait_status(cluster, ended_well[0]) == "SUCCEEDED"
    assert wait_status(cluster, sid) == "FAILED"
    gcs = check_json(cluster)
    dash = run_rldoctor("check", "--address", cluster.dashboard_url, "--format", "json",
                        env=cluster.client_env())
    bundle = tmp_path_factory.mktemp("bundle") / "incident.tar.gz"
    made = run_rldoctor("collect", "--bundle", str(bundle), "--address", cluster.address,
                        env=cluster.client_env(), timeout=180)
    assert made.code == 0, made
    session = keep_session(cluster, tmp_path_factory.mktemp("session-sensor"))
    return {"sid": sid, "gcs": gcs, "dash": dash, "bundle": bundle, "session": session,
            "runner": marks(cluster, "sensor")[1]}


def _assert_sensor_finding(result: CliResult, job: dict) -> dict:
    found = job_findings(result, job["sid"])
    assert len(found) == 1, result
    f = found[0]
    node_id, pid = job["runner"]
    assert f["severity"] == "fail"
    assert SENSOR_ERROR in f["message"] and "RuntimeError" in f["message"], f["message"]
    assert "failed_training.py:" in f["message"] and "in read_sensor" in f["message"], f["message"]
    ev = f["evidence"]
    assert ev["root_cause"] == "user_error" and ev["submission_id"] == job["sid"]
    assert ev["exception"]["frame"]["func"] == "read_sensor"
    assert ev["exception"]["frame"]["file"].endswith("failed_training.py")
    assert ev["worker"]["class_name"] == "SingleAgentEnvRunner"
    assert ev["worker"]["pid"] == pid and ev["worker"]["node_id"] == node_id, (ev["worker"], job)
    assert node_id[:12] in f["message"]
    assert any("FAILED" in link["what"] for link in ev["chain"])
    assert "read_sensor" in f["fix"]
    return f


def test_env_that_raises_names_the_exception_frame_and_runner(cluster, sensor_job):
    result = sensor_job["gcs"]
    _assert_sensor_finding(result, sensor_job)
    node_id, pid = sensor_job["runner"]
    # the runner exited because the user's code raised: no system error about it
    for f in result.findings("RLD403"):
        assert pid not in f["evidence"].get("pids", []), f
    # the jobs that ended well are named by nothing above info
    not_named_above_info(result, "ppo-succeeds", "user-stops-it")
    assert not job_findings(result, "ppo-succeeds") and not job_findings(result, "user-stops-it")
    kinds = {(e["kind"], e["subject"]) for e in result.json()["timeline"]}
    assert ("job_failed", f"job:{sensor_job['sid']}") in kinds
    assert ("job_succeeded", "job:ppo-succeeds") in kinds and ("job_stopped", "job:user-stops-it") in kinds
    times = [e["epoch"] for e in result.json()["timeline"] if e["epoch"] is not None]
    assert times == sorted(times)


def test_env_that_raises_through_the_dashboard_address(cluster, sensor_job):
    result = sensor_job["dash"]
    assert result.code in (0, 1), result
    _assert_sensor_finding(result, sensor_job)
    not_named_above_info(result, "ppo-succeeds", "user-stops-it")


def test_env_that_raises_in_the_bundle(cluster, sensor_job):
    with tarfile.open(sensor_job["bundle"]) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        report = json.load(tar.extractfile(f"{top}/report.json"))
        sid = sensor_job["sid"]
        driver = [n for n in names if n.startswith(f"{top}/jobs/{sid}/") and n.endswith("driver.log")]
        assert driver, names
        text = tar.extractfile(driver[0]).read().decode()
        assert "ActorDiedError" in text or SENSOR_ERROR in text
        node_id, pid = sensor_job["runner"]
        workers = [n for n in names if n.startswith(f"{top}/jobs/{sid}/workers/") and f"{pid}" in n]
        assert workers, names
        assert SENSOR_ERROR in tar.extractfile(workers[0]).read().decode()
    found = [f for f in report["findings"] if f["code"] == "RLD405" and f["subject"] == f"job:{sid}"]
    assert found and SENSOR_ERROR in found[0]["message"]
    from_bundle = run_rldoctor("check", "--from", str(sensor_job["bundle"]), "--format", "json")
    assert job_findings(from_bundle, sid), from_bundle


def test_env_that_raises_from_the_session_directory(cluster, sensor_job):
    _, f = from_logs(sensor_job["session"], sensor_job["sid"])
    assert f["evidence"]["root_cause"] == "user_error"
    assert SENSOR_ERROR in f["message"] and "in read_sensor" in f["message"], f["message"]
    assert f["evidence"]["worker"]["pid"] == sensor_job["runner"][1]


def test_env_package_missing_on_one_node(cluster, sensor_job, tmp_path):
    sid = submit(cluster, "warehouse-package", "--runners", "3", "--env-module", "--iterations", "2")
    assert wait_status(cluster, sid) == "FAILED"
    result = check_json(cluster)
    session = keep_session(cluster, tmp_path)
    found = job_findings(result, sid)
    assert len(found) == 1, result
    f = found[0]
    missing = cluster.nodes[2].node_id
    _, offline = from_logs(session, sid)
    assert "ModuleNotFoundError" in offline["message"] and missing[:12] in offline["message"], offline
    assert "ModuleNotFoundError" in f["message"] and "warehouse_env" in f["message"], f["message"]
    assert missing[:12] in f["message"], f["message"]
    assert f["evidence"]["root_cause"] == "code_missing"
    assert f["evidence"]["code_missing"]["node_id"] == missing
    assert "working_dir" in f["fix"] and "py_modules" in f["fix"]
    for node in cluster.nodes[:2]:  # the hosts that have the package are not blamed
        assert node.node_id[:12] not in f["message"]
    not_named_above_info(result, "ppo-succeeds", "user-stops-it")


def _wait_node_dead(cluster, node_id: str, timeout_s: float = 90) -> None:
    code = ("import time\nfor _ in range(int(%r)):\n"
            "    if any(n['NodeID'] == %r and not n['Alive'] for n in ray.nodes()):\n"
            "        print('=> dead'); break\n    time.sleep(1)\n") % (timeout_s, node_id)
    assert cluster.run_driver(code, timeout=timeout_s + 30) == "dead"


def test_node_killed_under_a_training(cluster, sensor_job, tmp_path):
    sid = submit(cluster, "warehouse-node-lost", "--runners", "3", "--iterations", "10000",
                 "--step-ms", "5", "--mark", str(cluster.marks / "lost"))
    deadline = time.monotonic() + 180
    while len(marks(cluster, "lost")) < 3 and time.monotonic() < deadline:
        time.sleep(1)
    placed = marks(cluster, "lost")
    assert len(placed) == 3, placed
    time.sleep(3)  # training
    victim = cluster.kill_node(2)
    assert wait_status(cluster, sid) == "FAILED"
    _wait_node_dead(cluster, victim)
    result = check_json(cluster)
    session = keep_session(cluster, tmp_path)
    found = job_findings(result, sid)
    assert len(found) == 1, result
    f = found[0]
    assert f["evidence"]["root_cause"] == "node_died", f
    offline, g = from_logs(session, sid)
    assert g["evidence"]["root_cause"] == "node_died" and victim[:12] in g["message"], g
    assert [x["subject"] for x in offline.findings("RLD101")] == [f"node:{victim}"]
    assert victim[:12] in f["message"] and "UNEXPECTED_TERMINATION" in f["message"], f["message"]
    assert f["evidence"]["node"]["node_id"] == victim
    assert "RLD101" in f["fix"] and "restart_failed_env_runners" in f["fix"]
    assert [x for x in result.findings("RLD101") if x["subject"] == f"node:{victim}"]
    healthy = cluster.nodes[1].node_id
    assert healthy[:12] not in f["message"]
    assert not [x for x in result.findings("RLD101") if healthy in x["subject"]]
    assert ("node_dead", f"node:{victim}") in {(e["kind"], e["subject"]) for e in result.json()["timeline"]}
