"""The join's time keeper (rldoctor.joinwatch) without a cluster: a child that never settles is
ended at the deadline with one line and exit 3, its process group and its files gone; a child
that settles keeps its own exit code and time; Ctrl-C reaches the child through the keeper.
(tests/test_e2e_join_watchdog.py: the same on a real cluster whose first driver Ray holds.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from conftest import interruptible
from rldoctor import joinwatch

PROGRAM = """
import os, sys, time
sys.argv[0] = "/usr/bin/rldoctor"  # the console script: the keeper arms only there
from rldoctor import joinwatch
joinwatch.guard({timeout}, "10.0.0.1:6379")
print("child", os.getpid(), os.getpgid(0), flush=True)
{body}
"""


def run(body: str, timeout: float = 1.0, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM.format(timeout=timeout, body=body)],
                          capture_output=True, text=True, timeout=30, **kw)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_child_that_never_settles_is_ended_at_the_deadline_with_one_line(tmp_path):
    kept = tmp_path / "rldoctor-ray-x.log"
    kept.write_text("Ray's output")
    body = (f"joinwatch.tell('file', {str(kept)!r})\njoinwatch.tell('gcs', '10.0.0.1:6379')\n"
            "import subprocess; subprocess.Popen(['sleep', '60'])\n"  # something it started
            "signal_free = __import__('signal').signal(15, __import__('signal').SIG_IGN)\n"
            "time.sleep(60)")
    started = time.monotonic()
    done = run(body, timeout=1.0)
    took = time.monotonic() - started
    assert done.returncode == 3, done
    assert took < 5, took  # 1 s, then SIGTERM (ignored here), SIGKILL after 1 s more
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rldoctor: Ray did not let rldoctor join the "
                                                   "cluster at 10.0.0.1:6379 as a driver within 1s"), done.stderr
    # no raylet of that cluster runs here: the node is described, not named
    assert "on the node of this machine that Ray joins drivers to (the head, if it runs here)" in lines[0]
    child, group = map(int, done.stdout.split()[1:3])
    assert child == group  # a process group of its own, ended whole
    time.sleep(0.2)
    assert not _alive(child)
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _in_group(int(p), group)]
    assert not kept.exists()


def _in_group(pid: int, group: int) -> bool:
    try:
        return os.getpgid(pid) == group and _alive(pid)
    except OSError:
        return False


def test_a_child_that_settles_keeps_its_exit_code_and_its_time():
    done = run("joinwatch.settled()\ntime.sleep(1.5)\nprint('report', flush=True)\nos._exit(1)",
               timeout=0.5)
    assert done.returncode == 1, done
    assert done.stdout.splitlines()[-1] == "report" and done.stderr == ""
    failed = run("sys.stderr.write('rldoctor: cannot reach\\n'); os._exit(3)", timeout=5)
    assert failed.returncode == 3 and failed.stderr == "rldoctor: cannot reach\n", failed


def test_ctrl_c_to_the_keeper_reaches_the_child_which_cleans_up():
    body = ("import signal\n"
            "def bye(*_):\n    print('cleaned up', flush=True); os._exit(130)\n"
            "signal.signal(signal.SIGINT, bye)\nprint('ready', flush=True)\njoinwatch.settled()\n"
            "time.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM.format(timeout=5, body=body)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=interruptible)  # a suite run in the background ignores it
    assert proc.stdout.readline().startswith("child ")
    assert proc.stdout.readline() == "ready\n"  # its own Ctrl-C handler is in place
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130 and "cleaned up" in out, (out, err)


def test_the_keeper_arms_only_in_rldoctors_own_process_and_before_ray():
    assert not joinwatch.is_rldoctor_process()  # pytest: never forked
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['ray'] = object()\n"
                           + PROGRAM.format(timeout=0.2, body="time.sleep(0.6); print('done')")],
                          capture_output=True, text=True, timeout=30)
    # armed, the keeper would have ended it at 0.2 s with exit 3
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "done" and done.stderr == "", done


def test_the_node_named_is_the_one_ray_joins_a_driver_to_found_from_the_raylets(tmp_path):
    """Ray 2.60's raylet command lines (`--node_id=`, `--node_ip_address=`, the head's
    `node:__internal_head__` resource, the cluster's GCS in its agent's command): the head of
    the cluster at that address if it runs here, else another node of it here."""
    def raylet(pid, node, ip, gcs, head):
        resources = f"node:{ip},1.0" + (",node:__internal_head__,1.0" if head else "") + ",CPU,1"
        args = ["/venv/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet",
                f"--node_id={node}", f"--node_ip_address={ip}", f"--static_resource_list={resources}",
                f"--dashboard_agent_command=/venv/bin/python -u agent.py --node-id={node} "
                f"--gcs-address={gcs} --head"]
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes("\0".join(args).encode() + b"\0")

    raylet(10, "a" * 56, "127.0.0.11", "127.0.0.10:5000", head=False)
    raylet(11, "b" * 56, "127.0.0.10", "127.0.0.10:5000", head=True)
    raylet(12, "c" * 56, "127.0.20.10", "127.0.20.10:7000", head=True)  # another cluster's head
    (tmp_path / "13").mkdir()
    (tmp_path / "13" / "cmdline").write_bytes(b"python\0-c\0--gcs-address=127.0.0.10:5000\0")
    assert joinwatch.local_node("127.0.0.10:5000", str(tmp_path)) == f"{'b' * 12} (127.0.0.10)"
    (tmp_path / "11" / "cmdline").unlink()  # the head is elsewhere: a node of it here
    assert joinwatch.local_node("127.0.0.10:5000", str(tmp_path)) == f"{'a' * 12} (127.0.0.11)"
    assert joinwatch.local_node("127.0.0.99:5000", str(tmp_path)) is None


# `watch`: the collector child (rldoctor.watch.gcs_child) tells the round what it does; a round
# whose join Ray holds past --timeout, or whose collection it holds past the round's bound, ends
# with one line naming what it waited for and the node, the child's group and files gone.
HELD_CHILD = """
import json, os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # held in Ray: no Python handler runs
def tell(kind, text=""):
    print(json.dumps({{"tell": kind, "text": text}}), flush=True)
open({log!r}, "w").close()
tell("file", {log!r})
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open({pids!r}, "w").write(f"{{os.getpid()}} {{helper.pid}}")
sys.stdin.readline()  # the round's "collect"
tell("gcs", "127.0.0.1:1")
{joined}
time.sleep(600)
"""


def _held_round(tmp_path, joined: bool, timeout_s: float):
    from rldoctor.watch import rounds

    log, pids = tmp_path / "rldoctor-ray-x.log", tmp_path / "pids"
    script = HELD_CHILD.format(log=str(log), pids=str(pids),
                               joined='tell("settled")' if joined else "")

    class HeldChild(rounds.CollectorProcess):
        def _command(self):
            return [sys.executable, "-c", script]

    collector = HeldChild(None, timeout_s)
    started = time.monotonic()
    try:
        collector.snapshot(rounds.threading.Event())
    except rounds.RoundFailed as exc:
        why = str(exc)
    else:
        raise AssertionError("the held round returned a snapshot")
    took = time.monotonic() - started
    child, helper = (int(p) for p in pids.read_text().split())
    gone_by = time.monotonic() + 5  # SIGKILLed: dead once the (loaded) host runs it
    while time.monotonic() < gone_by and (_alive(child) or _alive(helper)):
        time.sleep(0.05)
    return why, took, log, child, helper


def test_a_watch_round_whose_join_ray_holds_ends_at_its_timeout_with_one_line(tmp_path):
    from rldoctor.watch import rounds

    why, took, log, child, helper = _held_round(tmp_path, joined=False, timeout_s=2.0)
    assert took < 2.0 + rounds.JOIN_GRACE_S + 4, took  # not the round's timeout + 20 s margin
    assert "\n" not in why
    assert why.startswith("Ray did not let rldoctor join the cluster at 127.0.0.1:1 as a driver "
                          "within 2s (--timeout)"), why
    assert "node of this machine that Ray joins drivers to" in why and "raylet.out" in why, why
    assert why.endswith("the collector was stopped and the next round starts a new one"), why
    assert not _alive(child) and not _alive(helper)
    assert not log.exists()  # the child's temporary Ray log


def test_a_watch_round_whose_collection_ray_holds_ends_at_its_bound_with_one_line(tmp_path,
                                                                               monkeypatch):
    from rldoctor.watch import rounds

    monkeypatch.setattr(rounds, "ANSWER_MARGIN_S", 1.0)
    monkeypatch.setattr(rounds, "STOP_GRACE_S", 0.5)
    why, took, log, child, helper = _held_round(tmp_path, joined=True, timeout_s=1.0)
    assert 2.0 <= took < 8, took
    assert why.startswith("Ray held rldoctor's collection from the cluster at 127.0.0.1:1 past "
                          "2s (--timeout and a margin) after it joined as a driver on "), why
    assert not _alive(child) and not _alive(helper)
    assert not log.exists()


COLLECT_HELD = """
import sys, time
sys.argv = ["/usr/bin/rldoctor", "collect", "--address", "127.0.0.1:1", "--timeout", "1",
            "--output", {out!r}]
from rldoctor.cluster import connect, session
def held(address, timeout_s, **kw):  # what Ray does to a first driver whose workers hang
    connect.tell("gcs", "127.0.0.1:1")
    time.sleep(600)
session.collect_snapshot = held
from rldoctor.cli import main
main()
"""


def test_collect_goes_through_the_same_time_keeper_and_writes_nothing(tmp_path):
    out = tmp_path / "snapshot.json"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", COLLECT_HELD.format(out=str(out))],
                          capture_output=True, text=True, timeout=60)
    took = time.monotonic() - started
    assert done.returncode == 3, (done.returncode, done.stderr[-2000:])
    assert took < 1 + joinwatch.GRACE_S + 8, took  # the interpreter's start on a loaded host
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "rldoctor: Ray did not let rldoctor join the cluster at 127.0.0.1:1 as a driver within "
        "1s (--timeout)"), done.stderr
    assert done.stdout == "" and not out.exists()


def test_preflight_forks_its_time_keeper_before_the_plans_process_starts(monkeypatch):
    """The keeper's fork leaves the original process as the keeper and goes on in the child:
    a plan reader started before it would be the keeper's child, which the joining process can
    neither wait for nor kill (it read a plan that Ctrl-C or an error left running). Before
    that, a fork while a thread imported RLlib left the joining process stuck on the import
    lock that thread held. The keeper is forked first; the plan's process starts after."""
    from rldoctor.commands import preflight
    from rldoctor.inputs import plan_reader

    order = []

    class Stop(Exception):
        pass

    def plan_loader(target, env, timeout_s):
        order.append("plan's process")
        raise Stop

    monkeypatch.setattr(joinwatch, "guard", lambda timeout_s, address: order.append("keeper"))
    monkeypatch.setattr(plan_reader, "PlanLoader", plan_loader)
    try:
        preflight.run("pkg.mod:config", "127.0.0.1:6999", None, "json", None, "fail", 30.0)
    except Stop:
        pass
    assert order == ["keeper", "plan's process"]
