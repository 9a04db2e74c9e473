"""`rldoctor check --from` and `rldoctor lint` of two revisions of this repository, in one run.

    python benchmarks/before_after.py BEFORE [AFTER] [--runs 7]

Exports each revision (`git archive`; AFTER defaults to the work tree as it is) into a folder
of its own laid out as the installed package (doctor/ as `rldoctor`, checks/ as
`rldoctor.checks`), then times, alternating the two so a busy machine weighs on both alike,
the console entry point of each: `check --from` the largest recorded fixture and a synthetic
1,000-node, 20,000-actor snapshot (tests/synthetic.py), and `lint --format json` of the
installed RLlib's examples (after one run each that fills the cache of this Ray's names).
Prints for each the median wall and the median CPU seconds (user + system of the child: what
the command itself spent, which a busy machine skews far less than the wall), every sample,
and after/before. Same interpreter, same installed dependencies: only rldoctor's own code
differs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from synthetic import big_snapshot  # noqa: E402

PROGRAM = ("import sys; sys.path.insert(0, sys.argv.pop(1)); import rldoctor; "
           "assert rldoctor.__file__.startswith(sys.path[0]); from rldoctor.cli import main; main()")


def tree(revision: str | None, into: Path) -> Path:
    """The package of `revision` (None: the work tree) as `into`/rldoctor; returns `into`."""
    source = into / "source"
    if revision is None:
        shutil.copytree(ROOT / "doctor", source / "doctor")
        shutil.copytree(ROOT / "checks", source / "checks")
    else:
        source.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "doctor", "checks"],
                                 capture_output=True, check=True).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
            tar.extractall(source, filter="data")
    shutil.copytree(source / "doctor", into / "rldoctor")
    shutil.copytree(source / "checks", into / "rldoctor" / "checks")
    return into


def timed(package: Path, *args: str) -> tuple[float, float]:
    """(wall s, CPU s) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PROGRAM, str(package), *args],
                          capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{package}: rldoctor {' '.join(args[:2])} exited {proc.returncode}: "
                         f"{proc.stderr.strip()[-500:]}")
    return seconds, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after", nargs="?")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    rllib = Path(importlib.util.find_spec("ray.rllib").submodule_search_locations[0])
    examples = [str(p) for p in (rllib / "examples", rllib / "tuned_examples") if p.exists()]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        trees = {"before": tree(args.before, tmp / "before"), "after": tree(args.after, tmp / "after")}
        largest = max((p for p in (ROOT / "fixtures").glob("*.json")
                       if not p.name.endswith(".expected.json")), key=lambda p: p.stat().st_size)
        synthetic = tmp / "synthetic-1000.json"
        synthetic.write_text(json.dumps(big_snapshot(1000, 20000)))
        out = tmp / "report.txt"
        cases = {f"check --from {largest.name}": ["check", "--from", str(largest), "--output", str(out)],
                 "check --from synthetic 1000 nodes": ["check", "--from", str(synthetic), "--output", str(out)],
                 "lint RLlib examples": ["lint", "--format", "json", *examples]}
        for package in trees.values():
            timed(package, *cases["lint RLlib examples"])  # this Ray's names cached
        for name, argv in cases.items():
            samples: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
            for _ in range(args.runs):
                for which, package in trees.items():
                    samples[which].append(timed(package, *argv))
            for i, kind in ((0, "wall"), (1, "CPU")):
                medians = {k: statistics.median(s[i] for s in v) for k, v in samples.items()}
                print(f"{name} ({kind}): before {medians['before']:.3f} s, after "
                      f"{medians['after']:.3f} s, after/before {medians['after'] / medians['before']:.3f}")
                for which, values in samples.items():
                    print(f"  {which}: " + " ".join(f"{v[i]:.3f}" for v in values))


if __name__ == "__main__":
    main()
