"""The way `make test` runs the suite (tests/suite_plan.py), run for real on a small suite of
its own: two workers, each module whole, long units first, a serial test alone."""

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
                        pytest_runtest_protocol, pytest_xdist_make_scheduler)
"""

# Each test records when it ran (its setup, call and teardown inside the span).
MODULE = """
import os, time
import pytest

def _ran(name, seconds):
    started = time.time()
    time.sleep(seconds)
    line = f"{{name}} {{os.environ.get('PYTEST_XDIST_WORKER')}} {{started}} {{time.time()}}\\n"
    os.write(os.open({log!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT), line.encode())

{tests}
"""


def _suite(tmp_path: Path) -> Path:
    log = tmp_path / "ran.log"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    # test_one keeps a worker busy while the other runs test_three, then test_two, whose
    # serial test would fall in the middle of test_one without the lock
    tests = {
        "test_one": [f"def test_one_{i}():\n    _ran('one_{i}', 0.6)\n" for i in "abcde"],
        "test_two": ["@pytest.mark.serial\ndef test_two_timed():\n    _ran('two_timed', 0.6)\n",
                     "def test_two_a():\n    _ran('two_a', 0.6)\n"],
        "test_three": ["def test_three_a():\n    _ran('three_a', 0.6)\n",
                       "def test_three_b():\n    _ran('three_b', 0.6)\n"],
    }
    for module, bodies in tests.items():
        (suite / f"{module}.py").write_text(MODULE.format(log=str(log), tests="\n\n".join(bodies)))
    return suite


def test_two_workers_keep_modules_whole_and_run_a_serial_test_alone(tmp_path):
    suite = _suite(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q", str(suite)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    spans = {}
    for line in (tmp_path / "ran.log").read_text().splitlines():
        name, worker, start, end = line.split()
        spans[name] = (worker, float(start), float(end))
    assert len(spans) == 9, spans

    def overlap(a, b):
        return spans[a][1] < spans[b][2] and spans[b][1] < spans[a][2]

    # each module on one worker
    for module in ("one", "two", "three"):
        assert len({w for n, (w, _, _) in spans.items() if n.startswith(module)}) == 1, spans
    # two at a time: some tests of different modules overlapped
    assert any(overlap(a, b) for a in spans for b in spans
               if a.split("_")[0] != b.split("_")[0]), spans
    # the serial test alone
    assert not any(overlap("two_timed", other) for other in spans if other != "two_timed"), spans


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
