"""RLD401, RLD402, RLD403 on the recorded worker-faults cluster and on edits of it."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES
from rldoctor.checks._rllib import crash_kind, parse_oom, rllib_role
from rldoctor.checks.workers.crashes import actor_restarts, oom_kills, worker_crashes
from rldoctor.model import Severity
from rldoctor.snapshot import Snapshot

FAULTS = json.loads((FIXTURES / "worker-faults.json").read_text())
BY_IP = {n["ip"]: n["node_id"] for n in FAULTS["nodes"]}


def run(check, data, **params):
    return list(check(Snapshot(data), {**check.params, **params}))


def flaky(data):
    return next(a for a in data["actors"]["items"] if a["class_name"] == "EnvSimulator")


def test_rld401_crash_loop_names_actor_node_and_last_death():
    [finding] = run(actor_restarts, FAULTS)
    actor = flaky(FAULTS)
    assert finding.severity is Severity.FAIL and finding.subject == f"actor:{actor['actor_id']}"
    assert finding.evidence["node_id"] == BY_IP["127.0.0.11"]
    assert finding.evidence["num_restarts"] == 3
    assert finding.evidence["last_death"]["exit_type"] == "SYSTEM_ERROR"
    assert "max_restarts" in finding.fix


@pytest.mark.parametrize("restarts,state,severity", [
    (1, "ALIVE", Severity.WARN), (2, "ALIVE", Severity.WARN), (3, "ALIVE", Severity.FAIL),
    (1, "RESTARTING", Severity.FAIL), (1, "DEAD", Severity.FAIL), (0, "RESTARTING", Severity.FAIL),
])
def test_rld401_severity(restarts, state, severity):
    data = copy.deepcopy(FAULTS)
    actor = flaky(data)
    actor["num_restarts"], actor["state"] = restarts, state
    [finding] = run(actor_restarts, data)
    assert finding.severity is severity


@pytest.mark.parametrize("reason,reported", [
    ("RAY_KILL", False), ("WORKER_DIED", True), ("OWNER_DIED", False), ("NODE_DIED", True),
    ("OUT_OF_SCOPE", False), ("REF_DELETED", False)])
def test_rld401_a_crash_looper_someone_stopped_with_ray_kill_is_over(reason, reported):
    """Over: stopped with ray.kill, died with its owner (issue 37: a driver SIGKILLed while its
    actor crash-looped paged forever), or every reference to it went away."""
    data = copy.deepcopy(FAULTS)
    actor = flaky(data)
    actor["state"] = "DEAD"
    actor["death_cause"] = {"kind": "actor_died_error_context", "reason": reason,
                            "message": "The actor is dead", "never_started": False}
    found = run(actor_restarts, data)
    assert [f.subject for f in found] == ([f"actor:{actor['actor_id']}"] if reported else [])
    # the workers' crashes are still there for RLD403
    assert run(worker_crashes, data) == run(worker_crashes, FAULTS)


def test_rld401_env_runner_fix_names_rllib_fault_tolerance_settings():
    data = copy.deepcopy(FAULTS)
    flaky(data)["class_name"] = "SingleAgentEnvRunner"
    [finding] = run(actor_restarts, data)
    assert "RLlib env runner SingleAgentEnvRunner" in finding.message
    for setting in ("restart_failed_env_runners", "max_num_env_runner_restarts",
                    "delay_between_env_runner_restarts_s", "restart_failed_sub_environments"):
        assert setting in finding.fix
    assert "restart storm hides a bug" in finding.fix


def test_rld401_many_restarted_actors_of_one_class_are_summarised():
    data = copy.deepcopy(FAULTS)
    template = flaky(data)
    data["actors"]["items"] = [dict(template, actor_id=f"{i:032x}", num_restarts=1) for i in range(12)]
    findings = run(actor_restarts, data)
    assert len(findings) == 6  # five shown, one summary
    assert findings[-1].subject == "cluster" and "7 more EnvSimulator" in findings[-1].message


def test_rld401_no_restarts_no_finding():
    data = copy.deepcopy(FAULTS)
    flaky(data)["num_restarts"] = 0
    assert run(actor_restarts, data) == []


def test_rld402_memory_kill_with_figures_and_threshold():
    [finding] = run(oom_kills, FAULTS)
    assert finding.severity is Severity.FAIL
    assert finding.subject == f"node:{BY_IP['127.0.0.12']}"
    assert finding.evidence["kill_threshold"] == pytest.approx(0.02)
    assert 0 < finding.evidence["memory_used_gb"] < finding.evidence["memory_limit_gb"]
    assert "unusually low" in finding.message
    assert "object_store_memory" in finding.fix and "RLD301" in finding.fix


def test_rld402_old_kills_are_info():
    data = copy.deepcopy(FAULTS)
    data["created_at"] = "2099-01-01T00:00:00+00:00"
    [finding] = run(oom_kills, data)
    assert finding.severity is Severity.INFO


def _vanished_pids(data, node_id):
    return [w["pid"] for w in data["workers"]["dead"] if w["node_id"] == node_id
            and w["exit_type"] == "SYSTEM_ERROR" and "End of file" in (w.get("exit_detail") or "")]


def test_rld402_a_worker_the_kernel_log_says_it_killed_is_an_oom_kill():
    data = copy.deepcopy(FAULTS)
    node1 = BY_IP["127.0.0.11"]
    pid = _vanished_pids(data, node1)[0]
    data["hosts"][node1]["kernel_oom_log"] = {"readable": True, "kills": [
        {"pid": pid, "name": "ray::Victim", "memcg": "/kubepods/pod1", "at": 1.0}]}
    [kernel] = [f for f in run(oom_kills, data) if f.subject == f"node:{node1}"]
    assert kernel.severity is Severity.WARN and f"Killed process {pid}" in kernel.message
    assert "/kubepods/pod1" in kernel.message and "dmesg" in kernel.fix


def test_rld402_the_hosts_oom_counter_since_boot_alone_blames_no_worker():
    """A kernel OOM kill anywhere on the host, any time since boot, proves nothing about
    the worker that vanished: the kernel log (or the node's own cgroup) must say so."""
    data = copy.deepcopy(FAULTS)
    node1 = BY_IP["127.0.0.11"]
    data["hosts"][node1]["kernel_oom_kills"] = 2
    data["hosts"][node1]["kernel_oom_log"] = {"readable": True, "kills": [
        {"pid": 999_999, "name": "python", "memcg": "/elsewhere", "at": 1.0}]}
    assert [f for f in run(oom_kills, data) if f.subject == f"node:{node1}"] == []
    data["hosts"][node1]["kernel_oom_log"] = {"readable": False, "error": "PermissionError"}
    assert [f for f in run(oom_kills, data) if f.subject == f"node:{node1}"] == []
    data["hosts"][node1]["cgroup_oom_kills"] = 1  # the node's own cgroup saw a kill
    [kernel] = [f for f in run(oom_kills, data) if f.subject == f"node:{node1}"]
    assert "may have been killed" in kernel.message and "PermissionError" in kernel.message


def test_rld403_crashes_grouped_per_node_not_counting_memory_kills():
    [finding] = run(worker_crashes, FAULTS)
    assert finding.subject == f"node:{BY_IP['127.0.0.11']}"
    assert finding.severity is Severity.FAIL  # 4 recent crashes >= 3
    assert finding.evidence["crashes"] == 4
    assert "ray logs worker-" in finding.fix


def test_rld403_few_crashes_warn_and_dead_nodes_are_left_to_rld101():
    data = copy.deepcopy(FAULTS)
    node1 = BY_IP["127.0.0.11"]
    crashed = [w for w in data["workers"]["dead"] if w["exit_type"] == "SYSTEM_ERROR"]
    data["workers"]["dead"] = [w for w in data["workers"]["dead"] if w not in crashed[1:]]
    [finding] = run(worker_crashes, data)
    assert finding.severity is Severity.WARN
    next(n for n in data["nodes"] if n["node_id"] == node1)["alive"] = False
    assert run(worker_crashes, data) == []


def test_parsers():
    text = ("1 worker(s) were killed due to the node running low on memory. Memory on the node "
            "(IP: 10.0.0.5, ID: abc123) was 27.71GB used / 28.80GB limit (0.962273) OOM kill reason: "
            "Memory usage 1B exceeded threshold of 27360000000B (95.0% of 28800000000B limit) "
            "task name=EnvRunner.sample, required resources={}")
    parsed = parse_oom(text)
    assert parsed["used_gb"] == 27.71 and parsed["limit_gb"] == 28.80
    assert parsed["threshold_fraction"] == pytest.approx(0.95)
    assert parsed["task_name"] == "EnvRunner.sample" and parsed["ip"] == "10.0.0.5"
    assert rllib_role("SingleAgentEnvRunner") == "env runner"
    assert rllib_role("PPOTorchLearner") == "learner"
    assert rllib_role("PPO") == "algorithm" and rllib_role("Counter") is None
    assert crash_kind("Worker exits with signal SIGSEGV") == "SIGSEGV"
    assert "SIGKILL" in crash_kind("connection error code 2. End of file")
    # Ray 2.60's words for a worker stopped with SIGTERM (measured: os.kill on an actor's pid).
    assert crash_kind("Worker exits unexpectedly by a signal. SystemExit is raised (sys.exit is "
                      "called). Exit code: 1. The process receives a SIGTERM.") == "SIGTERM"
    assert crash_kind("Worker exits with an exit code 1.") == "exited with an error code"


def test_rld401_says_when_the_actor_list_was_truncated():
    data = copy.deepcopy(FAULTS)
    data["actors"].update(truncated=True, listed=10000, total=12345)
    findings = run(actor_restarts, data)
    [note] = [f for f in findings if f.severity is Severity.INFO]
    assert "10000 of 12345" in note.message


def test_rld401_a_dead_actor_whose_job_ended_is_over_a_restarting_one_is_not():
    """A dead actor of an ended job is no crash loop; one that died of its crashes while its
    job runs, or a detached one that restarts now after its job ended, still is."""
    data = copy.deepcopy(FAULTS)
    actor = flaky(data)
    actor["state"] = "DEAD"
    actor["death_cause"] = {"kind": "actor_died_error_context", "reason": "WORKER_DIED",
                            "message": "The actor is dead because its worker process has died.",
                            "never_started": False}
    subject = f"actor:{actor['actor_id']}"
    [finding] = run(actor_restarts, data)  # its job runs (or Ray did not say): died for good
    assert finding.subject == subject and "died for good" in finding.message
    data["actors"]["ended_jobs"] = {"ffffffff": 1}  # another job ended
    assert [f.subject for f in run(actor_restarts, data)] == [subject]
    data["actors"]["ended_jobs"][actor["job_id"]] = 1764748800000
    assert run(actor_restarts, data) == []
    assert run(worker_crashes, data) == run(worker_crashes, FAULTS)  # the crashes stay
    actor["state"], actor["is_detached"] = "RESTARTING", True
    [finding] = run(actor_restarts, data)
    assert finding.severity is Severity.FAIL and "restarting now" in finding.message


def _newest_crash_ms(data):
    return max(w["end_time_ms"] for w in data["workers"]["dead"] if w["exit_type"] == "SYSTEM_ERROR")


def _at(ms):
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="seconds")


def test_rld403_crashes_older_than_the_window_are_info_not_a_ticket():
    """`watch` gives RLD403 a window of its own (recent_hours): crashes older than it stay
    in the report at info, so the ticket closes; newer ones keep warn or fail."""
    data = copy.deepcopy(FAULTS)
    newest = _newest_crash_ms(data)
    data["created_at"] = _at(newest + 11 * 60_000)  # 11 minutes after the newest crash
    [default] = run(worker_crashes, data)
    assert default.severity is Severity.FAIL  # check's 24 h: still recent
    [late] = run(worker_crashes, data, recent_hours=600 / 3600)
    assert late.severity is Severity.INFO and late.evidence["crashes"] == 4
    assert late.evidence["recent_crashes"] == 0 and "died of a system error" in late.message
    data["created_at"] = _at(newest + 5 * 60_000)
    [soon] = run(worker_crashes, data, recent_hours=600 / 3600)
    assert soon.severity in (Severity.WARN, Severity.FAIL) and soon.evidence["recent_crashes"] >= 1


def test_rld402_memory_kills_and_vanished_workers_older_than_the_window_are_info():
    data = copy.deepcopy(FAULTS)
    node1 = BY_IP["127.0.0.11"]
    data["hosts"][node1]["cgroup_oom_kills"] = 1
    kills = [w["end_time_ms"] for w in data["workers"]["dead"]
             if w["exit_type"] in ("NODE_OUT_OF_MEMORY", "SYSTEM_ERROR")]
    data["created_at"] = _at(max(kills) + 11 * 60_000)
    assert {f.severity for f in run(oom_kills, data)} == {Severity.FAIL, Severity.WARN}
    late = run(oom_kills, data, recent_hours=600 / 3600)
    assert len(late) == 2 and {f.severity for f in late} == {Severity.INFO}


def test_watch_gives_the_checks_about_past_events_a_window_tied_to_its_interval():
    from rldoctor.watch.rounds import PAST_EVENT_CHECKS, past_window_s, with_past_window

    assert set(PAST_EVENT_CHECKS) == {"RLD401", "RLD402", "RLD403"}
    assert past_window_s(15) == 600 and past_window_s(60) == 600 and past_window_s(300) == 3000
    params = with_past_window({"RLD403": {"fail_at_crashes": 5}}, 120)
    assert params["RLD403"] == {"fail_at_crashes": 5, "recent_hours": 1200 / 3600}
    assert params["RLD402"] == {"recent_hours": 1200 / 3600}
    # --set wins, and the caller's dict is left alone
    given = {"RLD402": {"recent_hours": 2}}
    assert with_past_window(given, 15)["RLD402"]["recent_hours"] == 2
    assert given == {"RLD402": {"recent_hours": 2}}


def test_rld401_an_actor_up_again_whose_last_death_is_older_than_the_window_is_info():
    """Restarted three times, up again since: a crash loop while its last death is recent,
    history (info, no page) once that death is older than recent_hours."""
    data = copy.deepcopy(FAULTS)
    actor = flaky(data)  # Ray's task events name the pids of its earlier workers
    actor["pids"] = [[w["node_id"], w["pid"]] for w in data["workers"]["dead"]
                     if w["node_id"] == actor["node_id"] and w["exit_type"] == "SYSTEM_ERROR"]
    assert actor["pids"]
    [loop] = run(actor_restarts, data)
    assert loop.severity is Severity.FAIL and loop.evidence["last_death"]["matched_by"] == "pid or name"
    last = loop.evidence["hours_since_last_death"]
    assert last is not None and last < 24
    [stable] = run(actor_restarts, data, recent_hours=last / 2)
    assert stable.severity is Severity.INFO and "no restart now" in stable.message
    assert stable.subject == loop.subject
    flaky(data)["state"] = "RESTARTING"  # restarting now: whatever the age of the last death
    [now] = run(actor_restarts, data, recent_hours=last / 2)
    assert now.severity is Severity.FAIL



def test_rld401_from_logs_counts_the_last_death_back_from_the_logs_end_not_from_now():
    """A snapshot read from logs is as of their last line: "ago" would be wrong days later."""
    data = copy.deepcopy(FAULTS)
    actor = flaky(data)
    actor["pids"] = [[w["node_id"], w["pid"]] for w in data["workers"]["dead"]
                     if w["node_id"] == actor["node_id"] and w["exit_type"] == "SYSTEM_ERROR"]
    [loop] = run(actor_restarts, data)
    last = loop.evidence["hours_since_last_death"]
    [live] = run(actor_restarts, data, recent_hours=last / 2)
    assert f"the last {last:.1f} h ago; " in live.message, live.message
    data["source"] = {**data["source"], "kind": "logs"}
    [logs] = run(actor_restarts, data, recent_hours=last / 2)
    assert f"the last {last:.1f} h before the logs end; " in logs.message, logs.message
    assert " ago" not in logs.message
