"""`rldoctor check --run` on a long run: a result.json of 100,000 real PPO rows.

    python benchmarks/run_results.py [--rows 100000] [--repeats 3]

The rows are the recorded healthy trial of fixtures/runs/healthy (real Tune rows of
RLlib PPO, configs cut to the training settings), repeated with rising iteration
numbers. Prints the file size, the wall time of `rldoctor check --run FILE` (median
of --repeats, the process as a whole), how many rows it read, and the peak memory of
the rldoctor process (ru_maxrss of the child).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RLDOCTOR = str(Path(sys.executable).parent / "rldoctor")


def write_rows(path: Path, count: int) -> None:
    template = []
    for line in (ROOT / "fixtures" / "runs" / "healthy" / "result.json").read_text().splitlines():
        row = json.loads(line)
        row["training_iteration"] = -1
        head, tail = json.dumps(row).split('"training_iteration": -1', 1)
        template.append((head + '"training_iteration": ', tail + "\n"))
    with open(path, "w") as f:
        for start in range(0, count, 1000):
            f.write("".join(f"{template[i % len(template)][0]}{i + 1}{template[i % len(template)][1]}"
                            for i in range(start, min(count, start + 1000))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "result.json"
        write_rows(path, args.rows)
        times, report = [], None
        for _ in range(args.repeats):
            started = time.perf_counter()
            proc = subprocess.run([RLDOCTOR, "check", "--run", str(path), "--format", "json"],
                                  capture_output=True, text=True)
            times.append(time.perf_counter() - started)
            report = json.loads(proc.stdout)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        print(json.dumps({
            "rows": args.rows, "file_mb": round(path.stat().st_size / 1e6, 1),
            "check_run_median_s": round(statistics.median(times), 3),
            "samples_s": [round(t, 3) for t in times],
            "peak_rss_mib": round(peak_kib / 1024, 1),
            "findings": [f["code"] for f in report["findings"]],
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
