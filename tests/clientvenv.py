"""The client-only install, for real: rldoctor's wheel built from this checkout and installed
into a fresh venv WITHOUT the cluster extra (`pip install rldoctor-ray`, what pipx does).

Its dependencies come from pip's configured index, as for `make install`. Used by
tests/test_client_only.py and benchmarks/client_only_install.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What only the cluster extra brings: none of it may be importable in the client venv.
CLUSTER_ONLY_MODULES = ("ray", "torch", "gymnasium", "psutil", "matplotlib", "numpy")


def _run(args: list[str], timeout: float, env: dict | None = None) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{out[-4000:]}")
    return seconds, out


def build_wheel(out_dir: Path) -> tuple[Path, str, float]:
    """(the wheel, pip's verbose build log, seconds): `pip wheel` runs setuptools in an
    isolated build environment, so its warnings are in the log."""
    out_dir.mkdir(parents=True, exist_ok=True)
    seconds, log = _run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w",
                         str(out_dir), str(ROOT)], timeout=600)
    from rldoctor.install import DISTRIBUTION

    wheels = sorted(out_dir.glob(f"{DISTRIBUTION.replace('-', '_')}-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], log, seconds


def clean_env() -> dict:
    """This process's environment without the dev venv's traces (PATH, VIRTUAL_ENV, PYTHON*)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not k.startswith("RAY_")}
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != bin_dir)
    return env


def make_venv(path: Path, wheel: Path) -> dict:
    """A fresh venv at `path` with the wheel installed, no extra. Returns the seconds of each
    step and pip's log."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    venv_s, _ = _run([base, "-m", "venv", str(path)], timeout=300, env=clean_env())
    install_s, log = _run([str(path / "bin" / "python"), "-m", "pip", "install",
                           "--disable-pip-version-check", str(wheel)], timeout=600, env=clean_env())
    return {"venv_s": venv_s, "install_s": install_s, "log": log}


def disk_bytes(path: Path) -> int:
    """Bytes on disk under `path` (blocks, as `du` counts them)."""
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


def importable(venv: Path, module: str) -> bool:
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", f"import {module}"],
                          capture_output=True, text=True, timeout=60, env=clean_env())
    return proc.returncode == 0
