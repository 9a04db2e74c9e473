"""RLD605, RLD606, RLD608 on recorded live trainings (fixtures/training-*.json) and edits of them."""

from __future__ import annotations

import copy
import json

from conftest import FIXTURES
from rldoctor.checks.training.live import env_runner_hung, env_runners_lost, throughput_drop
from rldoctor.snapshot import Snapshot
from rldoctor.report.render.training import block_lines
from rldoctor.report.training import summarize

HUNG = json.loads((FIXTURES / "training-hung.json").read_text())
LOST = json.loads((FIXTURES / "training-lost.json").read_text())
HEALTHY = json.loads((FIXTURES / "training-healthy.json").read_text())


def run(check, data, **params):
    return list(check(Snapshot(data), {**check.params, **params}))


def _runners(data):
    return data["training"]["trainings"][0]["runners"]


def test_rld605_names_the_stuck_runner_its_node_pid_and_step_frame():
    [finding] = run(env_runner_hung, HUNG)
    stuck = [r for r in _runners(HUNG) if (r.get("call") or {}).get("age_s", 0) > 20]
    assert len(stuck) == 1
    assert finding.subject == f"actor:{stuck[0]['actor_id']}"
    assert finding.evidence["pid"] == stuck[0]["pid"] and finding.evidence["node_id"] == stuck[0]["node_id"]
    assert "UserCartPole.step (ppo_job.py:" in finding.message
    assert "wait_for_the_simulator" in finding.message
    assert "sample_timeout_s" in finding.fix


def test_rld605_floor_and_peer_factor_are_the_bar():
    age = max((r.get("call") or {}).get("age_s", 0) for r in _runners(HUNG))
    assert run(env_runner_hung, HUNG, floor_s=age + 1) == []  # not long enough yet
    peers = HUNG["training"]["trainings"][0]["peer_calls"]["runners"]
    assert run(env_runner_hung, HUNG, peer_factor=(age + 1) / peers["p95_s"]) == []


def test_rld605_without_peers_needs_three_floors_and_says_so():
    data = copy.deepcopy(HUNG)
    training = data["training"]["trainings"][0]
    training["runners"] = [r for r in training["runners"] if r.get("call")]
    training.pop("peer_calls", None)
    age = training["runners"][0]["call"]["age_s"]
    assert run(env_runner_hung, data, floor_s=age / 3 + 1) == []
    [finding] = run(env_runner_hung, data, floor_s=age / 3 - 1)
    assert "no peer to compare with" in finding.message


def test_rld605_a_stack_that_could_not_be_taken_is_said_not_hidden():
    data = copy.deepcopy(HUNG)
    for stack in data["training"]["stacks"].values():
        stack.update(status="failed", user_frames=[], error="permission denied: py-spy may not "
                     "attach to pid 1", text=None)
    [finding] = run(env_runner_hung, data)
    assert "its stack could not be taken: permission denied" in finding.message


def test_rld606_names_the_lost_runner_with_its_node_and_death_cause():
    [finding] = run(env_runners_lost, LOST)
    [dead] = [r for r in _runners(LOST) if r["state"] == "DEAD"]
    assert finding.severity.label == "fail" and "1 of 2" in finding.message
    assert finding.evidence["lost"][0]["actor_id"] == dead["actor_id"]
    assert finding.evidence["lost"][0]["node_id"] == dead["node_id"]
    assert "WORKER_DIED" in finding.message


def test_rld606_runners_stopped_on_purpose_are_not_lost():
    data = copy.deepcopy(LOST)
    for runner in _runners(data):
        if runner["state"] == "DEAD":
            runner["death_cause"]["reason"] = "RAY_KILL"
    assert run(env_runners_lost, data) == []


def test_rld606_one_of_four_lost_is_a_warn():
    data = copy.deepcopy(LOST)
    training = data["training"]["trainings"][0]
    alive = next(r for r in training["runners"] if r["state"] == "ALIVE")
    for i in range(2):
        extra = copy.deepcopy(alive)
        extra["actor_id"] = f"{i}" * 32
        training["runners"].append(extra)
    training["runners_configured"] = 4
    [finding] = run(env_runners_lost, data)
    assert finding.severity.label == "warn" and "3 of 4" in finding.message


def test_rld608_a_runner_that_sampled_nothing_beside_peers_that_did():
    [finding] = run(throughput_drop, HUNG)
    assert "0% of its peers' median" in finding.message
    assert run(throughput_drop, HEALTHY) == []
    assert run(throughput_drop, HUNG, min_age_s=10_000) == []


def test_healthy_training_gives_nothing_and_shows_in_the_block():
    for check in (env_runner_hung, env_runners_lost, throughput_drop):
        assert run(check, HEALTHY) == []
    [training] = summarize(HEALTHY["training"])
    assert training["runners_alive"] == training["runners_configured"] == 2
    lines = block_lines([training])
    assert len(lines) == 1 and "2/2 env runners alive" in lines[0]


def test_rld608_says_why_runners_were_not_compared_when_no_step_counter_exists():
    """Ray 2.40's RLlib exports no per-runner env-step counter: RLD608 says so in a note."""
    from rldoctor.model import Note

    data = copy.deepcopy(HEALTHY)
    data.setdefault("cluster", {})["ray_version"] = "2.40.0"
    for runner in _runners(data):
        runner.pop("steps_sampled", None)
        runner.pop("steps_per_s", None)
        runner["worker_age_s"] = 40.0
    [said] = run(throughput_drop, data)
    assert isinstance(said, Note) and said.subject == data["training"]["trainings"][0]["subject"]
    assert "rllib_env_runner_num_env_steps_sampled_counter" in said.message
    assert "Ray 2.40.0" in said.message
    assert run(throughput_drop, data, min_age_s=10_000) == []  # too young to expect a count


def test_a_hung_runner_of_ray_2_40_recorded_through_the_dashboard():
    """fixtures/training-hung-ray240.json: the same diagnosis on an older release, and what
    that release cannot show said in RLD608's note."""
    from rldoctor.model import Note

    old = json.loads((FIXTURES / "training-hung-ray240.json").read_text())
    [finding] = run(env_runner_hung, old)
    assert "UserCartPole.step (ppo_job.py:" in finding.message
    assert "PPO in its driver" in finding.message
    [training] = old["training"]["trainings"]
    assert (training["algorithm"], training["env"]) == ("PPO", "user_cartpole")
    assert all(r.get("steps_sampled") is None for r in training["runners"])
    [said] = run(throughput_drop, old)
    assert isinstance(said, Note) and "Ray 2.40.0" in said.message
