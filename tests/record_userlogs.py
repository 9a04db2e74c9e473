"""Record the Ray-written cases of fixtures/userlogs/ from a real local Ray cluster.

    python tests/record_userlogs.py [BIN_DIR]             # BIN_DIR: another Ray's venv (tests/ray_venvs.py)
    python tests/record_userlogs.py [BIN_DIR] --healthy   # the healthy session only

One single-node cluster (the venv's Ray) runs a driver whose actors fail as users' do: one
segfaults in native code (`ctypes.string_at(0)`), one raises in __init__ because a module
is missing, one whose method raises; a healthy one answers. The files Ray wrote are copied
as Ray laid them out: each failing worker's .err on its own (fixtures/userlogs/ray<ver>-*/),
and the whole session of a second, healthy run (fixtures/userlogs/healthy-ray<ver>/, trimmed
like fixtures/sessions) which must read clean: a driver runs a few tasks and two actors,
lets the actors go out of scope, and exits; the session is copied once Ray has ended the
actors' workers, before the cluster stops.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from localcluster import LocalCluster, NodeSpec  # noqa: E402
from record_sessions import gather, trim  # noqa: E402

OUT = HERE.parent / "fixtures" / "userlogs"

FAILING = r'''
import ctypes, time
@ray.remote(max_restarts=0)
class CrashyEnv:
    def step(self):
        return ctypes.string_at(0)
@ray.remote(max_restarts=0)
class NeedsModule:
    def __init__(self):
        import my_private_env_package  # not installed on the node
    def ping(self):
        return 1
@ray.remote
class Raises:
    def step(self):
        raise ValueError("reward is NaN at step 17")
for name, cls, call in (("CrashyEnv", CrashyEnv, "step"), ("NeedsModule", NeedsModule, "ping"),
                        ("Raises", Raises, "step")):
    a = cls.remote()
    try:
        ray.get(getattr(a, call).remote(), timeout=60)
    except Exception as exc:
        print("=>", name, type(exc).__name__)
time.sleep(3)
'''
HEALTHY = r'''
@ray.remote
def square(x):
    return x * x
@ray.remote
class Fine:
    def step(self, x):
        return x + 1
print("=> tasks", sum(ray.get([square.remote(i) for i in range(8)])))
actors = [Fine.remote() for _ in range(2)]
print("=> actors", sum(ray.get([a.step.remote(i) for i, a in enumerate(actors)])))
del actors
'''


def _session(cluster: LocalCluster) -> Path:
    return (cluster.temp_dir / "session_latest").resolve()


def _copy(src: Path, case: str, expected: dict, source: str) -> None:
    root = OUT / case
    shutil.rmtree(root, ignore_errors=True)
    (root / "logs").mkdir(parents=True)
    shutil.copy(src, root / "logs" / src.name)
    expected = dict(expected, **{"from": f"logs/{src.name}"})
    (root / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    (root / "SOURCE").write_text(source + "\n")


def _console(cluster: LocalCluster, code: str) -> str:
    """What the driver printed, Ray's relayed lines included (as a user's terminal holds it)."""
    import subprocess

    prologue = ("import ray, logging\n"
                f"ray.init(address={cluster.address!r}, namespace='drivers')\n")
    proc = subprocess.run([*cluster.client_prefix, cluster.python, "-u", "-c", prologue + code],
                          capture_output=True, text=True, timeout=240, env=cluster.client_env())
    return proc.stdout + proc.stderr


def _pids_running(cluster: LocalCluster, index: int, program: str) -> list[int]:
    """Pids of node `index` whose command line holds `program` anywhere."""
    from localcluster import _pids_of

    found = []
    for pid in _pids_of(sid=cluster.nodes[index].sid):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.decode(errors="replace").endswith(program) for a in args):
            found.append(pid)
    return found


def _node_dead_in_gcs(cluster: LocalCluster, node_id: str) -> bool:
    gcs = _session(cluster) / "logs" / "gcs_server.out"
    text = gcs.read_text(errors="replace") if gcs.exists() else ""
    return node_id in text and ("death reason" in text or "health check failed" in text)


def break_node(bin_dir, program: str, sig: int, into: Path) -> str:
    """A two-node cluster whose worker node loses `program` to `sig`; both nodes' session
    directories gathered into `into` (node0 the head, node1 the broken node) once the GCS
    wrote the node's death. Returns the broken node's id."""
    from record_sessions import per_node_temp_dirs

    specs = [NodeSpec(num_cpus=0), NodeSpec(num_cpus=1)]
    cluster = LocalCluster(specs, dashboard=True, bin_dir=bin_dir)
    per_node_temp_dirs(specs, cluster)
    with cluster:
        node_id = cluster.nodes[1].node_id
        [pid] = _pids_running(cluster, 1, program)[:1]
        os.kill(pid, sig)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not _node_dead_in_gcs(cluster, node_id):
            time.sleep(1)
        time.sleep(2)
        shutil.rmtree(into, ignore_errors=True)
        gather(cluster, into)
    return node_id


def telling_file(node_dir: Path) -> Path:
    """The broken node's most telling file: its raylet.err (its raylet.out when empty)."""
    logs = next(node_dir.iterdir()) / "logs"
    best = max(logs.glob("raylet*.err"), key=lambda p: p.stat().st_size, default=None)
    return best if best is not None and best.stat().st_size else logs / "raylet.out"


def _broken_node(tag: str, ver: str, wrote: str, bin_dir, case: str, program: str, sig: int,
                 holds: list[str]) -> None:
    """The broken node's files as a log volume holds them, and its most telling file alone."""
    raw = Path("/tmp") / f"rldoctor-raw-{tag}-{case}"
    node_id = break_node(bin_dir, program, sig, raw)
    root = OUT / f"{tag}-{case}"
    trim(raw, root)
    (root / "expected.json").write_text(json.dumps(
        {"from": ".", "code": "RLD101", "names": {"node_id": node_id}, "holds": holds,
         "ray": ver}, indent=1) + "\n")
    (root / "SOURCE").write_text(f"{wrote}: {program} of the worker node killed with "
                                 f"signal {sig}; node0 is the head, node1 the broken node\n")
    best = telling_file(root / "node1")
    single = OUT / f"{tag}-{case}-one-file"
    shutil.rmtree(single, ignore_errors=True)
    (single / "logs").mkdir(parents=True)
    shutil.copy(best, single / "logs" / best.name)
    (single / "expected.json").write_text(json.dumps(
        {"from": f"logs/{best.name}", "code": "RLD101", "names": {}, "holds": holds,
         "ray": ver}, indent=1) + "\n")
    (single / "SOURCE").write_text(f"{wrote}: the broken node's {best.name} alone (from "
                                   f"{tag}-{case})\n")
    print("recorded", root.name, single.name, "node", node_id[:12])


def gcs_out_of_files(bin_dir) -> str:
    """The GCS at its open-files limit: its limit lowered (prlimit) and connections opened
    to its port until it cannot accept more. Returns its gcs_server.err."""
    import resource
    import socket

    with LocalCluster([NodeSpec(num_cpus=1)], dashboard=False, bin_dir=bin_dir) as cluster:
        [gcs] = _pids_running(cluster, 0, "gcs_server")[:1]
        used = len(os.listdir(f"/proc/{gcs}/fd"))
        resource.prlimit(gcs, resource.RLIMIT_NOFILE, (used + 8, used + 8))
        socks = []
        host, port = cluster.address.rsplit(":", 1)
        for _ in range(64):
            try:
                socks.append(socket.create_connection((host, int(port)), timeout=2))
            except OSError:
                break
        time.sleep(3)
        for sock in socks:
            sock.close()
        err = _session(cluster) / "logs" / "gcs_server.err"
        return err.read_text(errors="replace") if err.exists() else ""


def _gcs_out_of_files(tag: str, ver: str, wrote: str, bin_dir) -> None:
    text = gcs_out_of_files(bin_dir)
    if "Too many open files" not in text:
        raise RuntimeError(f"the GCS did not run out of files: {text[-500:]}")
    root = OUT / f"{tag}-gcs-open-files"
    shutil.rmtree(root, ignore_errors=True)
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "gcs_server.err").write_text("\n".join(text.splitlines()[:200]) + "\n")
    (root / "expected.json").write_text(json.dumps(
        {"from": "logs/gcs_server.err", "code": "RLD107", "names": {},
         "holds": ["Too many open files", "the GCS"], "ray": ver}, indent=1) + "\n")
    (root / "SOURCE").write_text(f"{wrote}: the GCS's open-files limit lowered with prlimit, "
                                 "then connections opened to its port (its first 200 lines)\n")
    print("recorded", root.name)


def main() -> int:
    import subprocess

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    bin_dir = Path(args[0]) if args else None
    python = str(bin_dir / "python") if bin_dir else sys.executable
    version = subprocess.run([python, "-c", "import ray; print(ray.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ver = ".".join(version.split(".")[:2])
    tag = "ray" + ver.replace(".", "")
    wrote = f"written by Ray {version} on a local cluster (tests/record_userlogs.py)"
    import signal

    if "--healthy" in sys.argv[1:]:
        return record_healthy(bin_dir, tag)
    if os.environ.get("RLDOCTOR_GCS_FDS_ONLY"):
        _gcs_out_of_files(tag, ver, wrote, bin_dir)
        return 0
    if not os.environ.get("RLDOCTOR_SKIP_SIGABRT"):
        _broken_node(tag, ver, wrote, bin_dir, "raylet-sigabrt", "raylet", signal.SIGABRT,
                     ["SIGABRT"])
    _broken_node(tag, ver, wrote, bin_dir, "agent-killed", "ray::DashboardAgent", signal.SIGKILL,
                 ["agent"])
    if os.environ.get("RLDOCTOR_BROKEN_NODES_ONLY"):
        return 0
    with LocalCluster([NodeSpec(num_cpus=4)], dashboard=False, bin_dir=bin_dir) as cluster:
        console = _console(cluster, FAILING)
        time.sleep(2)
        logs = _session(cluster) / "logs"
        errs = sorted(logs.glob("worker-*.err")) + sorted((logs / "old").glob("worker-*.err"))
        for err in errs:
            text = err.read_text(errors="replace")
            pid = err.name.rsplit("-", 1)[-1].split(".")[0]
            if "Fatal Python error" in text:
                _copy(err, f"{tag}-worker-segfault", {"code": "RLD403", "names": {"pid": pid},
                      "holds": ["Segmentation fault"], "ray": ver}, wrote)
            elif "Exception raised in creation task" in text:
                _copy(err, f"{tag}-creation-task", {"code": "RLD405", "names": {"pid": pid},
                      "holds": ["ModuleNotFoundError", "my_private_env_package"], "ray": ver}, wrote)
    root = OUT / f"{tag}-driver-console"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / "stdin.txt").write_text(console)
    (root / "expected.json").write_text(json.dumps(
        {"from": "-", "code": "RLD405", "names": {}, "holds": ["my_private_env_package"],
         "ray": ver}, indent=1) + "\n")
    (root / "SOURCE").write_text(wrote + ": the driver's console (pasted, `check --from -`)\n")
    return record_healthy(bin_dir, tag)


def _actors_ended(cluster: LocalCluster) -> bool:
    """Whether the GCS wrote that it destroyed the healthy driver's two actors."""
    gcs = _session(cluster) / "logs" / "gcs_server.out"
    text = gcs.read_text(errors="replace") if gcs.exists() else ""
    return text.count("Destroying actor") >= 2


def record_healthy(bin_dir, tag: str) -> int:
    """The healthy job's session, read whole (no log-line hit, no warn or fail from
    `check --from`) before it is trimmed to fixtures/userlogs/healthy-<tag>/."""
    import subprocess

    with LocalCluster([NodeSpec(num_cpus=2)], dashboard=True, bin_dir=bin_dir) as cluster:
        print(_console(cluster, HEALTHY)[-300:])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _actors_ended(cluster):
            time.sleep(1)
        time.sleep(3)  # the GCS's lines on the workers Ray ended
        raw = Path("/tmp") / f"rldoctor-raw-healthy-{tag}"
        shutil.rmtree(raw, ignore_errors=True)
        gather(cluster, raw)
    from rldoctor.inputs.logdir import read_logs

    hits = read_logs(str(raw))["log_lines"]["items"]  # the whole session, before the trim
    if hits:
        print("a healthy session gave hits:", json.dumps(hits, indent=1)[:3000])
        return 1
    out = OUT / f"healthy-{tag}"
    trim(raw, out)
    proc = subprocess.run([sys.executable, "-m", "rldoctor", "check", "--from", str(out),
                           "--format", "json"], capture_output=True, text=True, timeout=120)
    report = json.loads(proc.stdout)
    loud = [(f["code"], f["message"]) for f in report["findings"]
            if f["severity"] in ("warn", "fail")]
    if loud or proc.returncode or report["summary"]["status"] != "ok":
        print(f"healthy-{tag} does not read clean (exit {proc.returncode}):", loud)
        return 1
    print("recorded", out.name, "read clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
