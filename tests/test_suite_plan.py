"""The way `make test` runs the suite (tests/suite_plan.py), run for real on a small suite of
its own: two workers, each module whole, long units first, a serial test alone (its wider
fixtures set up beside other tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import suite_plan

TESTS = Path(__file__).resolve().parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from suite_plan import (pytest_collection_modifyitems, pytest_configure,
                        pytest_runtest_protocol, pytest_xdist_make_scheduler,
                        serial_module_alone, serial_test_alone)
"""

# Each test records when it ran (its setup, call and teardown inside the span).
MODULE = """
import os, time
import pytest

def _ran(name, seconds):
    started = time.time()
    open(os.path.join({marks!r}, os.environ.get("PYTEST_XDIST_WORKER", "")), "w").close()
    time.sleep(seconds)
    line = f"{{name}} {{os.environ.get('PYTEST_XDIST_WORKER')}} {{started}} {{time.time()}}\\n"
    os.write(os.open({log!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT), line.encode())

def _wait_for_the_other_worker():
    # until the other worker has started a test (a worker can start seconds after the other on
    # a loaded host): the serial test that follows (its module fixture set up first, beside the
    # other's tests) then falls inside the other's run
    me = os.environ.get("PYTEST_XDIST_WORKER", "")
    deadline = time.time() + 30
    while time.time() < deadline and not set(os.listdir({marks!r})) - {{me}}:
        time.sleep(0.05)

{tests}
"""


def _suite(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "ran.log"
    marks = tmp_path / "started"
    marks.mkdir()
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    # Units holding a serial test go first: test_one (ten tests, its last one serial) keeps a
    # worker busy while the other runs test_two, whose serial test (after a first test that waits
    # until the other worker has started) would fall in the middle of test_one without the lock,
    # then test_whole, a serial module, between whose tests one of test_one's would run without
    # its hold; test_three (no serial test) comes last
    tests = {
        "test_one": [f"def test_one_{i}():\n    _ran('one_{i}', 0.6)\n" for i in "abcdefghi"]
        + ["@pytest.mark.serial\ndef test_one_j():\n    _ran('one_j', 0.1)\n"],
        "test_two": ["def test_two_a():\n    _wait_for_the_other_worker()\n    _ran('two_a', 0.6)\n",
                     "@pytest.fixture(scope='module')\ndef ready():\n    _ran('two_setup', 0.9)\n",
                     "@pytest.mark.serial\ndef test_two_timed(ready):\n    _ran('two_timed', 0.6)\n"],
        "test_three": ["def test_three_a():\n    _ran('three_a', 0.6)\n",
                       "def test_three_b():\n    _ran('three_b', 0.6)\n"],
        "test_whole": ["pytestmark = pytest.mark.serial\nBEFORE_THE_LOCK = ('made',)\n",
                       "@pytest.fixture(scope='module')\ndef made():\n    _ran('whole_setup', 0.9)\n"]
        + [f"def test_whole_{i}(made):\n    _ran('whole_{i}', 0.3)\n" for i in "abcd"],
    }
    for module, bodies in tests.items():
        (suite / f"{module}.py").write_text(MODULE.format(log=str(log), marks=str(marks), tests="\n\n".join(bodies)))
    return suite


def _run_suite(tmp_path: Path) -> dict:
    """The small suite run by two workers: {test: (worker, start, end)}."""
    suite = _suite(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider",
                           "-q", str(suite)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    spans = {}
    for line in (tmp_path / "ran.log").read_text().splitlines():
        name, worker, start, end = line.split()
        spans[name] = (worker, float(start), float(end))
    assert len(spans) == 20, spans
    return spans


def _within_the_others_work(spans: dict, first: str, last: str) -> bool:
    """Whether the other worker ran a test that started before `first` and one that ended after
    `last`: had it not waited, one of its tests would have run beside them."""
    worker, start, end = spans[first][0], spans[first][1], spans[last][2]
    others = [span for span in spans.values() if span[0] != worker]
    return any(s < start for _, s, _ in others) and any(e > end for _, _, e in others)


def _beside_the_others_work(spans: dict, name: str) -> bool:
    """Whether a test of the other worker ran while `name` did."""
    worker, start, end = spans[name]
    return any(w != worker and s < end and start < e for w, s, e in spans.values())


def test_two_workers_keep_modules_whole_and_run_serial_tests_and_modules_alone(tmp_path):
    # The workers take units as they free up: run until the serial test and module each fell
    # inside the other worker's run (nearly always the first time)
    for attempt in range(4):
        spans = _run_suite(tmp_path / str(attempt))
        if _within_the_others_work(spans, "two_timed", "two_timed") \
                and _within_the_others_work(spans, "whole_a", "whole_d") \
                and _beside_the_others_work(spans, "whole_setup") \
                and _beside_the_others_work(spans, "two_setup"):
            break
    else:
        raise AssertionError("the serial test or module never fell inside the other's run, or the "
                             f"serial test's or module's unlocked setup never ran beside it: {spans}")

    def overlap(a, b):
        return spans[a][1] < spans[b][2] and spans[b][1] < spans[a][2]

    # each module on one worker
    for module in ("one", "two", "three", "whole"):
        assert len({w for n, (w, _, _) in spans.items() if n.startswith(module)}) == 1, spans
    # two at a time: some tests of different modules overlapped
    assert any(overlap(a, b) for a in spans for b in spans
               if a.split("_")[0] != b.split("_")[0]), spans
    # the serial test alone (its module's fixture, set up before it, aside)
    assert not any(overlap("two_timed", other) for other in spans if other != "two_timed"), spans
    # the serial module alone from its first test to its last (its setup before the lock aside)
    spans["whole"] = ("", spans["whole_a"][1], spans["whole_d"][2])
    assert not any(overlap("whole", other) for other in spans if not other.startswith("whole")), spans


def test_units_listed_as_long_run_first_and_shared_modules_stay_together(monkeypatch):
    monkeypatch.setattr(suite_plan, "SHARED", {"healthy3": ["test_b", "test_a"]})
    monkeypatch.setattr(suite_plan, "LONG_FIRST", ["test_z", "healthy3"])
    assert suite_plan.unit_of("test_a") == suite_plan.unit_of("test_b") == "healthy3"
    assert suite_plan.unit_of("test_c") == "test_c"
    order = sorted(["test_a", "test_b", "test_c", "test_z"],
                   key=lambda m: suite_plan.rank(suite_plan.unit_of(m), m))
    assert order == ["test_z", "test_b", "test_a", "test_c"]


def test_the_plan_names_only_modules_that_exist():
    modules = {p.stem for p in TESTS.glob("test_*.py")}
    units = set(suite_plan.SHARED) | modules
    assert set(suite_plan.LONG_FIRST) <= units, set(suite_plan.LONG_FIRST) - units
    for members in suite_plan.SHARED.values():
        assert set(members) <= modules, set(members) - modules

