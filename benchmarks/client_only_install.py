"""The client-only install (`pip install rldoctor`, no extra): install time, size, start-up.

    python benchmarks/client_only_install.py [--repeats 3] [--startup-runs 9]

Builds rldoctor's wheel from this checkout, then, `--repeats` times, makes a fresh venv
(`python -m venv`) and installs the wheel into it without the cluster extra, its
dependencies (click, tabulate, PyYAML, prometheus_client) from pip's configured index, as
`make install` gets its packages. Prints, as medians and every sample:
- the venv's creation and the install into it (goal: under 30 s for both);
- the venv's size on disk, and what rldoctor and its dependencies add to an empty venv
  (goal: under 50 MB);
- start-up in that venv: `rldoctor --help` and `rldoctor check --from` a recorded snapshot
  (goal: under 0.3 s), wall and CPU (user + sys) of each run, with the machine's load
  average (the machine is shared: wall times grow with it, CPU times much less);
- for contrast, the same two commands in the full install this script runs from.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from clientvenv import build_wheel, clean_env, disk_bytes, make_venv  # noqa: E402

SNAPSHOT = ROOT / "fixtures" / "training-hung.json"


def timed(args: list[str], env: dict) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup(rldoctor: str, runs: int, env: dict) -> dict[str, tuple[list[float], list[float]]]:
    out = {}
    for name, args in (("--help", ["--help"]),
                       ("check --from", ["check", "--from", str(SNAPSHOT), "--format", "json"])):
        timed([rldoctor, *args], env)  # warm the page cache
        samples = [timed([rldoctor, *args], env) for _ in range(runs)]
        out[name] = ([w for w, _ in samples], [c for _, c in samples])
    return out


def show(label: str, values: list[float], unit: str = "s") -> str:
    return (f"{label}: median {statistics.median(values):.2f} {unit} "
            f"(samples {', '.join(f'{v:.2f}' for v in values)})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--startup-runs", type=int, default=9)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rldoctor-client-bench-"))
    env = {**clean_env(), "HOME": str(work), "RLDOCTOR_CACHE_DIR": str(work / "cache")}
    try:
        wheel, _, build_s = build_wheel(work / "dist")
        print(f"wheel: {wheel.name}, {wheel.stat().st_size / 1e3:.0f} kB, built in {build_s:.1f} s")
        venv_s, install_s, total_s, sizes = [], [], [], []
        empty = work / "empty"
        subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(empty)],
                       check=True, env=clean_env())
        empty_bytes = disk_bytes(empty)
        for i in range(args.repeats):
            venv = work / f"venv{i}"
            made = make_venv(venv, wheel)
            venv_s.append(made["venv_s"])
            install_s.append(made["install_s"])
            total_s.append(made["venv_s"] + made["install_s"])
            sizes.append(disk_bytes(venv) / 1e6)
            if i:
                shutil.rmtree(venv)
        load = os.getloadavg()[0]
        print(f"load average at the end of the installs: {load:.1f} on {os.cpu_count()} cores")
        print(show("python -m venv", venv_s))
        print(show("pip install rldoctor.whl (client only)", install_s))
        print(show("fresh venv + install, total (goal < 30 s)", total_s))
        print(show("venv on disk (goal < 50 MB)", sizes, "MB"))
        print(f"an empty venv (pip, setuptools): {empty_bytes / 1e6:.1f} MB; rldoctor and its "
              f"dependencies add {statistics.median(sizes) - empty_bytes / 1e6:.1f} MB")
        print(f"load average before the start-up runs: {os.getloadavg()[0]:.1f}")
        for label, rldoctor in (("client-only venv", str(work / "venv0" / "bin" / "rldoctor")),
                                ("full install (this Python)",
                                 str(Path(sys.executable).parent / "rldoctor"))):
            for name, (walls, cpus) in startup(rldoctor, args.startup_runs, env).items():
                print(f"{label}: rldoctor {name}: wall median {statistics.median(walls):.3f} s "
                      f"(min {min(walls):.3f}), CPU median {statistics.median(cpus):.3f} s "
                      f"(goal < 0.3 s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
