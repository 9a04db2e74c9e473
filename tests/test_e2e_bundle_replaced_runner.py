"""End to end: the bundle keeps the last lines of an env runner that died and was replaced.

A Tune PPO trial (tests/ppo_job.py --tune, RLlib's restarts on, as by default) whose env runner
1 prints an error to stderr and exits with code 17 after a few steps (a simulator that dropped
its connection); RLlib replaces the runner and the trial goes on. Once Ray recorded the dead
worker, `rldoctor collect --bundle` must hold that dead process's own `.err` lines (the issue's
report: none of them were in the bundle), under its own pid, whatever runs in its place now.
"""

from __future__ import annotations

import json
import tarfile
import time

import pytest

from conftest import PPOJob, run_rldoctor
from localcluster import three_nodes

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

LAST_WORDS = b"simulator.step() failed: the simulator closed the connection; giving up"

DEAD_17 = """
from ray.util.state import list_workers
rows = list_workers(filters=[("is_alive", "=", "False"), ("exit_type", "=", "SYSTEM_ERROR")],
                    detail=True, raise_on_missing_output=False)
# The raylet records os._exit(17) as the exit code when it reaps the worker first, or as the
# connection's end of file when the socket closes first (seen on 2.60: "Worker unexpectedly
# exits with a connection error code 2. End of file"); only the crashing runner dies here.
print("=>", ",".join(f"{w.worker_id}:{w.pid}" for w in rows
                     if "exit code 17" in (w.exit_detail or "")
                     or "connection error code 2" in (w.exit_detail or "")))
"""


def test_a_replaced_runners_last_lines_are_in_the_bundle(tmp_path):
    with three_nodes() as cluster:
        with PPOJob(cluster, "--runners", "2", "--runner-cpus", "0.5", "--crash-runner", "1",
                    "--tune", str(tmp_path / "tune"), "--name", "replaced", "--iterations", "1000") as job:
            deadline, dead = time.monotonic() + 240, []
            while not dead and time.monotonic() < deadline:
                assert job.proc.poll() is None, "\n".join(job.lines[-40:])
                out = cluster.run_driver(DEAD_17, timeout=60).strip()
                dead = [pair.split(":") for pair in out.split(",") if pair]
                if not dead:
                    time.sleep(3)
            assert dead, "\n".join(job.lines[-40:])
            bundle = tmp_path / "incident.tar.gz"
            made = run_rldoctor("collect", "--bundle", str(bundle), "--address", cluster.address,
                                env=cluster.client_env(), timeout=180)
            assert made.code == 0, made
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        manifest = json.load(tar.extractfile(f"{top}/manifest.json"))
        for worker_id, pid in dead:
            items = [i for i in manifest["items"] if i.get("worker_id") == worker_id
                     and i["name"].endswith(".err")]
            assert items and items[0]["status"] == "ok", (worker_id, manifest["items"])
            assert str(items[0]["pid"]) == pid
            assert LAST_WORDS in tar.extractfile(f"{top}/{items[0]['file']}").read()
