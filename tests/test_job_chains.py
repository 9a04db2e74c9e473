"""RLD405's chains (checks/chains.py), the timeline and the report order, on recorded lines.

fixtures/jobs/driver-env-raised.log and runner-env-raised.err are the driver log and the env
runner's `.err` of a real PPO job (tests/failed_training.py --raise-runner 1, restarts off, Ray
2.60) whose env raised in step(), trimmed, with the paths renamed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_rldoctor
from rldoctor import failure_chains as chains
from rldoctor.checks.workers.crashes import job_failed, worker_crashes
from rldoctor.snapshot import Snapshot

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "jobs"
DRIVER = (FIXTURES / "driver-env-raised.log").read_text().splitlines()
RUNNER = (FIXTURES / "runner-env-raised.err").read_text().splitlines()
HEAD = "cf971fe174020a73009e8e2b94ac680bc5e3d7d85d8d4fbb42a10edb"
NODE1 = "bac617cbb1de1942b70a71d3d7657795d3f6b665fa5b5ca537939a07"
NODE2 = "74ebaea3f648615b80f3a04eaf70666dc798ea6f3112c8057eda7bf1"
RUNNER_ACTOR = "eaa237389813202de978bb8902000000"
NOW = 1796285600.0


def _job(sid, status, end, **extra):
    job = {"submission_id": sid, "job_id": extra.pop("job_id", "02000000"), "type": "SUBMISSION",
           "entrypoint": f"python train.py --name {sid}", "status": status,
           "error_type": "JOB_ENTRYPOINT_COMMAND_ERROR" if status == "FAILED" else None,
           "driver_exit_code": 1 if status == "FAILED" else 0,
           "message": "Job entrypoint command failed with exit code 1" if status == "FAILED" else "",
           "start_time": end - 75, "end_time": end,
           "driver": {"node_id": HEAD, "ip": "127.0.0.10", "pid": 5453},
           "driver_log_tail": [], "worker_logs": []}
    job.update(extra)
    return job


def _nodes(dead=None):
    out = []
    for node_id, ip in ((HEAD, "127.0.0.10"), (NODE1, "127.0.0.11"), (NODE2, "127.0.0.12")):
        alive = node_id != dead
        out.append({"node_id": node_id, "ip": ip, "is_head": node_id == HEAD, "alive": alive,
                    "state": "ALIVE" if alive else "DEAD",
                    "death_reason": None if alive else "UNEXPECTED_TERMINATION",
                    "death_message": None if alive else
                    "health check failed due to missing too many heartbeats",
                    "end_time": None if alive else NOW - 100})
    return out


def _runner(actor_id=RUNNER_ACTOR, node=HEAD, pid=5195, reason="WORKER_DIED", kind="actor_died_error_context",
            message="The actor is dead because its worker process has died. Worker exit type: "
                    "SYSTEM_ERROR Worker exit detail: Worker exits unexpectedly. Worker exits with an exit code 1."):
    return {"actor_id": actor_id, "class_name": "SingleAgentEnvRunner", "state": "DEAD", "node_id": node,
            "pid": pid, "job_id": "02000000", "num_restarts": 0,
            "death_cause": {"kind": kind, "reason": reason, "message": message}}


def _snapshot(jobs, actors=(), dead=(), nodes=None, window=86400.0):
    return {"schema": "rldoctor.snapshot/v1", "created_at": "2026-12-03T08:20:00+00:00",
            "source": {"kind": "snapshot"}, "collectors": {},
            "jobs": {"window_s": window, "now": NOW, "cut": None, "jobs": list(jobs)},
            "actors": {"items": list(actors)}, "workers": {"dead": list(dead)},
            "nodes": nodes if nodes is not None else _nodes()}


SYSTEM_EXIT_1 = {"worker_id": "26e0132126d2", "worker_type": "WORKER", "exit_type": "SYSTEM_ERROR",
                 "exit_detail": "Worker exits unexpectedly. Worker exits with an exit code 1.",
                 "node_id": HEAD, "ip": "127.0.0.10", "pid": 5195, "end_time_ms": (NOW - 110) * 1000}


def _findings(data, window=None):
    params = {"window_s": window}
    return list(job_failed(Snapshot(data), params))


def test_parse_tracebacks_groups_relayed_worker_lines_and_strips_ray_decorations():
    tbs = chains.parse_tracebacks(DRIVER)
    runner = [tb for tb in tbs if (tb["source"] or {}).get("pid") == 5195]
    driver = [tb for tb in tbs if tb["source"] is None]
    assert runner and driver
    assert driver[-1]["type"] == "ray.exceptions.ActorDiedError"
    assert "actor_id: " + RUNNER_ACTOR in driver[-1]["message"]
    assert any(tb["type"] == "RuntimeError" and not tb["message"] for tb in runner)  # _try_env_step's
    exc = chains.user_exception(runner)
    assert exc["type"] == "RuntimeError" and exc["message"].startswith("warehouse sensor 7 returned garbage")
    assert exc["frame"] == {"file": "/home/user/project/failed_training.py", "line": 60, "func": "read_sensor"}
    assert "[repeated" not in json.dumps(tbs) and "\x1b" not in json.dumps(tbs)


def test_env_that_raised_is_a_user_error_with_the_frame_and_the_runner():
    data = _snapshot([_job("warehouse-sensor", "FAILED", NOW - 100, driver_log_tail=DRIVER,
                           worker_logs=[{"actor_id": RUNNER_ACTOR, "pid": 5195, "node_id": HEAD,
                                         "class_name": "SingleAgentEnvRunner", "lines": RUNNER,
                                         "file": "worker-26e0-5195.err"}])],
                     actors=[_runner()], dead=[SYSTEM_EXIT_1])
    [f] = _findings(data)
    assert f.subject == "job:warehouse-sensor" and f.severity.label == "fail"
    assert "RuntimeError: warehouse sensor 7 returned garbage: reading=-1.0e308" in f.message
    assert "failed_training.py:60 in read_sensor" in f.message
    assert "SingleAgentEnvRunner" in f.message and HEAD[:12] in f.message
    ev = f.evidence
    assert ev["root_cause"] == "user_error"
    assert ev["worker"]["actor_id"] == RUNNER_ACTOR and ev["worker"]["pid"] == 5195
    assert ev["worker_log"]["file"] == "worker-26e0-5195.err"
    whats = [link["what"] for link in ev["chain"]]
    assert whats[0].startswith("job warehouse-sensor started") and whats[-1].startswith("job warehouse-sensor FAILED")
    assert any("the user's code raised RuntimeError" in w for w in whats)
    assert any("exited after it: SYSTEM_ERROR" in w for w in whats)
    assert "failed_training.py:60 in read_sensor" in f.fix
    # the driver's own log alone (no worker log) gives the same root cause
    data["jobs"]["jobs"][0]["worker_logs"] = []
    [g] = _findings(data)
    assert g.message == f.message


def test_rld403_leaves_the_runner_to_the_job_chain_and_keeps_other_crashes():
    other = dict(SYSTEM_EXIT_1, pid=7777, worker_id="77",
                 exit_detail="Worker unexpectedly exits with a connection error code 2. End of file.")
    base = _snapshot([_job("warehouse-sensor", "FAILED", NOW - 100, driver_log_tail=DRIVER)],
                     actors=[_runner()], dead=[SYSTEM_EXIT_1, other])
    [crash] = list(worker_crashes(Snapshot(base), {"fail_at_crashes": 3}))
    assert crash.evidence["pids"] == [7777]
    without_jobs = dict(base)
    without_jobs.pop("jobs")  # an older snapshot: no chains, both are crashes as before
    [crash] = list(worker_crashes(Snapshot(without_jobs), {"fail_at_crashes": 3}))
    assert sorted(crash.evidence["pids"]) == [5195, 7777]


def test_node_death_under_a_runner():
    lines = ["Traceback (most recent call last):",
             '  File "/home/user/project/train.py", line 97, in main',
             "    algo.train()",
             f"ray.exceptions.ActorUnavailableError: The actor {RUNNER_ACTOR} is unavailable: "
             "The actor is temporarily unavailable: RpcError: RPC Error message: Socket closed"]
    actor = _runner(node=NODE2, pid=9001, reason="NODE_DIED",
                    message=f"The actor died because its node has died. Node Id: {NODE2}")
    data = _snapshot([_job("node-lost", "FAILED", NOW - 50, driver_log_tail=lines)],
                     actors=[actor], nodes=_nodes(dead=NODE2))
    [f] = _findings(data)
    assert f.evidence["root_cause"] == "node_died"
    assert NODE2[:12] in f.message and "UNEXPECTED_TERMINATION" in f.message
    assert "temporarily" not in f.message
    assert f.evidence["node"]["node_id"] == NODE2
    assert "RLD101" in f.fix and "restart_failed_env_runners" in f.fix
    assert any(link["what"].startswith(f"node {NODE2[:12]}") for link in f.evidence["chain"])


def test_code_missing_on_one_node():
    lines = ["Traceback (most recent call last):",
             '  File "/home/user/project/train.py", line 92, in main',
             "    algo = config.build_algo()",
             "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
             "\tclass_name: SingleAgentEnvRunner",
             f"\tactor_id: {RUNNER_ACTOR}"]
    creation = ("The actor died because of an error raised in its creation task, "
                "ray::SingleAgentEnvRunner.__init__() ... ModuleNotFoundError: No module named 'warehouse_env'")
    runner_err = ["Traceback (most recent call last):",
                  '  File "/opt/venv/lib/python3.11/site-packages/ray/_private/serialization.py", line 460, in _deserialize_object',
                  "    obj = self._deserialize_msgpack_data(data, metadata_fields)",
                  "ModuleNotFoundError: No module named 'warehouse_env'"]
    broken = _runner(node=NODE2, pid=9100, reason=None, kind="creation_task_failure_context", message=creation)
    fine = dict(_runner(actor_id="f" * 32, node=NODE1, pid=9101), state="ALIVE", death_cause=None)
    data = _snapshot([_job("package", "FAILED", NOW - 30, driver_log_tail=lines,
                           worker_logs=[{"actor_id": RUNNER_ACTOR, "pid": 9100, "node_id": NODE2,
                                         "lines": runner_err}])],
                     actors=[broken, fine])
    [f] = _findings(data)
    assert f.evidence["root_cause"] == "code_missing"
    assert "ModuleNotFoundError: No module named 'warehouse_env'" in f.message
    assert NODE2[:12] in f.message and NODE1[:12] not in f.message  # the healthy node is not named
    assert "started on 1 other node(s)" in f.message
    assert f.evidence["code_missing"] == {"module": "warehouse_env", "node_id": NODE2,
                                          "nodes_that_imported": [f"{NODE1[:12]} (127.0.0.11)"]}
    assert "working_dir" in f.fix and "py_modules" in f.fix


def test_memory_kill_links_rld402():
    dead = dict(SYSTEM_EXIT_1, exit_type="NODE_OUT_OF_MEMORY",
                exit_detail="1 worker(s) were killed due to the node running low on memory.")
    data = _snapshot([_job("oom", "FAILED", NOW - 10)], actors=[_runner()], dead=[dead])
    [f] = _findings(data)
    assert f.evidence["root_cause"] == "oom" and "RLD402" in f.fix
    assert "memory monitor" in f.message


def test_succeeded_and_stopped_jobs_and_jobs_outside_the_window_are_not_reported():
    data = _snapshot([_job("fine", "SUCCEEDED", NOW - 10), _job("stopped", "STOPPED", NOW - 10),
                      _job("old", "FAILED", NOW - 3 * 86400)])
    assert _findings(data) == []
    [f] = _findings(data, window=4 * 86400)  # --since 4d
    assert f.subject == "job:old"
    assert "Ray recorded no reason" in f.message or "the job failed" in f.message


def test_timeline_oldest_first_bounded_and_in_the_reports():
    jobs = [_job(f"ok-{i}", "SUCCEEDED", NOW - 5000 + i * 10, job_id=f"{i:08x}") for i in range(60)]
    jobs.append(_job("warehouse-sensor", "FAILED", NOW - 100, driver_log_tail=DRIVER))
    data = _snapshot(jobs, actors=[_runner()], dead=[SYSTEM_EXIT_1], nodes=_nodes(dead=NODE2))
    events = chains.timeline_events(data)
    times = [e["time"] for e in events]
    assert times == sorted(times) and len(events) <= 50 + 10
    kinds = {e["kind"] for e in events}
    assert {"job_failed", "node_dead", "actor_dead", "job_succeeded"} <= kinds
    snap_file = FIXTURES.parent.parent / "tests" / "_tmp_timeline.json"
    try:
        snap_file.write_text(json.dumps(data))
        out = run_rldoctor("check", "--from", str(snap_file), "--format", "json")
        doc = out.json()
        assert [e["epoch"] for e in doc["timeline"]] == sorted(e["epoch"] for e in doc["timeline"])
        assert doc["timeline"][-1]["age"].endswith("ago")
        table = run_rldoctor("check", "--from", str(snap_file)).stdout
        # the on-call's order: findings with their fixes, the timeline, then the checks in one line
        assert table.index("Findings (") < table.index("Timeline (") < table.index("Checks: ")
        assert "min ago" in table or "s ago" in table
        def rows(text):
            lines = text.splitlines()
            at = next(i for i, line in enumerate(lines) if line.startswith("Checks: "))
            return [line.split() for line in lines[at:] if line.startswith("RLD")]

        shown = rows(table)
        assert shown and all(row[2] != "OK" for row in shown)
        assert {"RLD405", "FAIL"} <= set(next(r for r in shown if r[0] == "RLD405"))
        verbose = run_rldoctor("check", "--from", str(snap_file), "--verbose").stdout
        assert any(row[2] == "OK" for row in rows(verbose))
        assert len(rows(verbose)) == len(doc["checks"])
        md = run_rldoctor("check", "--from", str(snap_file), "--format", "markdown").stdout
        assert md.index("### Findings") < md.index("### Timeline") < md.index("### Checks")
        since = run_rldoctor("check", "--from", str(snap_file), "--since", "10m", "--format", "json")
        assert all(e["epoch"] is None or e["epoch"] >= NOW - 600 for e in since.json()["timeline"])
    finally:
        snap_file.unlink(missing_ok=True)


@pytest.mark.parametrize("bad", ["soon", "-2h", "0", "2 weeks", "1w"])
def test_since_bad_value_is_one_usage_line(bad):
    out = run_rldoctor("check", "--from", "nowhere.json", "--since", bad)
    assert out.code == 2, out
    assert out.stderr.count("\n") == 1 and "--since" in out.stderr and "30m" in out.stderr


def test_parse_duration():
    from rldoctor.commands.check import parse_duration

    assert parse_duration("30m") == 1800 and parse_duration("2h") == 7200
    assert parse_duration("1d") == 86400 and parse_duration("90") == 90


def test_select_lines_keeps_earlier_tracebacks():
    from rldoctor.cluster.jobs import select_lines

    lines = ["noise"] * 500 + ["Traceback (most recent call last):", '  File "a.py", line 1, in f',
                               "    x()", "ValueError: bad"] + ["later"] * 600
    kept, cut = select_lines(lines, tail=100)
    assert cut and kept[-1] == "later" and len(kept) == 100 + 5
    assert kept[:5] == ["Traceback (most recent call last):", '  File "a.py", line 1, in f', "    x()",
                        "ValueError: bad", "..."]


def test_a_driver_run_by_hand_that_ray_calls_succeeded_but_whose_runner_died():
    hand = _job("x", "SUCCEEDED", NOW - 20, type="DRIVER", submission_id=None, driver_exit_code=None,
                worker_logs=[{"actor_id": RUNNER_ACTOR, "pid": 5195, "node_id": HEAD, "lines": RUNNER}])
    data = _snapshot([hand], actors=[_runner()], dead=[SYSTEM_EXIT_1])
    [f] = _findings(data)
    assert f.subject == "job:02000000" and f.evidence["root_cause"] == "user_error"
    assert "warehouse sensor 7" in f.message
    assert any("SUCCEEDED when it ends" in n for n in f.evidence["not_recorded"])
    # its runners ended with it (owner died) or were stopped: a training that ended well
    quiet = _runner(reason="OWNER_DIED", message="The actor is dead because its owner has died.")
    assert _findings(_snapshot([hand], actors=[quiet])) == []
    killed = _runner(reason="RAY_KILL", message="killed by `ray.kill`.")
    assert _findings(_snapshot([hand], actors=[killed])) == []


RAY240_DRIVER = next((FIXTURES.parent / "sessions" / "ray240-env-raises").rglob("job-driver-pm-env-raises.log"))


def test_a_ray_240_remote_traceback_gives_the_users_exception_not_the_raytaskerror_header():
    """Ray 2.40's driver (a real log, fixtures/sessions/ray240-env-raises) re-raises the env's error
    as `RayTaskError(RuntimeError): ray::SingleAgentEnvRunner.apply() (pid=3749, ...)`, whose
    remote traceback follows with no "Traceback" line of its own and ends in the user's exception."""
    lines = RAY240_DRIVER.read_text().splitlines()
    tbs = chains.parse_tracebacks(lines)
    header = [tb for tb in tbs if tb["type"] == "ray.exceptions.RayTaskError(RuntimeError)"]
    assert len(header) == 1 and header[0]["source"] is None  # the driver's own
    assert header[0]["message"].startswith("ray::SingleAgentEnvRunner.apply() (pid=3749")
    assert "^" not in header[0]["message"]  # Python 3.11's carets are not words of the message
    assert header[0]["frames"][-1]["func"] == "handle_remote_call_result_errors"
    remote = [tb for tb in tbs if (tb["source"] or {}).get("pid") == 3749]
    assert [tb["type"] for tb in remote] == ["RuntimeError"]
    assert remote[0]["source"] == {"who": "SingleAgentEnvRunner", "pid": 3749, "ip": "127.0.0.12"}
    exc = chains.user_exception(tbs)
    assert exc["type"] == "RuntimeError"
    assert exc["message"] == "warehouse sensor 7 returned garbage: b'\\xff\\x00' at step 51"
    assert exc["frame"] == {"file": "/work/wt/f32b/tests/ppo_job.py", "line": 78, "func": "read_the_sensor"}
    # the job's chain: the user's exception and frame, from the runner the header names
    data = _snapshot([_job("sensor-240", "FAILED", NOW - 100, driver_log_tail=lines)],
                     actors=[_runner(actor_id="de54dac0686aa1b99d11f85502000000", node=NODE2, pid=3749,
                                     reason="OUT_OF_SCOPE",
                                     message="The actor is dead because its job ended")])
    [f] = _findings(data)
    assert f.evidence["root_cause"] == "user_error"
    assert "RuntimeError: warehouse sensor 7 returned garbage" in f.message
    assert "ppo_job.py:78 in read_the_sensor" in f.message and "ppo_job.py:163" not in f.message
    assert "ray::" not in f.message and f"on node {NODE2[:12]}" in f.message
    whats = [link["what"] for link in f.evidence["chain"]]
    assert any("ended with the job: OUT_OF_SCOPE" in w for w in whats)  # it raised, it did not exit
    assert not any("exited after it" in w for w in whats)


def test_a_remote_task_traceback_of_a_plain_task_and_a_cut_one():
    """A plain task's RayTaskError (`ray::fetch()`), and one whose remote part the log window cut:
    then the header is all there is, and it is still told (its inner type)."""
    lines = ["Traceback (most recent call last):",
             '  File "/home/user/project/train.py", line 12, in main',
             "    ray.get(fetch.remote())",
             "ray.exceptions.RayTaskError(KeyError): \x1b[36mray::fetch()\x1b[39m (pid=4242, ip=10.0.0.5)",
             '  File "/home/user/project/data.py", line 31, in fetch',
             "    return table[key]",
             "           ~~~~~^^^^^",
             "KeyError: 'sensor-7'"]
    tbs = chains.parse_tracebacks(lines)
    assert [(tb["type"], (tb["source"] or {}).get("who")) for tb in tbs] == [
        ("ray.exceptions.RayTaskError(KeyError)", None), ("KeyError", "fetch")]
    exc = chains.user_exception(tbs)
    assert (exc["type"], exc["message"], chains.frame_text(exc["frame"])) == (
        "KeyError", "'sensor-7'", "/home/user/project/data.py:31 in fetch")
    cut = chains.user_exception(chains.parse_tracebacks(lines[:4]))
    assert cut["type"] == "KeyError" and cut["frame"]["line"] == 12


def test_the_finding_names_the_jobs_command_from_its_script_on():
    data = _snapshot([_job("warehouse-sensor", "FAILED", NOW - 100, driver_log_tail=DRIVER)],
                     actors=[_runner()], dead=[SYSTEM_EXIT_1])
    [f] = _findings(data)
    assert f.message.startswith("job warehouse-sensor (train.py --name warehouse-sensor) failed at ")
    assert chains.short_entrypoint("/opt/venv/bin/python3.11 /home/u/p/train.py --lr 1") == "train.py --lr 1"
    assert chains.short_entrypoint("bash run.sh") == "bash run.sh"
    assert len(chains.short_entrypoint("python t.py " + "x" * 200)) <= 84
    data["jobs"]["jobs"][0]["entrypoint"] = None
    [g] = _findings(data)
    assert g.message.startswith("job warehouse-sensor failed at ")
    assert g.evidence["not_recorded"] == ["the job's entrypoint: Ray did not record it"]


@pytest.mark.parametrize("kind, case, data", [
    ("runtime_env", "the runtime_env could not be built",
     _snapshot([_job("env", "FAILED", NOW - 10, error_type="RUNTIME_ENV_SETUP_FAILURE",
                     message="Failed to set up runtime environment.\nERROR: No matching "
                             "distribution found for nopkg==9.9")])),
    ("killed", "a worker was killed from outside",
     _snapshot([_job("kill", "FAILED", NOW - 10)], actors=[_runner()],
               dead=[dict(SYSTEM_EXIT_1, exit_detail="Worker unexpectedly exits with a connection "
                          "error code 2. End of file. There are some potential root causes.")])),
    ("unknown", "the root cause is not recorded", _snapshot([_job("plain", "FAILED", NOW - 10)])),
])
def test_each_root_cause_carries_its_case_of_the_fix_table(kind, case, data):
    # RLD405 says its fix once, in its table: a root cause's finding carries that case, filled in
    from rldoctor.checks.workers.crashes import JOB_FIXES

    [f] = _findings(data)
    assert f.evidence["root_cause"] == kind
    assert f.fix == JOB_FIXES[case].format(sid=f.evidence["submission_id"])
