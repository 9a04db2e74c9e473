"""The client-only install (`pip install rldoctor-ray`, no extra) does the client's whole job.

rldoctor's wheel, built from this checkout, goes into a fresh venv without the cluster
extra; `import ray` and `import torch` fail there. In that venv the real CLI diagnoses a
real local cluster through its dashboard address (a crash-looping actor: RLD401), writes
and reads back an incident bundle, diagnoses snapshots offline as the full install does,
lints the lint fixtures with the same RLD801/RLD803 findings as the full install (RLD802:
rldoctor's own rules, Ray's validator skipped and said so), explains a code, and refuses
what needs a local Ray (a GCS address, no address, smoke-train, --target) in one line with
exit 2. Building and installing print no deprecation warning.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from conftest import FIXTURES, RLDOCTOR, ROOT, _clean_env
from clientvenv import CLUSTER_ONLY_MODULES, build_wheel, clean_env, importable, make_venv
from faults import actor_that_crashes_three_times
from localcluster import LocalCluster, NodeSpec, free_ports
from test_watch_cli import scrape
from rldoctor.install import CLUSTER_EXTRA, DISTRIBUTION

pytestmark = pytest.mark.cluster

EXTRA = CLUSTER_EXTRA


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """(venv, the build log, the install log)."""
    root = tmp_path_factory.mktemp("client-only")
    wheel, build_log, _ = build_wheel(root / "dist")
    venv = root / "venv"
    made = make_venv(venv, wheel)
    return venv, build_log, made["log"]


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster([NodeSpec()]) as made:  # lean: one real node (the head) is enough here
        yield made


@pytest.fixture(scope="module")
def crash_loop(cluster):
    return actor_that_crashes_three_times(cluster, cluster.nodes[0].node_id)


def laptop_env(cluster, tmp_path) -> dict:
    env = clean_env()
    env.update(HOME=str(cluster.home), RAY_AUTH_TOKEN_PATH=str(cluster.token_path),
               RLDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    return env


def offline_env(tmp_path) -> dict:
    env = clean_env()
    env.update(HOME=str(tmp_path), RLDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    return env


def client_rldoctor(venv, *args, env, timeout=180) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "rldoctor"), *args], capture_output=True,
                          text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def full_rldoctor(*args, env, timeout=180) -> subprocess.CompletedProcess:
    return subprocess.run([RLDOCTOR, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, stdin=subprocess.DEVNULL)


def findings(report: dict, codes=None) -> list[tuple]:
    return sorted((f["code"], f["severity"], f["subject"], f["message"]) for f in report["findings"]
                  if codes is None or f["code"] in codes)


def test_built_and_installed_without_deprecation_warnings_and_without_ray_or_torch(client):
    venv, build_log, install_log = client
    for log in (build_log, install_log):
        said = [line for line in log.splitlines() if re.search(r"deprecat", line, re.I)]
        assert not said, said
    for module in CLUSTER_ONLY_MODULES:
        assert not importable(venv, module), f"{module} is importable in the client-only venv"
    for module in ("rldoctor", "click", "tabulate", "yaml", "prometheus_client"):
        assert importable(venv, module), module
    assert not (venv / "bin" / "py-spy").exists()
    version = client_rldoctor(venv, "--version", env=clean_env())
    assert version.returncode == 0, version.stderr
    assert "ray none: client only" in version.stdout
    assert f"(package {DISTRIBUTION} " in version.stdout, version.stdout  # ours, not the index's
    assert re.search(r"^python 3\.\d+\.\d+", version.stdout, re.M), version.stdout


def test_check_through_the_dashboard_diagnoses_the_crash_loop(client, cluster, crash_loop, tmp_path):
    venv = client[0]
    env = laptop_env(cluster, tmp_path)
    out = tmp_path / "report.json"
    proc = client_rldoctor(venv, "check", "--address", cluster.dashboard_url, "--format", "json",
                           "--output", str(out), env=env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    restarts = [f for f in report["findings"] if f["code"] == "RLD401"]
    assert restarts and any(crash_loop in f["subject"] for f in restarts), report["findings"]
    assert report["source"]["path"] == "dashboard"
    assert {row["node_id"] for row in report["cluster"]["rows"]} == {n.node_id for n in cluster.nodes}
    assert "Traceback" not in proc.stderr


def test_a_bundle_through_the_dashboard_and_check_from_it_as_the_full_install(
        client, cluster, crash_loop, tmp_path):
    venv = client[0]
    bundle = tmp_path / "incident.tar.gz"
    proc = client_rldoctor(venv, "collect", "--bundle", str(bundle), "--address",
                           cluster.dashboard_url, env=laptop_env(cluster, tmp_path), timeout=240)
    assert proc.returncode == 0 and bundle.exists(), proc.stderr[-3000:]
    env = offline_env(tmp_path)
    started = time.monotonic()
    light = client_rldoctor(venv, "check", "--from", str(bundle), "--format", "json", env=env)
    print(f"check --from a bundle in the client venv: {time.monotonic() - started:.2f}s")
    full = full_rldoctor("check", "--from", str(bundle), "--format", "json", env=env)
    assert light.returncode == full.returncode == 1, (light.stderr, full.stderr)
    report = json.loads(light.stdout)
    assert any(f["code"] == "RLD401" and crash_loop in f["subject"] for f in report["findings"])
    assert findings(report) == findings(json.loads(full.stdout))


@pytest.mark.parametrize("snapshot", ["training-hung.json", "node-dead.json", "auth-off-exposed.json"])
def test_check_from_a_snapshot_as_the_full_install(client, tmp_path, snapshot):
    env = offline_env(tmp_path)
    path = str(FIXTURES / snapshot)
    light = client_rldoctor(client[0], "check", "--from", path, "--format", "json", env=env)
    full = full_rldoctor("check", "--from", path, "--format", "json", env=env)
    assert light.returncode == full.returncode, (light.stderr, full.stderr)
    assert findings(json.loads(light.stdout)) == findings(json.loads(full.stdout))
    assert "Traceback" not in light.stderr


def test_check_run_list_and_explain_as_the_full_install(client, tmp_path):
    env = offline_env(tmp_path)
    for args in (["check", "--run", str(FIXTURES / "runs"), "--format", "json"], ["list"],
                 ["explain", "RLD401"], ["explain", "RLD802"]):
        light = client_rldoctor(client[0], *args, env=env)
        full = full_rldoctor(*args, env=env)
        assert light.returncode == full.returncode, (args, light.stderr)
        if args[0] == "check":
            assert findings(json.loads(light.stdout)) == findings(json.loads(full.stdout))
        else:
            assert light.stdout == full.stdout, args


def test_lint_gives_the_full_installs_findings_and_says_what_it_skipped(client, tmp_path):
    env = offline_env(tmp_path)
    path = str(FIXTURES / "lint")
    light = client_rldoctor(client[0], "lint", "--format", "json", path, env=env)
    full = full_rldoctor("lint", "--format", "json", path, env=env)
    assert light.returncode == full.returncode == 1, light.stderr
    mine, theirs = json.loads(light.stdout), json.loads(full.stdout)
    # RLD801 and RLD803: the same findings, read from the table of the pinned Ray
    assert findings(mine, {"RLD801", "RLD803"}) == findings(theirs, {"RLD801", "RLD803"})
    assert len(findings(mine, {"RLD801"})) > 100 and findings(mine, {"RLD803"})
    assert any("table shipped with rldoctor" in n for n in mine["notes"])
    # RLD802: rldoctor's own rules, on the same lines; Ray's validator skipped, and said so
    rld802 = next(c for c in mine["checks"] if c["code"] == "RLD802")
    assert rld802["status"] == "fail" and "validator" in rld802["detail"] and "skipped" in rld802["detail"]
    lines = {(f["location"]["path"], f["location"]["line"]) for f in theirs["findings"]
             if f["code"] == "RLD802"}
    ours = {(f["location"]["path"], f["location"]["line"]) for f in mine["findings"]
            if f["code"] == "RLD802"}
    assert ours and ours <= lines
    text = client_rldoctor(client[0], "lint", str(FIXTURES / "lint" / "rules" / "rld802_local.yaml"),
                           env=env)
    assert "RLD802: Ray's own cluster YAML validator" in text.stderr, text.stderr


def _refused(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "ImportError" not in proc.stderr
    assert EXTRA in lines[0], lines[0]
    return lines[0]


def test_what_needs_a_local_ray_is_one_line_and_exit_2(client, cluster, tmp_path):
    venv = client[0]
    env = laptop_env(cluster, tmp_path)
    gcs = cluster.address  # a live GCS: the refusal is not an unreachable head
    for args in (["check", "--address", gcs], ["collect", "--output", str(tmp_path / "s.json"),
                                              "--address", gcs],
                 ["collect", "--bundle", str(tmp_path / "b.tar.gz"), "--address", gcs],
                 ["watch", "--address", gcs, "--metrics-port", "0"], ["check"]):
        line = _refused(client_rldoctor(venv, *args, env=env, timeout=60))
        assert "http://HEAD:8265" in line and "kubectl port-forward" in line, line
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "b.tar.gz").exists()
    line = _refused(client_rldoctor(venv, "check", "--address", "auto", env=env, timeout=60))
    assert "finding the cluster on this machine" in line
    line = _refused(client_rldoctor(venv, "check", env={**env, "RAY_ADDRESS": gcs}, timeout=60))
    assert f"RAY_ADDRESS={gcs}" in line, line
    line = _refused(client_rldoctor(venv, "smoke-train", env=env, timeout=60))
    assert line.startswith("rldoctor: smoke-train") and "http://" not in line, line
    target = f"{ROOT / 'tests' / 'targets' / 'clean_env.py'}:LockedCartPole"
    line = _refused(client_rldoctor(venv, "check", "--target", target, env=env, timeout=60))
    assert "--target" in line, line


def test_watch_through_the_dashboard_serves_the_crash_loop(client, cluster, crash_loop, tmp_path):
    port = free_ports(1)[0]
    proc = subprocess.Popen([str(client[0] / "bin" / "rldoctor"), "watch", "--address",
                             cluster.dashboard_url, "--interval", "30", "--metrics-port", str(port),
                             "--log", str(tmp_path / "t.jsonl")], env=laptop_env(cluster, tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline, metrics = time.monotonic() + 90, ""
        while time.monotonic() < deadline and proc.poll() is None:
            metrics = scrape(port)
            if "rldoctor_up 1.0" in metrics and 'code="RLD401"' in metrics:
                break
            time.sleep(0.5)
        assert any(line.startswith("rldoctor_finding{") and 'code="RLD401"' in line and crash_loop in line
                   for line in metrics.splitlines()), (metrics[-3000:], proc.poll())
        proc.terminate()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "Traceback" not in err, err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_full_install_still_has_ray(tmp_path):
    """The other shape, for contrast: `make install` (.[cluster,test]) names its Ray."""
    proc = full_rldoctor("--version", env=_clean_env())
    assert proc.returncode == 0 and "ray 2.60.0" in proc.stdout, proc.stdout
