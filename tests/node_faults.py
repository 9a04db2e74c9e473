"""Node-level faults for real clusters: a small, full tmpfs as a node's temp dir, a
sitecustomize that hangs a node's worker processes at start (and the wait for its raylet to
say so). Each undoes itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HANG_SITECUSTOMIZE = """
import time
try:
    with open("/proc/self/cmdline", "rb") as f:
        if b"default_worker.py" in f.read():  # Ray's worker processes only, not ray start or agents
            time.sleep(SECONDS)
except OSError:
    pass
"""


def tmpfs_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if not Path("/bin/mount").exists() and not Path("/usr/bin/mount").exists():
        return "no mount command"
    return None


class SmallTmpfs:
    """A tmpfs of `size_mib` MiB mounted on a fresh directory; `fill_to(fraction)` writes a
    file until the file system is that full. Unmounted (and removed) on exit."""

    def __init__(self, size_mib: int):
        self.size_mib = size_mib
        self.path = Path(tempfile.mkdtemp(prefix="rldoctor-tmpfs-", dir="/tmp"))
        self.mounted = False

    def __enter__(self) -> "SmallTmpfs":
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mib}m,mode=0777", "tmpfs",
                        str(self.path)], check=True, capture_output=True)
        self.mounted = True
        return self

    def used_fraction(self) -> float:
        st = os.statvfs(self.path)
        return 1 - st.f_bavail / st.f_blocks

    def fill_to(self, fraction: float, name: str = "filler.bin") -> int:
        st = os.statvfs(self.path)
        target = int(st.f_blocks * st.f_frsize * fraction) - (st.f_blocks - st.f_bavail) * st.f_frsize
        if target > 0:
            with open(self.path / name, "ab") as f:
                f.write(b"\0" * target)
        return max(0, target)

    def __exit__(self, *exc) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
        try:
            self.path.rmdir()
        except OSError:
            pass


def hang_site(directory: Path, seconds: float = 3600) -> str:
    """A directory holding a sitecustomize.py that holds Ray's worker processes at start for
    `seconds` (by default: they hang); put it on a node's PYTHONPATH."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(HANG_SITECUSTOMIZE.replace("SECONDS", repr(seconds)))
    return str(directory)


WORKERS_NOT_REGISTERED = "have not registered within the timeout"


def wait_for_workers_not_registered(cluster, index: int, timeout_s: float) -> None:
    """Until node `index`'s raylet has written that its workers did not register in time (its
    worker_register_timeout_seconds after a task was pinned there), at most `timeout_s`."""
    logs = cluster.temp_dir / "session_latest" / "logs"
    own = f"raylet{cluster.log_suffix(index)}.*"  # nodes share one log folder
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not any(
            WORKERS_NOT_REGISTERED in path.read_text(errors="replace") for path in logs.glob(own)):
        time.sleep(0.5)


NEEDY_ACTOR = """
@ray.remote(num_cpus=0)
class NeedsAPackage:
    def ping(self):
        return 1
a = NeedsAPackage.options(name="needs-a-package", namespace="e2e", lifetime="detached",
                          label_selector={"ray.io/node-id": NODE}, runtime_env={
    "pip": [PACKAGE], "env_vars": ENV_VARS}).remote()
try:
    ray.get(a.ping.remote(), timeout=150)
    outcome = "started"
except Exception as exc:
    outcome = type(exc).__name__
@ray.remote(num_cpus=0)
def needs_a_package_too():
    return 1
ref = needs_a_package_too.options(label_selector={"ray.io/node-id": NODE},
                                  runtime_env={"pip": [PACKAGE + "-task"]}).remote()
try:
    ray.get(ref, timeout=150)
    task_outcome = "finished"
except Exception as exc:
    task_outcome = type(exc).__name__
print("=>", a._actor_id.hex(), outcome, ref.task_id().hex(), task_outcome)
"""


def actor_needing(cluster, node_id: str, package: str, env_vars: dict) -> tuple[str, str, str, str]:
    """A detached actor on `node_id` whose runtime_env asks pip for `package`, then a task
    there whose runtime_env asks for `package`-task: (the actor's id, how its first call
    ended, the task's id, how it ended)."""
    code = f"NODE = {node_id!r}\nPACKAGE = {package!r}\nENV_VARS = {env_vars!r}\n" + NEEDY_ACTOR
    actor_id, outcome, task_id, task_outcome = cluster.run_driver(code, timeout=360,
                                                                  expect_lines=1).split()
    return actor_id, outcome, task_id, task_outcome


def submit_job_needing(cluster, package: str, submission_id: str) -> str:
    """`ray job submit --no-wait` of a job whose runtime_env asks pip for `package`."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ray"), "job", "submit", "--address",
         cluster.dashboard_url, "--no-wait", "--submission-id", submission_id,
         "--runtime-env-json", json.dumps({"pip": [package]}), "--", "python", "-c", "print(1)"],
        env=cluster.client_env(), capture_output=True, text=True, timeout=60)
    if done.returncode:
        raise RuntimeError(f"ray job submit failed: {done.stderr[-2000:]}")
    return submission_id
