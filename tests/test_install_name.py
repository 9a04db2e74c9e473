"""The name rldoctor is installed by: `rldoctor` on the package index is an unrelated project,
so the distribution is rldoctor.install.DISTRIBUTION, and every install command the README and
the docs show, and every refusal that names the extra, must name that distribution (the
command and the import package stay `rldoctor`)."""

from __future__ import annotations

import re
import sys

import pytest

from conftest import ROOT
from rldoctor.install import CLUSTER_EXTRA, DISTRIBUTION, version_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# `pip install X`, `pipx install X`, `.../bin/pip install X`, with or without quotes and an extra.
INSTALL = re.compile(r"\bpipx? install\s+(?:-[-\w]+\s+)*['\"]?([A-Za-z0-9_.\-]+)(\[[a-z,]+\])?['\"]?")
SHOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _installs(text: str):
    return [(m.group(1), m.group(2)) for m in INSTALL.finditer(text)]


def test_the_distribution_is_the_one_in_pyproject_and_the_command_stays_rldoctor():
    assert PYPROJECT["project"]["name"] == DISTRIBUTION != "rldoctor"
    assert PYPROJECT["project"]["scripts"] == {"rldoctor": "rldoctor.cli:main"}
    assert "cluster" in PYPROJECT["project"]["optional-dependencies"]
    assert CLUSTER_EXTRA == f"pip install '{DISTRIBUTION}[cluster]'"


def test_the_readme_install_lines_name_the_distribution():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Install", 1)[1].split("\n\n", 2)[1]  # the indented commands
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert f"pipx install {DISTRIBUTION}" in commands, commands
    assert f"pip install '{DISTRIBUTION}[cluster]'" in commands, commands


@pytest.mark.parametrize("path", SHOWN, ids=lambda p: p.name)
def test_every_install_command_shown_names_ours(path):
    """Any `pip install rldoctor...` in the README or the docs: never the index's `rldoctor`."""
    text = path.read_text(encoding="utf-8")
    for name, _extra in _installs(text):
        if name.lower().startswith("rldoctor"):
            assert name == DISTRIBUTION, f"{path.name}: pip install {name}"
    assert "rldoctor[cluster]" not in text.replace(f"{DISTRIBUTION}[cluster]", "")


def test_the_refusals_name_the_extra_of_ours():
    for folder in ("doctor", "checks"):
        for source in (ROOT / folder).rglob("*.py"):
            text = source.read_text(encoding="utf-8")
            assert "'rldoctor[cluster]'" not in text, source
            assert not re.search(r"pipx? install rldoctor\b(?!-)", text), source


def test_version_names_the_installed_package():
    first = version_text("0.1.0").splitlines()[0]
    from importlib import metadata

    installed = metadata.version(DISTRIBUTION)  # `make install` installs this checkout under it
    assert first == f"rldoctor 0.1.0 (package {DISTRIBUTION} {installed})"
