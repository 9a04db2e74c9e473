"""How `make test` runs the suite: two tests at a time, modules kept whole, long ones first.

`make test` runs pytest with two workers (pytest-xdist, with the scheduler below). What decides
where and when a test runs is here, applied by conftest.py at collection:

- **A module is one unit of work** (xdist's scheduling by scope, a unit as the scope): all its
  tests run on one worker, in file order, so a
  module-scoped cluster is started once. Modules that share a session-scoped cluster are one
  unit too (`SHARED`): they run on one worker, in the order given there.
- **Long units first** (`LONG_FIRST`, the slowest modules of the last measured run, slowest
  first): the two workers then end close together instead of one waiting on a long module
  picked up last. A module not listed runs after them, in file order.
- **Timing-sensitive tests run alone** (`@pytest.mark.serial`, or a module's
  `pytestmark`): while one runs, the other worker waits between its tests (a file lock,
  shared by every other test, exclusive for these). A test that bounds a time, compares two
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
SHARED: dict[str, list[str]] = {}

# The slowest units of the last measured run (tests/README.md), slowest first.
LONG_FIRST: list[str] = []


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
            return unit_of(_module(nodeid))

    config.option.loadscopereorder = False  # the order is the collection's (below)
    return UnitScheduling(config, log)


def _module(nodeid_or_path: str) -> str:
    return Path(nodeid_or_path.split("::", 1)[0]).stem


def pytest_collection_modifyitems(config, items) -> None:
    """Long units first, modules of a shared unit in their order, file order otherwise."""
    def key(placed):
        index, item = placed
        module = _module(str(item.fspath))
        return rank(unit_of(module), module), index

    items[:] = [item for _, item in sorted(enumerate(items), key=key)]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under `make test`'s workers: a serial test (setup, call and teardown) runs alone, every
    other test beside at most one more. A run with no workers takes no lock.

    Two lock files in the run's own temp root: `tests.lock`, shared by every test and exclusive
    for a serial one, and `turnstile.lock`, which a serial test holds while it waits so that no
    new test slips in ahead of it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    import fcntl

    root = item.config._tmp_path_factory.getbasetemp().parent  # shared by the run's workers
    serial = item.get_closest_marker("serial") is not None
    with open(root / "turnstile.lock", "a") as turnstile, open(root / "tests.lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if serial:
            fcntl.flock(lock, fcntl.LOCK_EX)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        else:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
