"""What finding the failed jobs and their chains (RLD405, the timeline) adds to one `rldoctor check`.

    python benchmarks/failed_jobs_cost.py [--repeats 5]

On the 3-node test cluster (head + 2 workers, 1 CPU each) with a few ended jobs (a PPO job
that succeeded, one whose env raised with RLlib's restarts off, and one stopped by its user):
`rldoctor collect` --repeats times, each run's `jobs` collector time (the job list, the failed
driver's log tail and its chain workers' .err tails; it runs side by side with the actor list,
so this is an upper bound of what it adds; and how far it ends after the probes' measuring,
which it runs beside: what it adds to the wall), then the pure part on the recorded snapshot: the
chains (RLD405) and the timeline. Prints one JSON document: median and spread (min, max) of
each; the issue's budget is 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from localcluster import BIN, three_nodes  # noqa: E402

SCRIPT = ROOT / "tests" / "failed_training.py"


def _ray(cluster, *args) -> str:
    proc = subprocess.run([str(BIN / "ray"), *args], env=cluster.client_env(),
                          capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    return proc.stdout


def _status(cluster, sid: str) -> str:
    request = urllib.request.Request(f"{cluster.dashboard_url}/api/jobs/{sid}")
    if cluster.token_auth:
        request.add_header("Authorization", f"Bearer {cluster.token}")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())["status"]


def _wait(cluster, sid: str, wanted: tuple[str, ...]) -> None:
    deadline = time.monotonic() + 300
    status = None
    while time.monotonic() < deadline:
        status = _status(cluster, sid)
        if status in wanted:
            return
        if status in ("SUCCEEDED", "FAILED", "STOPPED"):
            break
        time.sleep(1)
    logs = _ray(cluster, "job", "logs", "--address", cluster.dashboard_url, sid)
    raise RuntimeError(f"{sid} is {status}, not {wanted}:\n{logs[-3000:]}")


def ended_jobs(cluster) -> None:
    """One after another, so that no job waits on another's CPUs (3 on the test cluster)."""
    py = sys.executable
    for sid, args, ends in (
            ("bench-ok", [py, str(SCRIPT), "--runners", "1", "--iterations", "1"], ("SUCCEEDED",)),
            ("bench-raises", [py, str(SCRIPT), "--runners", "2", "--raise-runner", "1"],
             ("FAILED",))):
        _ray(cluster, "job", "submit", "--address", cluster.dashboard_url, "--no-wait",
             "--submission-id", sid, "--", *args)
        _wait(cluster, sid, ends)
    _ray(cluster, "job", "submit", "--address", cluster.dashboard_url, "--no-wait",
         "--submission-id", "bench-stopped", "--", py, "-c", "import time; time.sleep(600)")
    _wait(cluster, "bench-stopped", ("RUNNING",))
    _ray(cluster, "job", "stop", "--address", cluster.dashboard_url, "bench-stopped")
    _wait(cluster, "bench-stopped", ("STOPPED",))


def one_run(cluster, path: Path) -> dict:
    started = time.perf_counter()
    proc = subprocess.run([str(BIN / "rldoctor"), "collect", "--address", cluster.address,
                           "--output", str(path)], env=cluster.client_env(),
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    doc = json.loads(path.read_text())
    timing = doc.get("timing") or {}
    jobs_s = (doc["collectors"].get("jobs") or {}).get("duration_s") or 0.0
    # The jobs section starts with the state-API reads, once the probes are started, and runs
    # while the probes measure: it adds to the wall only where it ends after the probing.
    ends_after_probing = max(0.0, timing.get("probes_started_s", 0.0) + jobs_s
                             - timing.get("probed_s", 0.0))
    return {"collect_wall_s": round(wall, 3),
            "jobs_ends_after_probing_s": round(ends_after_probing, 3),
            "jobs_s": (doc["collectors"].get("jobs") or {}).get("duration_s"),
            "actors_s": (doc["collectors"].get("actors") or {}).get("duration_s"),
            "failed_jobs": sum(1 for j in (doc.get("jobs") or {}).get("jobs") or []
                               if j["status"] == "FAILED")}


def analysis_s(path: Path, repeats: int = 20) -> list[float]:
    from rldoctor import failure_chains as chains
    from rldoctor.report.timeline import build
    from rldoctor.snapshot import load

    snap = load(path)
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        chains.failed_jobs(snap.data)
        build(snap)
        out.append(time.perf_counter() - started)
    return out


def spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 4), "min": round(min(values), 4),
            "max": round(max(values), 4), "n": len(values)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with three_nodes() as cluster, tempfile.TemporaryDirectory() as tmp:
        ended_jobs(cluster)
        runs = [one_run(cluster, Path(tmp) / f"snap{i}.json") for i in range(args.repeats)]
        pure = analysis_s(Path(tmp) / "snap0.json")
    print(json.dumps({
        "runs": runs,
        "jobs_collector_s": spread([r["jobs_s"] for r in runs]),
        "actors_collector_s": spread([r["actors_s"] for r in runs]),
        "chains_and_timeline_s": spread(pure),
        "jobs_ends_after_probing_s": spread([r["jobs_ends_after_probing_s"] for r in runs]),
        "added_upper_bound_s": round(statistics.median(r["jobs_s"] for r in runs)
                                     + statistics.median(pure), 4),
        "added_on_the_critical_path_s": round(statistics.median(
            r["jobs_ends_after_probing_s"] for r in runs) + statistics.median(pure), 4),
        "budget_s": 0.3,
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
