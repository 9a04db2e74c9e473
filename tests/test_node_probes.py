"""The node-side reads behind RLD305, RLD107, RLD106 and RLD404, on this machine's own files.

Bad input never breaks them: an unreadable or vanished directory, a /proc entry of a
process that ended, a log that shrinks (rotates) while read give evidence that says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from rldoctor.node import fact_disks
from rldoctor.node import fact_open_files
from rldoctor.node import fact_ray_logs

AGENT_LOG = """\
2026-12-02 06:37:30,001	INFO runtime_env_agent.py:400 -- Creating runtime env
2026-12-02 06:37:44,132	ERROR runtime_env_agent.py:569 -- Failed to create runtime env {"_ray_commit": "b7f4", "env_vars": {"SECRET_TOKEN": "hunter2"}, "pip": {"packages": ["no-such-pkg"], "pip_check": false}}.
Traceback (most recent call last):
    raise SubprocessCalledProcessError(
ray._private.runtime_env.utils.SubprocessCalledProcessError: Run cmd[3] failed with the following details.
    ERROR: Could not find a version that satisfies the requirement no-such-pkg (from versions: none)
    ERROR: No matching distribution found for no-such-pkg
2026-12-02 06:37:44,134	ERROR runtime_env_agent.py:587 -- runtime_env creation failed 1 times, giving up.
"""


def test_an_agent_failure_keeps_what_was_asked_and_pips_last_error_never_env_vars():
    [failure] = fact_ray_logs.runtime_env_failures(AGENT_LOG)
    assert failure["what"] == {"keys": ["env_vars", "pip"], "pip": ["no-such-pkg"]}
    assert failure["reason"] == "ERROR: No matching distribution found for no-such-pkg"
    assert failure["gave_up"] is True and failure["at"] == "2026-12-02 06:37:44"
    assert "hunter2" not in repr(failure)


def test_a_runtime_env_summary_names_packages_and_keys_only():
    summary = fact_ray_logs.runtime_env_summary({"pip": ["torch==2.1"], "conda": "rl-env",
                                          "working_dir": "gcs://_ray_pkg_abc.zip",
                                          "env_vars": {"AWS_SECRET_ACCESS_KEY": "xyz"}})
    assert summary == {"keys": ["conda", "env_vars", "pip", "working_dir"], "pip": ["torch==2.1"],
                       "conda": "rl-env", "working_dir": "gcs://_ray_pkg_abc.zip"}
    assert fact_ray_logs.runtime_env_summary("not a dict") == {}


def test_log_signals_count_rays_lines_and_keep_the_last():
    text = "\n".join(
        [f"[2026-12-02 06:40:0{i},745 E 20492 20492] (raylet) worker_pool.cc:660: Some workers of "
         f"the worker process(2125{i}) have not registered within the timeout. The process is "
         "still alive, probably it's hanging during start." for i in range(3)]
        + ["gcs_server.cc:1 Failed accept4: Too many open files", "nothing to see"])
    found = fact_ray_logs.log_signals(text)
    assert found["workers_not_registered"]["count"] == 3
    assert "process(21252)" in found["workers_not_registered"]["lines"][-1]
    assert found["too_many_open_files"]["count"] == 1
    assert "no_available_ports" not in found


def test_a_log_that_vanishes_or_shrinks_while_read_is_evidence_not_an_error(tmp_path):
    log = tmp_path / "raylet.out"
    log.write_text("x" * 1000 + "\nlast line\n")
    text, error = fact_ray_logs.tail_of(str(log), max_bytes=64)
    assert error is None and text.endswith("last line\n") and "x" * 64 not in text
    log.write_text("rotated\n")  # smaller than before: read what is there
    assert fact_ray_logs.tail_of(str(log)) == ("rotated\n", None)
    log.unlink()
    text, error = fact_ray_logs.tail_of(str(log))
    assert text == "" and "raylet.out" in error and "No such file" in error


def test_tree_sizes_stop_at_their_deadline_and_say_so(tmp_path):
    for i in range(50):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "f").write_bytes(b"x" * 5000)
    size, files, complete = fact_disks._tree_size(str(tmp_path), time.monotonic() + 10)
    assert complete and files == 50 and size >= 50 * 4096
    assert fact_disks._tree_size(str(tmp_path), time.monotonic() - 1)[2] is False


def test_largest_entries_of_an_unreadable_dir_is_an_error_line(tmp_path):
    entries, errors = fact_disks._largest_entries(str(tmp_path / "gone"), time.monotonic() + 1)
    assert entries == [] and "No such file" in errors[0]


def test_the_nofile_limit_of_a_process_that_ended_is_none():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert fact_open_files.nofile_limit_of(child.pid) == (None, None)
    soft, hard = fact_open_files.nofile_limit_of(os.getpid())
    assert soft and hard and soft <= hard


def test_probes_outside_a_raylet_say_they_are_unavailable():
    assert fact_disks.disk_usage_here()["status"] == "unavailable"
    assert fact_open_files.open_files_here()["status"] == "unavailable"
    assert fact_ray_logs.ray_logs_here()["status"] == "unavailable"
