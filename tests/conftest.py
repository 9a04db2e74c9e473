"""Shared test plumbing: the real local clusters and a way to run the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from localcluster import LocalCluster, NodeSpec  # noqa: E402
# How `make test` runs the suite (two at a time, modules whole, serial tests alone): its hooks.
import suite_plan  # noqa: E402
from suite_plan import (pytest_collection_modifyitems, pytest_configure, serial_module_alone,  # noqa: E402,F401
                        pytest_xdist_make_scheduler, pytest_runtest_protocol, serial_test_alone)

RLDOCTOR = str(Path(sys.executable).parent / "rldoctor")
FIXTURES = ROOT / "fixtures"


class CliResult:
    def __init__(self, proc: subprocess.CompletedProcess, seconds: float):
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds

    def json(self) -> dict:
        return json.loads(self.stdout)

    def findings(self, code: str | None = None) -> list[dict]:
        found = self.json()["findings"]
        return [f for f in found if code is None or f["code"] == code]

    def __repr__(self) -> str:
        try:  # a JSON report: show the findings, not the tail of the text
            shown = "\n".join(f"{f['severity']} {f['code']} {f['subject']}: {f['message'][:200]}"
                               for f in self.findings())
        except (ValueError, KeyError):
            shown = self.stdout[-3000:]
        return (f"<rldoctor exit {self.code} in {self.seconds:.1f}s\nstdout:\n{shown}"
                f"\nstderr:\n{self.stderr[-3000:]}>")


def run_rldoctor(*args: str, env: dict | None = None, timeout: float = 120,
                 prefix: list[str] = ()) -> CliResult:
    """Run the installed `rldoctor` console script as a user would (under `prefix`, e.g. on
    a test host of its own: `ip netns exec <ns>`)."""
    started = time.monotonic()
    proc = subprocess.run([*prefix, RLDOCTOR, *args], capture_output=True, text=True,
                          timeout=timeout, env=env if env is not None else _clean_env(),
                          stdin=subprocess.DEVNULL)
    return CliResult(proc, time.monotonic() - started)


def interruptible() -> None:
    """A child's SIGINT back at its default (Python then raises KeyboardInterrupt on it), for a
    test that presses Ctrl-C: a suite started in the background by a shell (`make test &`)
    runs with SIGINT ignored, and its children inherit that."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def lint_paths(paths: list[str]):
    """`rldoctor lint`'s diagnosis of `paths` (no ignore file): (report, problems, doc)."""
    from rldoctor.engine.pipeline import Diagnosis

    return Diagnosis.from_options(lint=True, read_mutes=False).lint(paths)


def check_json(cluster: LocalCluster) -> CliResult:
    """`rldoctor check --format json` against `cluster`; it must diagnose (exit 0 or 1)."""
    result = run_rldoctor("check", "--address", cluster.address, "--format", "json",
                          env=cluster.client_env(), prefix=cluster.client_prefix)
    assert result.code in (0, 1), result
    return result


def wait_for_findings(cluster: LocalCluster, code: str, predicate=lambda finding: True,
                      timeout_s: float = 30) -> tuple[CliResult, list[dict]]:
    """Check again, once a second, until a `code` finding matches `predicate` or time is up.

    Ray reports demands, task events and spilling to the GCS about once a second, so
    a fault made a moment ago may need a second look.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = check_json(cluster)
        found = [f for f in result.findings(code) if predicate(f)]
        if found or time.monotonic() > deadline:
            return result, found
        time.sleep(1)


class PPOJob:
    """tests/ppo_job.py running as its own driver against a test cluster (see that file)."""

    def __init__(self, cluster: LocalCluster, *args: str, env: dict | None = None):
        import threading

        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            # the cluster's own Python: another Ray release's venv runs its own RLlib
            [cluster.python, str(ROOT / "tests" / "ppo_job.py"), "--address", cluster.address,
             *args], env=env or cluster.client_env(), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def iterations(self) -> int:
        return sum(1 for line in self.lines if line.startswith("=> iteration"))

    def wait_for(self, predicate, timeout_s: float = 120, what: str = "progress") -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate(self):
            if self.proc.poll() is not None:
                raise RuntimeError(f"PPO job exited {self.proc.returncode} before {what}:\n"
                                   + "\n".join(self.lines[-40:]))
            if time.monotonic() > deadline:
                raise TimeoutError(f"PPO job: no {what} in {timeout_s}s:\n"
                                   + "\n".join(self.lines[-40:]))
            time.sleep(0.2)

    def wait_iterations(self, count: int, timeout_s: float = 120) -> None:
        self.wait_for(lambda job: job.iterations >= count, timeout_s, f"{count} iteration(s)")

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(10)

    def __enter__(self) -> "PPOJob":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}


def run_driver(cluster: LocalCluster, code: str, timeout: float = 120) -> str:
    return cluster.run_driver(code, timeout)


@pytest.fixture
def cli():
    return run_rldoctor


NO_RLDOCTOR = """
import sys


class _NoRldoctorHere:
    \"\"\"This node is a production node: rldoctor is not installed on it.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name == "rldoctor" or name.startswith("rldoctor."):
            raise ModuleNotFoundError(f"No module named {name!r} on this node")
        return None


sys.meta_path.insert(0, _NoRldoctorHere())
"""


@pytest.fixture(scope="module")
def cluster3(request, tmp_path_factory):
    """A healthy 3-node cluster (head + 2 workers, one zone, token auth), torn down after the
    module, or after the last module of its unit when modules share it (`suite_plan.SHARED`).

    Worker node 1 cannot import rldoctor, like a production node: whatever rldoctor
    runs there must travel by value.
    """
    def start() -> LocalCluster:
        site = tmp_path_factory.mktemp("no-rldoctor-site")
        (site / "sitecustomize.py").write_text(NO_RLDOCTOR)
        specs = [NodeSpec(labels={"ray.io/availability-zone": "zone-a"}) for _ in range(3)]
        specs[1].env["PYTHONPATH"] = str(site)
        return LocalCluster(specs).start()

    yield from shared_cluster(request, start)


_SHARED_RUNNING: dict[str, LocalCluster] = {}  # unit -> its cluster, while its modules run


def shared_cluster(request, start):
    """The cluster `start()` makes, for the requesting module (a module fixture's body: `yield
    from`). A module of a `suite_plan.SHARED` unit shares it with the unit's other modules: it
    is started for the first of them that runs and stopped after the last one this run holds
    (they run on one worker, in the unit's order). Any other module has one of its own."""
    module = suite_plan.module_name(str(request.fspath))
    unit = suite_plan.unit_of(module)
    if unit == module:
        cluster = start()
        try:
            yield cluster
        finally:
            cluster.stop()
        return
    if unit not in _SHARED_RUNNING:
        _SHARED_RUNNING[unit] = start()
    try:
        yield _SHARED_RUNNING[unit]
    finally:
        here = {suite_plan.module_name(str(item.fspath)) for item in request.session.items}
        last = [m for m in suite_plan.SHARED[unit] if m in here][-1]
        if module == last:
            _SHARED_RUNNING.pop(unit).stop()


def host_disk(path: str = "/tmp") -> tuple[float, float, bool]:
    """(used fraction by Ray's arithmetic, GiB before Ray's threshold, close by RLD305's bars) of
    the host's file system under `path` (every test cluster's temp dir is under /tmp)."""
    from rldoctor.checks.memory.disk import RAY_DEFAULT_THRESHOLD, _headroom, disk_pressure

    fs = os.statvfs(path)
    total, free = fs.f_blocks * fs.f_frsize, fs.f_bavail * fs.f_frsize
    used = 1 - free / total if total else 0.0
    headroom = _headroom({"total_bytes": total, "free_bytes": free}, RAY_DEFAULT_THRESHOLD)
    close = (used >= RAY_DEFAULT_THRESHOLD - disk_pressure.params["warn_margin"]
             and headroom < disk_pressure.params["warn_headroom_bytes"])
    return used, headroom / 2**30, close


def host_disk_close() -> bool:
    return host_disk()[2]


def pytest_report_header(config):
    """The host's /tmp as RLD305 judges a node's temp dir: a disk close to Ray's threshold is a
    true RLD305 on every healthy test cluster, said here first so that the failures it causes
    are read for what they are."""
    from rldoctor.checks.memory.disk import RAY_DEFAULT_THRESHOLD

    used, left, close = host_disk()
    line = f"host /tmp: {used:.1%} full by Ray's arithmetic, {left:.1f} GiB before Ray's {RAY_DEFAULT_THRESHOLD:g}"
    return line + (": CLOSE TO FULL, healthy test clusters will show RLD305" if close else "")
