"""Record the Ray session directories in fixtures/sessions/ from real local clusters.

    python tests/record_sessions.py [SCENARIO ...]     # env-raises node-killed ray240-env-raises

Each scenario starts a real cluster whose nodes each keep their own --temp-dir (as pods
do), submits a PPO job (tests/ppo_job.py) with `ray job submit` that really fails, waits
until Ray recorded the end, copies every node's session directory (node0 = the head)
before the cluster is stopped, and trims the copy: every file name stays, each file
keeps its first lines, the lines the log reader looks for (rldoctor.raylog.lines.wanted)
and its last lines. The findings expected of each session live beside it in
fixtures/sessions/<name>.expected.json, written by hand after reading the session.
`gather()` and `run_failing_job()` are also what the e2e test uses.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from localcluster import LocalCluster, NodeSpec  # noqa: E402

SESSIONS = HERE.parent / "fixtures" / "sessions"
PPO_JOB = HERE / "ppo_job.py"
KEEP_HEAD, KEEP_TAIL = 30, 60  # lines kept at each end of a trimmed file
MAX_LINE = 4000
KEEP_WHOLE = 24 * 1024  # files this small are kept whole


def per_node_temp_dirs(specs: list[NodeSpec], cluster: LocalCluster) -> None:
    """Give every worker node a --temp-dir of its own (the head has cluster.temp_dir)."""
    for i, spec in enumerate(specs[1:], start=1):
        own = cluster.root / f"node{i}-tmp"
        own.mkdir(exist_ok=True)
        spec.extra_args = [*spec.extra_args, "--temp-dir", str(own)]


def node_temp_dirs(cluster: LocalCluster) -> list[Path]:
    dirs = [cluster.temp_dir]
    for i in range(1, len(cluster.specs)):
        own = cluster.root / f"node{i}-tmp"
        dirs.append(own if own.exists() else cluster.temp_dir)
    return dirs


def make_cluster(bin_dir=None, own_temp_dirs: bool = True, nodes: int = 3,
                 token_auth: bool = True, node_env: dict | None = None) -> LocalCluster:
    """`node_env`: {node index: extra environment of that node's `ray start`}."""
    # The head holds no CPU: the env runners land on the worker nodes, the driver and
    # the job supervisor (0 CPU) on the head.
    specs = [NodeSpec(num_cpus=0)] + [NodeSpec(num_cpus=1) for _ in range(nodes - 1)]
    for index, env in (node_env or {}).items():
        specs[index].env.update(env)
    cluster = LocalCluster(specs, bin_dir=bin_dir, token_auth=token_auth)
    if own_temp_dirs:
        per_node_temp_dirs(specs, cluster)
    return cluster


def submit(cluster: LocalCluster, submission_id: str, *job_args: str) -> None:
    done = subprocess.run(
        [str(cluster.bin / "ray"), "job", "submit", "--address", cluster.dashboard_url,
         "--no-wait", "--submission-id", submission_id, "--",
         cluster.python, str(PPO_JOB), "--address", cluster.address, *job_args],
        env=cluster.client_env(), capture_output=True, text=True, timeout=120)
    if done.returncode:
        raise RuntimeError(f"ray job submit failed: {done.stderr[-2000:]}")


def head_logs(cluster: LocalCluster) -> Path:
    return cluster.temp_dir / "session_latest" / "logs"


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise TimeoutError(f"{what} not seen within {timeout_s:.0f}s")


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def job_ended(cluster: LocalCluster, submission_id: str) -> bool:
    return f"Completed a ray job {submission_id} with a status" in _text(
        head_logs(cluster) / "events" / "event_JOBS.log")


def driver_printed(cluster: LocalCluster, submission_id: str, text: str) -> bool:
    return text in _text(head_logs(cluster) / f"job-driver-{submission_id}.log")


def run_failing_job(cluster: LocalCluster, submission_id: str, *job_args: str,
                    timeout_s: float = 240) -> None:
    """Submit the PPO job and wait until the events log says it ended."""
    submit(cluster, submission_id, *job_args)
    wait_for(lambda: job_ended(cluster, submission_id), timeout_s, f"the end of job {submission_id}")


def gather(cluster: LocalCluster, into: Path) -> Path:
    """Copy every node's session directory to into/node<i>/session_<name>/ (as a log volume
    collected from every pod holds them); sockets and runtime_resources are left out."""
    into.mkdir(parents=True, exist_ok=True)
    seen = set()
    for i, temp in enumerate(node_temp_dirs(cluster)):
        latest = (temp / "session_latest").resolve()
        if latest in seen:
            continue
        seen.add(latest)
        shutil.copytree(latest, into / f"node{i}" / latest.name, symlinks=True,
                        ignore=_not_logs, ignore_dangling_symlinks=True)
    return into


def _not_logs(directory: str, names: list[str]) -> list[str]:
    skipped = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            skipped.append(name)
            continue
        if name in ("runtime_resources", "sockets", "metrics") or not (
                stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            skipped.append(name)
    return skipped


def trim(raw: Path, out: Path) -> None:
    """Copy `raw` to `out`: the files the log reader reads (and the session's port files,
    which name its node), each cut to its first and last lines and the lines it looks for."""
    from rldoctor.raylog.kinds import classify
    from rldoctor.raylog.lines import wanted

    if out.exists():
        shutil.rmtree(out)
    for path in sorted(p for p in raw.rglob("*") if p.is_file()):
        rel = path.relative_to(raw)
        in_logs = "logs" in rel.parts
        if in_logs and classify(path.name) is None:
            continue  # dashboard, agents, monitor, export events: not read
        if not in_logs and not (re.search(r"_port_[0-9a-f]{56}$", path.name)
                                or path.name in ("node_ip_address.json", "ports_by_node.json")):
            continue
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        if len(data) <= KEEP_WHOLE:
            target.write_bytes(data)
            continue
        lines = data.decode("utf-8", "replace").splitlines()
        kept = [line[:MAX_LINE] for n, line in enumerate(lines)
                if n < KEEP_HEAD or n >= len(lines) - KEEP_TAIL or wanted(line)]
        target.write_text("\n".join(kept) + ("\n" if kept else ""))


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _record(name: str, cluster: LocalCluster, scenario) -> None:
    raw = Path(os.environ.get("RLDOCTOR_RAW_SESSIONS", "/tmp")) / f"rldoctor-raw-{name}"
    if raw.exists():
        shutil.rmtree(raw)
    with cluster:
        scenario(cluster)
        time.sleep(3)  # the GCS and raylets write their last words about the dead workers
        gather(cluster, raw)
    if os.environ.get("RLDOCTOR_RAW_ONLY"):
        print(f"raw copy of {name}: {raw}")
        return
    trim(raw, SESSIONS / name)
    print(f"recorded fixtures/sessions/{name}: {size_of(SESSIONS / name) / 1024:.0f} KiB "
          f"(raw copy: {raw}, {size_of(raw) / 1024:.0f} KiB)")


def env_raises(cluster: LocalCluster) -> None:
    run_failing_job(cluster, "pm-env-raises", "--runners", "2", "--raise-runner", "1",
                    "--fail-fast", "--iterations", "200")


def node_killed(cluster: LocalCluster, submission_id: str = "pm-node-killed",
                after_iterations: int = 2) -> None:
    """The PPO job with fault tolerance off; once it trained `after_iterations`, every process
    of node 2 (an env runner's node) is killed with SIGKILL; waits for the job's end and the
    GCS marking the node dead."""
    submit(cluster, submission_id, "--runners", "2", "--fail-fast", "--iterations", "400",
           "--step-ms", "2")
    wait_for(lambda: driver_printed(cluster, submission_id, f"=> iteration {after_iterations}"),
             240, f"iteration {after_iterations} of the job")
    cluster.kill_node(2, signal.SIGKILL)
    wait_for(lambda: job_ended(cluster, submission_id), 240, f"the end of job {submission_id}")
    wait_for(lambda: "Node is dead because" in _text(head_logs(cluster) / "gcs_server.out")
             or "death reason" in _text(head_logs(cluster) / "gcs_server.out"), 90,
             "the GCS marking node 2 dead")


def oom_killed(cluster: LocalCluster) -> None:
    """Node 2 runs with RAY_memory_usage_threshold=0.02: Ray's memory monitor kills the env
    runner there as soon as it works; fault tolerance is off, so the job fails."""
    run_failing_job(cluster, "pm-oom-killed", "--runners", "2", "--fail-fast",
                    "--iterations", "200")


def record_env_raises() -> None:
    _record("env-raises", make_cluster(), env_raises)


def record_node_killed() -> None:
    _record("node-killed", make_cluster(), node_killed)


def record_ray240_env_raises() -> None:
    from ray_venvs import ray_venv

    cluster = make_cluster(bin_dir=ray_venv("2.40.0"), own_temp_dirs=False, nodes=3,
                           token_auth=False)
    _record("ray240-env-raises", cluster, env_raises)


def record_oom_killed() -> None:
    _record("oom-killed", make_cluster(node_env={2: {"RAY_memory_usage_threshold": "0.02"}}),
            oom_killed)


SCENARIOS = {"env-raises": record_env_raises, "node-killed": record_node_killed,
             "oom-killed": record_oom_killed,
             "ray240-env-raises": record_ray240_env_raises}

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--trim"]:  # trim raw copies made before (RLDOCTOR_RAW_ONLY=1)
        for name in args[1:]:
            raw = Path(os.environ.get("RLDOCTOR_RAW_SESSIONS", "/tmp")) / f"rldoctor-raw-{name}"
            trim(raw, SESSIONS / name)
            print(f"trimmed fixtures/sessions/{name}: {size_of(SESSIONS / name) / 1024:.0f} KiB")
        sys.exit(0)
    for wanted_name in args or list(SCENARIOS):
        SCENARIOS[wanted_name]()
