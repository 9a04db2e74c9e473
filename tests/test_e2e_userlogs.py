"""Real clusters broken on purpose, diagnosed from the broken node's files alone and from its
single most telling file (issue 47): a raylet killed with SIGABRT, a dashboard agent killed so
its raylet exits, a GCS at its open-files limit, a worker that segfaults in an env
(`ctypes.string_at(0)`). tests/record_userlogs.py records the same scenarios as fixtures.
"""

from __future__ import annotations

import signal
import time

import pytest

from localcluster import LocalCluster, NodeSpec
from record_userlogs import break_node, gcs_out_of_files, telling_file
from rldoctor.engine.runner import run_checks
from rldoctor.inputs import source
from rldoctor.registry import load_registry

pytestmark = pytest.mark.cluster


def _findings(path, code, stdin=None):
    snap, _, _ = source.read(str(path), stdin=stdin)
    results = run_checks(load_registry(include_plugins=False).checks, snap)
    return [f for r in results for f in r.findings if f.code == code]


@pytest.mark.parametrize("program, sig, word", [
    ("raylet", signal.SIGABRT, "SIGABRT"),
    ("ray::DashboardAgent", signal.SIGKILL, "dashboard_agent"),
])
def test_a_broken_node_is_named_from_its_files_and_from_its_raylet_err_alone(tmp_path, program,
                                                                              sig, word):
    into = tmp_path / "volume"
    node_id = break_node(None, program, sig, into)
    node_dir = into / "node1"
    for given in (into, node_dir, telling_file(node_dir)):
        found = _findings(given, "RLD101")
        assert found, given
        assert any(word in f.message for f in found), (given, [f.message for f in found])
        assert all(f.fix for f in found)
    [whole] = _findings(into, "RLD101")
    assert whole.subject == f"node:{node_id}"


def test_a_gcs_at_its_open_files_limit_is_named_from_gcs_server_err(tmp_path):
    text = gcs_out_of_files(None)
    err = tmp_path / "gcs_server.err"
    err.write_text(text)
    [found] = _findings(err, "RLD107")
    assert "the GCS" in found.message and "65535" in found.fix


def test_a_worker_segfault_is_named_from_its_err_alone(tmp_path):
    code = ("import ctypes\n"
            "@ray.remote(max_restarts=0)\n"
            "class CrashyEnv:\n"
            "    def step(self):\n"
            "        return ctypes.string_at(0)\n"
            "a = CrashyEnv.remote()\n"
            "try:\n"
            "    ray.get(a.step.remote(), timeout=60)\n"
            "except Exception as exc:\n"
            "    print('=>', type(exc).__name__)\n")
    with LocalCluster([NodeSpec(num_cpus=1)], dashboard=False) as cluster:
        assert cluster.run_driver(code, expect_lines=1) == "ActorDiedError"
        time.sleep(2)
        logs = (cluster.temp_dir / "session_latest").resolve() / "logs"
        errs = [p for p in list(logs.glob("worker-*.err")) + list(logs.glob("old/worker-*.err"))
                if "Fatal Python error" in p.read_text(errors="replace")]
        assert errs
        [found] = _findings(errs[0], "RLD403")
        pid = errs[0].name.rsplit("-", 1)[-1].split(".")[0]
        assert "Segmentation fault" in found.message or "SIGSEGV" in found.message
        assert pid in found.message and "CrashyEnv" in found.message
        found = _findings(logs, "RLD403")  # the node's whole logs/ too
        assert any(pid in f.message or pid in str(f.evidence) for f in found)
