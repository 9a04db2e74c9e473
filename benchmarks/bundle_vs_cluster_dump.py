"""Time and size of `rldoctor collect --bundle` on the 3-node test cluster with a PPO job running.

    python benchmarks/bundle_vs_cluster_dump.py [--repeats 3]

Starts a local 3-node cluster (head + 2 workers, one CPU each, token auth), starts a Tune
PPO job on CartPole-v1 as its own driver (tests/bundle_ppo_job.py: two env runners, secrets
in its runtime_env env_vars and its config), waits for its first iteration, then runs
`rldoctor collect --bundle` `--repeats` times and prints the wall time (median, every
sample), the bundle's size, what it holds, and whether a planted secret got in. Goals:
under 10 s, under 5 MB. Stops the job and the cluster at the end.

The comparison point is Ray's own `ray cluster-dump` (ray/scripts/scripts.py and
ray/autoscaler/_private/cluster_dump.py in the pinned Ray). It needs SSH to every node
(a cluster YAML's `auth.ssh_user` / `ssh_private_key`, or `--host` with `--ssh-user` and
`--ssh-key`), runs `ray local-dump --stream` on each node over SSH and nests each node's
tar.gz inside its own archive. Each node contributes: the *whole* session log folder
(`/tmp/ray/session_latest/logs`, every file, every worker's .out/.err, no tail, no size
cap), `debug_state.txt`, `pip freeze`, and the Ray processes with their full command
lines. It redacts nothing (env_vars echoed by runtime_env_agent.log, tokens on command
lines go in as they are), keeps no manifest of what failed, and has no per-node deadline
beyond SSH's own. It cannot run here: the nodes have no SSH. What it would copy is
measured instead: the size of this cluster's session log folder, raw and gzipped.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from localcluster import BIN, three_nodes  # noqa: E402

ENV_SECRET, CONFIG_SECRET = "bench-env-secret-7Hq2Lx9Z", "bench-cfg-secret-3Kd8Pm1N"


class _Counter(io.RawIOBase):
    def __init__(self):
        self.bytes = 0

    def writable(self):
        return True

    def write(self, data):
        self.bytes += len(data)
        return len(data)


def logs_folder_size(temp_dir: Path) -> dict:
    """What `ray cluster-dump` would copy of the logs: every file of the session's log folder."""
    files = [p for session in temp_dir.glob("session_2*") for p in (session / "logs").rglob("*")
             if p.is_file()]
    raw = sum(p.stat().st_size for p in files)
    counter = _Counter()
    with tarfile.open(fileobj=counter, mode="w:gz") as tar:
        for p in files:
            try:
                tar.add(p, arcname=str(p.relative_to(temp_dir)))
            except OSError:
                pass
    return {"files": len(files), "bytes": raw, "gzipped_bytes": counter.bytes}


def bundle_facts(path: Path) -> dict:
    with tarfile.open(path, "r:gz") as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile(next(n for n in names if n.endswith("/manifest.json"))).read())
        blob = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    items = manifest["items"]
    return {"files": len(names), "uncompressed_bytes": len(blob),
            "items_ok": sum(i["status"] == "ok" for i in items),
            "items_failed": sum(i["status"] != "ok" for i in items),
            "log_tails": sum(i["kind"] == "log" and i["status"] == "ok" for i in items),
            "stacks": sum(i["kind"] == "stack" and i["status"] == "ok" for i in items),
            "tune_results": sum(i["kind"] == "tune" and i["status"] == "ok" for i in items),
            "redacted": manifest["redacted"],
            "secret_leaked": any(s.encode() in blob for s in (ENV_SECRET, CONFIG_SECRET))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rldoctor-bench-"))
    (work / "home").mkdir()
    with three_nodes() as cluster:
        env = cluster.client_env(HOME=str(work / "home"))
        job = subprocess.Popen([sys.executable, str(ROOT / "tests" / "bundle_ppo_job.py"), cluster.address,
                                str(work / "results")],
                               env=dict(env, BUNDLE_ENV_SECRET=ENV_SECRET, BUNDLE_CONFIG_SECRET=CONFIG_SECRET),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and not job.stdout.readline().startswith("=> iteration"):
                if job.poll() is not None:
                    raise RuntimeError("the PPO job exited before its first iteration")
            samples, sizes = [], []
            for i in range(args.repeats):
                path = work / f"bundle-{i}.tar.gz"
                started = time.perf_counter()
                proc = subprocess.run([str(BIN / "rldoctor"), "collect", "--bundle", str(path),
                                       "--address", cluster.address], env=env,
                                      capture_output=True, text=True)
                samples.append(time.perf_counter() - started)
                if proc.returncode != 0:
                    raise RuntimeError(f"collect --bundle exited {proc.returncode}: {proc.stderr[-1500:]}")
                sizes.append(path.stat().st_size)
            facts = bundle_facts(work / f"bundle-{args.repeats - 1}.tar.gz")
            dump = logs_folder_size(cluster.temp_dir)
        finally:
            job.kill()
            job.wait()
    result = {
        "nodes": 3,
        "repeats": args.repeats,
        "bundle_median_s": round(statistics.median(samples), 2),
        "bundle_samples_s": [round(s, 2) for s in samples],
        "bundle_bytes_median": int(statistics.median(sizes)),
        "bundle": facts,
        "goal": {"under_10_s": statistics.median(samples) < 10, "under_5_MB": max(sizes) < 5 * 10**6},
        "cluster_dump_would_copy_logs": dump,
        "cluster_dump_needs": "SSH to every node; copies whole log folders; redacts nothing",
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
