"""Venvs of other Ray releases, built once per machine and cached outside the clone.

    bin_dir = ray_venv("2.40.0")   # /var/cache/rldoctor-venvs/ray-2.40.0/bin (built if missing)

Each is `python -m venv` from the interpreter running the tests (the same Python, as a
cluster built alongside would have) with `pip install "ray[default,rllib]==X" torch==2.13.0`
(torch 2.13.0 is the local CPU build; any other spec would download CUDA). A build that
finished leaves `.complete`; a half-built one is removed and built again. The first build
of 2.40.0 took 150 s on this machine; afterwards a lookup is free.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

CACHE = Path(os.environ.get("RLDOCTOR_VENV_CACHE", "/var/cache/rldoctor-venvs"))


def ray_venv(version: str, timeout_s: float = 1200) -> Path:
    home = CACHE / f"ray-{version}"
    if (home / ".complete").exists():
        return home / "bin"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".ray-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be building it
        if (home / ".complete").exists():
            return home / "bin"
        shutil.rmtree(home, ignore_errors=True)
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(home)], check=True, timeout=120)
        proc = subprocess.run([str(home / "bin" / "pip"), "install", "-q",
                               f"ray[default,rllib]=={version}", "torch==2.13.0"],
                              capture_output=True, text=True, timeout=timeout_s)
        if proc.returncode:
            shutil.rmtree(home, ignore_errors=True)
            raise RuntimeError(f"could not build a venv of Ray {version}: "
                               f"{proc.stderr.strip()[-1500:]}")
        (home / ".complete").touch()
    return home / "bin"
