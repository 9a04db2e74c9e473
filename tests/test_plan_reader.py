"""`rldoctor preflight` reads the training in a child process (rldoctor.inputs.plan_reader):
what the user's code prints stays out of the report, a script that hangs is killed at the
deadline, and a child that dies is one line, never a traceback."""

from __future__ import annotations

import time

import pytest

from rldoctor.errors import RldoctorError, UsageError
from rldoctor.inputs.plan_reader import PlanLoader

from conftest import ROOT

PREFLIGHT = ROOT / "tests" / "targets" / "preflight"


def test_a_script_that_prints_gives_its_plan_and_prints_nothing_here(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("PF_STORAGE", str(tmp_path / "runs"))
    script = tmp_path / "train_loud.py"
    script.write_text((PREFLIGHT / "train_tuner.py").read_text().replace(
        "\nimport", "\nprint('LOUD: the user printed this')\nimport", 1))
    plan = PlanLoader(str(script)).get()
    assert plan["entry"] == "tune.Tuner" and plan["target"] == str(script)
    assert plan["storage"]["path"] == str(tmp_path / "runs")
    out, err = capfd.readouterr()
    assert "LOUD" not in out and "LOUD" not in err


def test_a_script_that_hangs_is_killed_at_the_deadline(tmp_path):
    script = tmp_path / "hangs.py"
    script.write_text("import time\ntime.sleep(600)\n")
    started = time.monotonic()
    loader = PlanLoader(str(script), timeout_s=2)
    with pytest.raises(UsageError, match="reading the training took over 2 s"):
        loader.get()
    assert time.monotonic() - started < 10
    assert loader._child.poll() is not None  # killed, not left behind
    with pytest.raises(UsageError):  # asked again (the report, after the extra): the same line
        loader.get()


def test_a_script_that_raises_is_its_one_line(tmp_path):
    script = tmp_path / "raises.py"
    script.write_text("raise RuntimeError('no such bucket\\nsecond line')\n")
    with pytest.raises(UsageError, match="the script raised before it built its algorithm: "
                                         "RuntimeError: no such bucket$"):
        PlanLoader(str(script)).get()


def test_a_child_that_dies_says_how_and_its_last_words(tmp_path):
    script = tmp_path / "dies.py"
    script.write_text("import os, sys\nprint('out of memory, say', file=sys.stderr, flush=True)\n"
                      "os._exit(9)\n")
    with pytest.raises(RldoctorError, match=r"ended \(exit 9\) without a plan: out of memory, say"):
        PlanLoader(str(script)).get()


def test_closed_before_the_plan_was_read_the_child_goes_too(tmp_path):
    script = tmp_path / "hangs.py"
    script.write_text("import time\ntime.sleep(600)\n")
    loader = PlanLoader(str(script))
    loader.close()
    assert loader._child.poll() is not None
