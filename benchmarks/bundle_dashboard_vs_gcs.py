"""Wall time and size of `rldoctor collect --bundle` through the dashboard against the GCS.

    python benchmarks/bundle_dashboard_vs_gcs.py [--repeats 3] [--ray 2.40.0]

Starts the local 3-node test cluster (head + 2 workers, one CPU each, token auth; with
--ray, from a cached venv of that Ray release, tests/ray_venvs.py) and writes, alternately
on the same cluster, the incident bundle
- through the GCS address (rldoctor joins as a driver on this machine; pinned Ray only);
- through the dashboard address `http://127.0.0.1:<port>` (the job gathers the items inside
  the cluster and prints them; the client reads them over HTTP).
Prints for each path the median wall, every sample, the bundle's size and its items
(collected / failed), the ratio, and for the last dashboard run where the time went.
Stops the cluster at the end.
"""

from __future__ import annotations

import argparse
import gzip
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

from localcluster import LocalCluster, NodeSpec  # noqa: E402

RLDOCTOR = str(Path(sys.executable).parent / "rldoctor")


def bundle(address: str, env: dict, path: Path) -> tuple[float, int, dict, dict]:
    started = time.monotonic()
    proc = subprocess.run([RLDOCTOR, "collect", "--bundle", str(path), "--force", "--address",
                           address], env=env, capture_output=True, text=True, timeout=300)
    wall = time.monotonic() - started
    if proc.returncode:
        raise SystemExit(f"rldoctor collect --bundle --address {address} exited "
                         f"{proc.returncode}: {proc.stderr.strip()[-500:]}")
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(path.read_bytes()))) as tar:
        files = {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar if m.isfile()}
    return (wall, path.stat().st_size, json.loads(files["manifest.json"]),
            json.loads(files["snapshot.json"]))


def items(manifest: dict) -> str:
    ok = sum(1 for i in manifest["items"] if i["status"] == "ok")
    kinds = sorted({i["kind"] for i in manifest["items"] if i["status"] == "ok"})
    return f"{ok} ok / {len(manifest['items']) - ok} failed ({', '.join(kinds)})"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ray", default=None, help="a Ray release for the cluster, e.g. 2.40.0 "
                        "(then only the dashboard path: the GCS path needs the pinned Ray)")
    args = parser.parse_args()
    bin_dir = None
    if args.ray:
        from ray_venvs import ray_venv

        bin_dir = ray_venv(args.ray)
    out = Path(tempfile.mkdtemp(prefix="rldoctor-bench-"))
    specs = [NodeSpec(num_cpus=1) for _ in range(3)]
    with LocalCluster(specs, bin_dir=bin_dir, token_auth=bin_dir is None) as cluster:
        env = cluster.client_env()
        env.pop("RAY_AUTH_MODE", None)
        runs: dict[str, list] = {"GCS": [], "dashboard": []}
        for _ in range(args.repeats):
            runs["dashboard"].append(bundle(cluster.dashboard_url, env, out / "dash.tar.gz"))
            if bin_dir is None:
                runs["GCS"].append(bundle(cluster.address, env, out / "gcs.tar.gz"))
        for name, samples in runs.items():
            if not samples:
                continue
            walls = [s[0] for s in samples]
            sizes = [s[1] for s in samples]
            print(f"{name:9} path: median {statistics.median(walls):.2f}s  samples "
                  + " ".join(f"{w:.2f}" for w in walls)
                  + f"; size median {statistics.median(sizes) / 1e3:.0f} KB; last: "
                  + items(samples[-1][2]))
        if runs["GCS"]:
            ratio = statistics.median(s[0] for s in runs["dashboard"]) / \
                statistics.median(s[0] for s in runs["GCS"])
            print(f"ratio dashboard/GCS {ratio:.2f}x")
        last = runs["dashboard"][-1][3]
        print(f"last dashboard run: cluster Ray {last['source'].get('cluster_ray_version')}, "
              f"phases {json.dumps((last.get('timing') or {}).get('dashboard'))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
