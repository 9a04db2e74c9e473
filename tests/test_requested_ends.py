"""RLD403 about crashes only (issue 48): ends someone asked for go to the timeline.

On recorded data: fixtures/sessions/ended-well (a healthy 2-node cluster after two `rldoctor
check` runs, a PPO job that SUCCEEDED, one STOPPED by `ray job stop`, and a third check; its
gcs_server.out reports the three checks' driver exits as SYSTEM_ERROR "End of file"),
fixtures/sessions/env-raises (a job whose env raised), and edits of them in the shapes Ray 2.60
records (`ray list workers --detail` on that cluster: worker_type DRIVER, exit_type
SYSTEM_ERROR, "The process receives a SIGTERM").
"""

from __future__ import annotations

import copy

import pytest

from conftest import FIXTURES
from rldoctor import failure_chains as chains, worker_exits as exits
from rldoctor.checks.workers.crashes import oom_kills, worker_crashes
from rldoctor.inputs.logdir import read_logs
from rldoctor.snapshot import Snapshot, validate

SESSIONS = FIXTURES / "sessions"
ENDED_WELL = read_logs(str(SESSIONS / "ended-well"))
ENV_RAISES = read_logs(str(SESSIONS / "env-raises"))
HEAD = "7371f0240f513006125620639c689cbed36e17bab204a5dcf9e05b22"
SIGTERM = ("Worker exits unexpectedly by a signal. SystemExit is raised (sys.exit is called). "
           "Exit code: 1. The process receives a SIGTERM.")
EOF_DETAIL = ("Worker unexpectedly exits with a connection error code 2. End of file. Some common "
              "causes include: (1) the process was killed by the OOM killer due to high memory usage")


def crashes(data) -> list:
    return list(worker_crashes(Snapshot(data), worker_crashes.params))


def job(data, sid: str) -> dict:
    return next(j for j in data["jobs"]["jobs"] if j["submission_id"] == sid)


def worker(pid: int, node: str, end_s: float, detail: str = SIGTERM, job_id=None) -> dict:
    return {"worker_id": f"{pid:056x}", "worker_type": "WORKER", "exit_type": "SYSTEM_ERROR",
            "exit_detail": detail, "node_id": node, "ip": "127.0.0.10", "pid": pid,
            "end_time_ms": int(end_s * 1000), "job_id": job_id, "start_time_ms": None}


def test_the_drivers_a_session_directory_reports_are_drivers_not_crashed_workers():
    dead = {w["worker_id"]: w for w in ENDED_WELL["workers"]["dead"]}
    assert sorted(dead) == [f"0{n}000000" + "f" * 48 for n in (1, 2, 6)]
    assert {w["worker_type"] for w in dead.values()} == {"DRIVER"}
    # the driver's pid and job from the GCS's own job registration (what the live list says)
    assert [(w["job_id"], w["pid"]) for w in sorted(dead.values(), key=lambda w: w["job_id"])] == \
        [("01000000", 14805), ("02000000", 17354), ("06000000", 3463)]
    assert crashes(ENDED_WELL) == []


def test_a_driver_is_no_crash_even_where_it_is_typed_as_a_worker():
    """A snapshot or bundle written before this reader knew drivers: WORKER, no pid."""
    data = copy.deepcopy(ENDED_WELL)
    for w in data["workers"]["dead"]:
        w.update(worker_type="WORKER", pid=None, job_id=None)
    assert crashes(data) == []
    assert list(oom_kills(Snapshot(data), oom_kills.params)) == []
    # the same exit of a worker that is no driver is a crash: the check still sees crashes
    data["workers"]["dead"][0]["worker_id"] = "ab" * 28
    [finding] = crashes(data)
    assert finding.evidence["worker_ids"] == ["ab" * 28]


def test_the_driver_exits_are_in_the_timeline_with_why_they_are_no_crash():
    events = [e for e in chains.timeline_events(ENDED_WELL) if e["kind"] == "worker_ended"]
    assert len(events) == 3, events
    assert all("ended, no crash: a driver's end" in e["message"] for e in events)
    assert "the driver of job 01000000 (pid 14805)" in events[0]["message"]
    assert not [e for e in chains.timeline_events(ENDED_WELL) if e["kind"] == "worker_dead"]


@pytest.mark.parametrize("sid", ["stopme", "ok"])
def test_the_workers_ray_ends_with_a_stopped_or_finished_job_are_no_crash(sid):
    data = copy.deepcopy(ENDED_WELL)
    ended = job(data, sid)
    data["workers"]["dead"].append(worker(4242, HEAD, ended["end_time"] - 2, job_id=ended["job_id"]))
    data["workers"]["dead"].append(worker(4243, HEAD, ended["end_time"] + 1, EOF_DETAIL,
                                          job_id=ended["job_id"]))  # SIGKILL after the grace
    assert crashes(data) == []
    kinds = {e["message"].split(" on node")[0]: e["kind"] for e in chains.timeline_events(data)}
    assert kinds["worker pid 4242"] == "worker_ended"


def test_a_crash_of_a_job_that_later_ended_well_or_of_no_known_job_is_still_a_crash():
    data = copy.deepcopy(ENDED_WELL)
    ended = job(data, "stopme")
    data["workers"]["dead"].append(worker(4244, HEAD, ended["end_time"] - 600, EOF_DETAIL,
                                          job_id=ended["job_id"]))  # long before the stop
    data["workers"]["dead"].append(worker(4245, HEAD, ended["end_time"]))  # a SIGTERM, no job
    [finding] = crashes(data)
    assert sorted(finding.evidence["pids"]) == [4244, 4245]


def test_a_crash_as_a_hand_run_driver_exits_is_still_a_crash():
    """A script whose actor crashed (its worker's end: connection EOF) and that then exited at
    once: Ray calls a driver run by hand SUCCEEDED however it ended, so its status says nothing
    (tests/test_bundle_e2e.py's crash)."""
    data = copy.deepcopy(ENDED_WELL)
    ended = job(data, "ok")
    ended["type"], ended["submission_id"] = "DRIVER", None
    data["workers"]["dead"].append(worker(4246, HEAD, ended["end_time"] - 0.2, EOF_DETAIL,
                                          job_id=ended["job_id"]))
    [finding] = crashes(data)
    assert finding.evidence["pids"] == [4246]


def test_a_user_stopping_a_detached_actor_just_before_the_job_ends_is_still_reported():
    """tests/test_e2e_own_workers.py's case: a user's SIGTERM to a detached actor's worker, the
    driver gone a moment later; a detached actor outlives its job, so the job's end is no cause."""
    data = copy.deepcopy(ENDED_WELL)
    ended = job(data, "ok")
    data["workers"]["dead"].append(worker(4248, HEAD, ended["end_time"] - 0.5, job_id=ended["job_id"]))
    data["actors"]["items"].append({"actor_id": "b" * 32, "class_name": "Stopped", "state": "DEAD",
                                    "node_id": HEAD, "pid": 4248, "job_id": ended["job_id"],
                                    "is_detached": True, "num_restarts": 0,
                                    "death_cause": {"reason": "WORKER_DIED"}})
    [finding] = crashes(data)
    assert finding.evidence["pids"] == [4248] and finding.evidence["kinds"] == ["SIGTERM"]


def test_a_worker_that_died_before_its_jobs_driver_exited_died_while_the_job_ran():
    data = copy.deepcopy(ENDED_WELL)
    gone = ENDED_WELL["jobs"]["now"] - 300  # a user's script (job 0a000000) left at this time
    data["workers"]["dead"].append({**worker(4300, HEAD, gone, EOF_DETAIL),
                                    "worker_id": "0a000000" + "f" * 48, "worker_type": "DRIVER"})
    data["workers"]["dead"].append(worker(4249, HEAD, gone - 2, job_id="0a000000"))
    data["workers"]["dead"].append(worker(4250, HEAD, gone + 1, job_id="0a000000"))
    data["jobs"]["jobs"].append({"job_id": "0a000000", "submission_id": None, "status": "SUCCEEDED",
                                 "end_time": gone + 1, "type": "DRIVER"})
    [finding] = crashes(data)
    assert finding.evidence["pids"] == [4249]


@pytest.mark.parametrize("reason,asked", [("RAY_KILL", True), ("OUT_OF_SCOPE", True),
                                          ("REF_DELETED", True), ("OWNER_DIED", True),
                                          ("WORKER_DIED", False)])
def test_a_worker_ray_stopped_because_its_actor_was_ended_is_no_crash(reason, asked):
    data = copy.deepcopy(ENDED_WELL)
    data["workers"]["dead"].append(worker(4246, HEAD, ENDED_WELL["jobs"]["now"] - 100))
    data["actors"]["items"].append({"actor_id": "a" * 32, "class_name": "SingleAgentEnvRunner",
                                    "state": "DEAD", "node_id": HEAD, "pid": 4246, "job_id": "09000000",
                                    "num_restarts": 0, "death_cause": {"reason": reason}})
    assert (crashes(data) == []) is asked


def test_rldoctors_own_probe_workers_are_no_crash_from_logs_too():
    data = copy.deepcopy(ENDED_WELL)
    probe = next(a for a in data["actors"]["items"] if a["class_name"] == "NodeProbe")
    data["workers"]["dead"].append(worker(probe["pid"], probe["node_id"], 1, EOF_DETAIL))
    other = dict(worker(4247, probe["node_id"], 1, EOF_DETAIL), job_id=probe["job_id"])
    data["workers"]["dead"].append(other)  # any worker of one of rldoctor's own runs
    assert exits.Ends(data).asked_for(other) == "one of rldoctor's own workers"
    assert crashes(data) == []


def test_the_workers_of_a_failed_job_that_died_with_it_are_its_chain_not_rld403():
    data = copy.deepcopy(ENV_RAISES)
    [root] = [w for w in data["workers"]["dead"]]
    after = dict(worker(5001, root["node_id"], root["end_time_ms"] / 1000 + 3, EOF_DETAIL),
                 job_id=root["job_id"])
    before = dict(worker(5002, root["node_id"], root["end_time_ms"] / 1000 - 120, EOF_DETAIL),
                  job_id=root["job_id"])
    data["workers"]["dead"] += [after, before]
    snap = validate(data, "env-raises")
    claimed = chains.claimed_workers(snap.data)
    assert (root["node_id"], root["pid"]) in claimed and (after["node_id"], 5001) in claimed
    assert (before["node_id"], 5002) not in claimed
    [finding] = crashes(snap.data)
    assert finding.evidence["pids"] == [5002]  # a crash before the failure is its own


def test_the_failed_jobs_driver_exit_is_not_an_rld403_beside_its_rld405():
    data = copy.deepcopy(ENV_RAISES)
    failed = job(data, "pm-env-raises")
    data["workers"]["dead"].append({**worker(0, data["nodes"][0]["node_id"], failed["end_time"], EOF_DETAIL),
                                    "worker_id": failed["job_id"] + "f" * 48, "pid": 14497})
    assert crashes(data) == []
