"""How `make test` runs the suite: two tests at a time, modules kept whole, long ones first.

`make test` runs pytest with two workers (pytest-xdist, with the scheduler below). What decides
where and when a test runs is here, applied by conftest.py at collection:

- **A module is one unit of work** (xdist's scheduling by scope, a unit as the scope): all its
  tests run on one worker, in file order, so a
  module-scoped cluster is started once. Modules that share a session-scoped cluster are one
  unit too (`SHARED`): they run on one worker, in the order given there.
- **Units holding a serial test first** (those of short tests before those that start
  clusters), in file order: a serial test waits for the other worker's test in progress to
  end, which early on is a short one, not a training. (Lanes, one worker taking every
  serial unit while the other took the short ones, were measured: the serial units in a
  row on one worker made the long units start at minute 10 and the run longer.)
- **Then long units** (`LONG_FIRST`, the slowest modules of the last measured run, slowest
  first): the two workers then end close together instead of one waiting on a long module
  picked up last. A module not listed runs after them, in file order.
- **Timing-sensitive tests run alone** (`@pytest.mark.serial`): while one runs, the other
  worker waits between its tests (a file lock, shared by every other test, exclusive for
  these). A serial test holds it alone from the end of its wider setup (the module's and the
  session's fixtures it is the first to need, e.g. its cluster, set up beside other tests) to
  the end of its own teardown (`serial_test_alone`). A module whose `pytestmark` has `serial` runs alone from the end of its unlocked
  setup (the fixtures named in its `BEFORE_THE_LOCK`, e.g. its cluster) to its last test's
  teardown (`serial_module_alone`): what its fixtures measure next (a healthy check's time,
  the host's memory) holds for all of its tests. A test that bounds a time, compares two
  measured times or measures the host (latency, throughput, memory growth) is serial; one
  whose bound is far from what it measures (a 15 s bound on a 3 s exit) is not.

Adding a module: nothing to do for a unit test. A module that starts clusters is found by its
`cluster` mark; put it in `LONG_FIRST` if it takes more than about 30 s (see `--durations`
in `make test`'s output), and mark serial what measures time. A test run on its own
(`pytest tests/test_x.py`) runs exactly as before: no workers, no lock.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Modules sharing one cluster (a session-scoped fixture of conftest.py), in the order they
# must run: the ones that assert that nothing else is wrong first, the ones that leave dead
# actors, failed jobs or crash loops after, those that kill a node last.
SHARED: dict[str, list[str]] = {
    # conftest.cluster3: test_e2e_overview's actor holds a CPU and 30 MiB until its module ends
    # (killed, its CPU and store freed, which leaves no finding); the auth module's three token
    # tests only check (a stale token, none, the right one); test_e2e_cluster asserts a healthy
    # cluster first and kills node 2 last
    "cluster3": ["test_e2e_overview", "test_e2e_auth", "test_e2e_cluster"],
}

# The slowest units of the last measured runs (tests/README.md), slowest first, except that the
# modules that mostly wait (an idle timeout, Ray's 60 s register timeout, a node's death) sit
# apart, each beside ones that keep the cores busy: two waiting side by side left the host 45 %
# idle for a minute (test_e2e_userlogs beside test_e2e_workers_not_starting_default), and the two
# autoscaler modules (launches, idle timeouts, a 100 s pause) 16-48 % for four minutes; other_ray
# and node_faults sit between them. Among the units of short tests that hold a serial test,
# test_dashboard_units (about a minute) goes first, beside the other short ones: picked up last,
# its serial tests waited for a cluster module's tests (54 s became 88 s).
LONG_FIRST: list[str] = [
    "test_dashboard_units", "test_e2e_autoscaler", "test_e2e_other_ray", "test_e2e_node_faults",
    "test_e2e_autoscaler_ray240", "test_e2e_job_failed_ray240", "test_e2e_job_failed",
    "test_e2e_bundle_replaced_runner", "test_e2e_userlogs", "test_smoke_e2e", "test_e2e_dashboard",
    "test_e2e_workers_not_starting_default", "test_e2e_training", "test_e2e_postmortem_logs",
    "test_serialization_e2e", "test_e2e_cgroup", "test_client_only", "test_e2e_preflight",
]


def unit_of(module: str) -> str:
    """The unit of work (xdist group) that a test module belongs to."""
    for name, members in SHARED.items():
        if module in members:
            return name
    return module


def rank(unit: str, module: str) -> tuple[int, int]:
    """Where a unit runs in the order, and where a module runs inside its unit."""
    first = LONG_FIRST.index(unit) if unit in LONG_FIRST else len(LONG_FIRST)
    inside = SHARED[unit].index(module) if unit in SHARED else 0
    return first, inside


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "serial: timing-sensitive: runs while no other test runs (tests/suite_plan.py)")


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's scheduling by scope, with a unit as the scope, in the collection's order."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(module_name(nodeid))

    config.option.loadscopereorder = False  # the order is the collection's (below)
    return UnitScheduling(config, log)


def module_name(nodeid_or_path: str) -> str:
    """A test module's name (its file's stem), from a node id or a path."""
    return Path(nodeid_or_path.split("::", 1)[0]).stem


def pytest_collection_modifyitems(config, items) -> None:
    """Units holding a serial test first (those of short tests before those that start
    clusters), then long units, then the rest; modules of a shared unit in their order, file
    order otherwise."""
    serial_units = {unit_of(module_name(str(item.fspath))) for item in items
                    if item.get_closest_marker("serial") is not None}
    cluster_units = {unit_of(module_name(str(item.fspath))) for item in items
                     if item.get_closest_marker("cluster") is not None}

    def key(placed):
        index, item = placed
        module = module_name(str(item.fspath))
        unit = unit_of(module)
        return (unit not in serial_units, unit in serial_units and unit in cluster_units,
                rank(unit, module), index)

    items[:] = [item for _, item in sorted(enumerate(items), key=key)]


# The lock this worker holds: {"files": the open lock files, "module": the serial module that
# holds it exclusively from its unlocked setup to its end, or None}
_HELD: dict = {"files": None, "module": None}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under `make test`'s workers: every test runs beside at most one more (the lock, shared),
    and a serial test alone from the end of its wider setup (`serial_test_alone`) to the end of
    its own teardown. A serial module (`pytestmark`) is held alone by `serial_module_alone`
    below. A run with no workers takes no lock."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or _HELD["module"] == item.module.__name__:
        yield
        return
    _HELD["files"] = _take(_root(item.config), exclusive=False)
    try:
        yield
    finally:
        if _HELD["module"] is None:
            _release()


@pytest.fixture(autouse=True)
def serial_test_alone(request):
    """A serial test (`@pytest.mark.serial` in a module that is not serial) runs alone from here:
    its module's and the session's fixtures (a cluster, a warmed-up cluster) are set up by then,
    beside other tests (pytest sets up wider fixtures before a test's own), so what the test
    measures next holds; the lock is shared again for its module's teardown."""
    item = request.node
    if (not os.environ.get("PYTEST_XDIST_WORKER") or _serial_module(item.module)
            or item.get_closest_marker("serial") is None):
        yield
        return
    _release()
    _HELD["files"] = _take(_root(item.config), exclusive=True)
    try:
        yield
    finally:
        _release()
        _HELD["files"] = _take(_root(item.config), exclusive=False)


@pytest.fixture(scope="module", autouse=True)
def serial_module_alone(request):
    """A serial module runs alone from the end of its unlocked setup to its last test's
    teardown: the fixtures it names in `BEFORE_THE_LOCK` (its cluster: starting one needs no
    quiet host) are set up beside other tests, then it waits for the lock alone, so what its
    fixtures measure next (a healthy check's time, the host's memory) holds for all of its
    tests."""
    module = request.module
    if not os.environ.get("PYTEST_XDIST_WORKER") or not _serial_module(module):
        yield
        return
    for name in getattr(module, "BEFORE_THE_LOCK", ()):
        request.getfixturevalue(name)
    _release()
    _HELD.update(files=_take(_root(request.config), exclusive=True), module=module.__name__)
    try:
        yield
    finally:
        _release()


def _release() -> None:
    for f in _HELD["files"] or ():
        f.close()  # closing a file releases its lock
    _HELD.update(files=None, module=None)


def _root(config) -> Path:
    """The run's own temp root, shared by its workers: where the lock files are."""
    return config._tmp_path_factory.getbasetemp().parent


def _serial_module(module) -> bool:
    marks = getattr(module, "pytestmark", [])
    return any(mark.name == "serial" for mark in (marks if isinstance(marks, list) else [marks]))


def _take(root: Path, exclusive: bool) -> tuple:
    """The run's lock, shared or exclusive. Two files in the run's temp root: `tests.lock`, and
    `turnstile.lock`, which an exclusive taker holds while it waits so that no new test slips
    in ahead of it."""
    import fcntl

    turnstile, lock = open(root / "turnstile.lock", "a"), open(root / "tests.lock", "a")
    fcntl.flock(turnstile, fcntl.LOCK_EX)
    if exclusive:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
    else:
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        fcntl.flock(lock, fcntl.LOCK_SH)
    return turnstile, lock
