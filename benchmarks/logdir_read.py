"""`rldoctor check --from DIR` on a real 3-node session directory and on a generated 1 GiB one.

    python benchmarks/logdir_read.py [--session DIR] [--size-gib 1] [--repeats 5]

1. The session directory of a real 3-node test cluster (default: fixtures/sessions/node-killed,
   or a raw copy made by `RLDOCTOR_RAW_ONLY=1 python tests/record_sessions.py node-killed`).
2. A generated directory of --size-gib: the same three nodes' session directories with long
   raylet, GCS and worker logs: each log's own lines, its middle padded with its own ordinary
   lines repeated (raylet 40%, GCS 15%, 60 worker .out/.err files 45%). The lines that matter
   stay where Ray wrote them, at the start and the end.
3. Single files of that directory (`check --from FILE`): its biggest worker .err and its
   biggest file (a raylet.out of hundreds of MiB).
Each run is the whole `rldoctor check --from DIR --format json` process; prints the median and
the spread (min..max) of the wall time, the median CPU time (user + system: what the run costs
on a host that other work loads) and the peak RSS (ru_maxrss of the child), and checks
that the report still names the failed job's dead node.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RLDOCTOR = str(Path(sys.executable).parent / "rldoctor")
DEAD_NODE = "node:6d98ee7dc5105165041e0c4079ab03fd0beddbd01db731d0b1bc969c"


def run_isolated(directory: Path) -> tuple[float, float, dict, float]:
    """One run in a fresh child of its own, so ru_maxrss is this run's peak only."""
    code = ("import json, os, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            f"p = subprocess.Popen([{RLDOCTOR!r}, 'check', '--from', {str(directory)!r}, "
            "'--format', 'json'], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
            "out = p.stdout.read(); err = p.stderr.read()\n"
            "_, status, usage = os.wait4(p.pid, 0)\n"
            "print(json.dumps({'s': time.perf_counter() - t, 'rss': usage.ru_maxrss / 1024, "
            "'cpu': usage.ru_utime + usage.ru_stime, "
            "'code': os.waitstatus_to_exitcode(status), 'out': out.decode(), 'err': err.decode()[-2000:]}))\n")
    done = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                     check=True).stdout)
    if done["code"] not in (0, 1, 3):  # 3: a file that names no node (NOT JUDGED), one line
        raise RuntimeError(f"check exited {done['code']}: {done['err']}")
    report = json.loads(done["out"]) if done["out"].strip() else {"findings": []}
    return done["s"], done["rss"], report, done["cpu"]


def _pad(path: Path, target_bytes: int) -> None:
    """Grow `path` to about `target_bytes` with its own ordinary lines, in its middle."""
    from rldoctor.raylog.lines import wanted

    lines = path.read_text(errors="replace").splitlines(keepends=True)
    plain = [line for line in lines if not wanted(line)] or ["[2026-12-03 08:05:00,000 I 1 1] "
                                                               "(raylet) filler.cc:1: tick\n"]
    block = "".join(plain)
    while len(block) < 4 * 2**20:
        block += block
    block = block.encode()
    half = len(lines) // 2
    need = target_bytes - path.stat().st_size
    with open(path, "wb") as f:
        f.write("".join(lines[:half]).encode())
        written = 0
        while written < need:
            part = block[:need - written]
            part = part[:part.rfind(b"\n") + 1] or part  # whole lines only
            f.write(part)
            written += len(part)
        f.write("".join(lines[half:]).encode())


def generate(source: Path, into: Path, size_gib: float) -> Path:
    if into.exists():
        shutil.rmtree(into)
    shutil.copytree(source, into)
    total = int(size_gib * 2**30)
    raylets = sorted(into.rglob("raylet.out"))
    gcs = sorted(into.rglob("gcs_server.out"))
    for path in raylets:
        _pad(path, int(total * 0.40 / len(raylets)))
    for path in gcs:
        _pad(path, int(total * 0.15 / len(gcs)))
    workers = sorted(into.rglob("worker-*.out")) + sorted(into.rglob("worker-*.err"))
    logs = next(into.rglob("logs"))
    template = next(iter(workers)) if workers else None
    for i in range(60 - len(workers)):  # more workers that ran and printed a lot
        name = f"worker-{i:056x}-02000000-{50000 + i}.{'out' if i % 2 else 'err'}"
        if template:
            shutil.copy(template, logs / name)
    workers = sorted(into.rglob("worker-*.out")) + sorted(into.rglob("worker-*.err"))
    for path in workers:
        _pad(path, int(total * 0.45 / len(workers)))
    return into


def measure(label: str, directory: Path, repeats: int) -> dict:
    size = (directory.stat().st_size if directory.is_file()
            else sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()))
    runs = [run_isolated(directory) for _ in range(repeats)]
    times = [r[0] for r in runs]
    rss = [r[1] for r in runs]
    cpu = [r[3] for r in runs]
    report = runs[-1][2]
    dead = [f["subject"] for f in report["findings"] if f["code"] == "RLD101"]
    row = {"label": label, "bytes": size, "median_s": statistics.median(times),
           "min_s": min(times), "max_s": max(times), "median_rss_mib": statistics.median(rss),
           "max_rss_mib": max(rss), "median_cpu_s": statistics.median(cpu),
           "names_dead_node": DEAD_NODE in dead}
    print(f"{label}: {size / 2**20:.0f} MiB, {repeats} runs: {row['median_s']:.2f} s median "
          f"({row['min_s']:.2f}..{row['max_s']:.2f}), CPU {row['median_cpu_s']:.2f} s median, peak RSS {row['median_rss_mib']:.0f} MiB "
          f"median (max {row['max_rss_mib']:.0f}); RLD101 names the dead node: "
          f"{row['names_dead_node']}", flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--session", default=str(ROOT / "fixtures" / "sessions" / "node-killed"))
    parser.add_argument("--size-gib", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    source = Path(args.session)
    measure("3-node session directory", source, args.repeats)
    with tempfile.TemporaryDirectory(prefix="rldoctor-logdir-bench-") as tmp:
        big = generate(source, Path(tmp) / "volume", args.size_gib)
        measure(f"generated {args.size_gib:g} GiB log directory", big, args.repeats)
        files = [p for p in big.rglob("*") if p.is_file()]
        err = max((p for p in files if p.name.startswith("worker-") and p.suffix == ".err"),
                  key=lambda p: p.stat().st_size)
        measure(f"one file, {err.name[:16]}...{err.suffix}", err, args.repeats)
        biggest = max(files, key=lambda p: p.stat().st_size)
        measure(f"one file, {biggest.name}", biggest, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
