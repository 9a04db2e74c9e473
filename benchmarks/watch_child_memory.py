"""Where the memory of `rldoctor watch`'s collector child goes, round by round.

    python benchmarks/watch_child_memory.py [--rounds 200] [--tracemalloc]

Starts a 3-node cluster (tests/localcluster.py, 1 CPU each) and runs what the watch's child
runs (rldoctor.watch.gcs_child: one LiveSession, a snapshot a round, each answer dumped to
JSON, then malloc_trim; --no-trim leaves that out) in a child process of its own, with the environment the watch gives it
(rldoctor.watch.rounds.child_env: MALLOC_ARENA_MAX=2), a round every second. After rounds
1, 5, 20, 50, 100, 150 and 200 it prints one JSON line: the RSS, glibc's own figures
(mallinfo2: bytes in use, free bytes it keeps, mmapped), the Python heap that tracemalloc
traces (with --tracemalloc, which costs memory of its own), and the count of Python objects
alive. With --tracemalloc, from round 50 on each line is followed by the 15 places whose traced
memory grew the most since round 5.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

MARKS = (1, 5, 20, 50, 100, 150, 200)
_OUT = sys.stderr


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _malloc_figures() -> dict:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    m = libc.mallinfo2()
    mib = 2**20
    return {"malloc_in_use_mib": round((m.uordblks + m.hblkhd) / mib, 1),
            "malloc_free_kept_mib": round(m.fordblks / mib, 1),
            "malloc_mmapped_mib": round(m.hblkhd / mib, 1)}


def _rss_mib() -> dict:
    """VmRSS and its parts: anonymous (heap, stacks, other allocators), files (libraries),
    shared memory (the pages of the node's object store this driver touched)."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                out[key] = round(int(line.split()[1]) / 1024, 1)
    return {"rss_mib": out.pop("VmRSS"), **{f"{k.lower()}_mib": v for k, v in out.items()}}


def child(address: str, rounds: int, traced: bool, trim: bool) -> int:
    import tracemalloc

    from rldoctor.watch.gcs_child import give_back_free_memory

    if traced:
        tracemalloc.start(12)
    from rldoctor.cluster.session import LiveSession, quiet_ray

    first = None
    global _OUT
    _OUT = os.fdopen(os.dup(2), "w")  # quiet_ray sends fd 1 and 2 to Ray's log
    with quiet_ray() as ray_log:
        session = LiveSession(address, ray_log)
        try:
            for n in range(1, rounds + 1):
                started = time.monotonic()
                doc = session.snapshot(30.0)
                json.dumps({"ok": True, "doc": doc}, default=str)
                del doc
                if trim:
                    give_back_free_memory()  # as the watch's child does after each answer
                if n in MARKS or n == rounds:
                    line = {"round": n, **_rss_mib(), **_malloc_figures(),
                            "python_objects": len(gc.get_objects())}
                    if traced:
                        line["traced_mib"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
                        if n == 5:
                            first = tracemalloc.take_snapshot()
                    print(json.dumps(line), file=_OUT, flush=True)
                    if first is not None and n >= 50:
                        _grown(tracemalloc.take_snapshot().compare_to(first, "traceback"))
                time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
        finally:
            session.close(leave=False)
    return 0


def _grown(stats) -> None:
    for stat in stats[:15]:
        where = " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in stat.traceback[:6])
        print(f"  {stat.size_diff / 2**20:+.2f} MiB ({stat.count_diff:+d} blocks) {where}",
              file=_OUT, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--no-trim", action="store_true",
                        help="leave out the child's malloc_trim after each round (as before it)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        code = child(args.child, args.rounds, args.tracemalloc, not args.no_trim)
        sys.stdout.flush()
        os._exit(code)
    from localcluster import LocalCluster, NodeSpec
    from rldoctor.watch.rounds import child_env

    # A loaded 2-core host under `nice -n 19` starts a cluster in minutes, not in 90 s.
    cluster = LocalCluster([NodeSpec() for _ in range(3)]).start(timeout_s=300)
    try:
        cmd = [sys.executable, __file__, "--child", cluster.address, "--rounds", str(args.rounds)]
        subprocess.run(cmd + (["--tracemalloc"] if args.tracemalloc else [])
                       + (["--no-trim"] if args.no_trim else []),
                       env=child_env(cluster.client_env()), stdout=subprocess.DEVNULL,
                       timeout=60 + args.rounds * 10)
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
