"""Each code's lifecycle (ruff's model): `stable` or `preview`, declared on its `@check`, shown
by `rldoctor list` and `rldoctor explain CODE`. The newest codes (preflight's RLD901-RLD907) are
preview; a lifecycle outside the two is refused when the check is declared."""

from __future__ import annotations

import pytest

from rldoctor.commands.explain import explain
from rldoctor.commands.list import list_checks
from rldoctor.engine.registry import LIFECYCLES, check, load_registry

PREVIEW = {f"RLD90{i}" for i in range(1, 8)}


def test_every_code_declares_a_lifecycle_and_the_newest_are_preview():
    checks = load_registry().checks
    assert {c.lifecycle for c in checks} <= set(LIFECYCLES)
    assert {c.code for c in checks if c.lifecycle == "preview"} == PREVIEW
    assert next(c for c in checks if c.code == "RLD101").lifecycle == "stable"


def test_list_shows_each_codes_lifecycle():
    table, _ = list_checks()
    header, _, *rows = table.splitlines()
    assert header.split()[:6] == ["code", "name", "area", "origin", "lifecycle", "finds"]
    shown = {row.split()[0]: row.split()[4] for row in rows}
    assert {code for code, lifecycle in shown.items() if lifecycle == "preview"} == PREVIEW
    assert shown["RLD101"] == "stable" and shown["RLD801"] == "stable"


def test_explain_says_the_lifecycle_and_what_preview_means():
    preview = explain("RLD905").splitlines()
    assert preview[0] == "RLD905 env-contract (preflight, preview, from rldoctor)"
    assert f"Preview: {LIFECYCLES['preview']}." in preview
    stable = explain("RLD101").splitlines()
    assert stable[0] == "RLD101 node-dead (cluster, stable, from rldoctor)"
    assert not any(line.startswith("Preview:") for line in stable)


def test_a_lifecycle_outside_the_model_is_refused():
    with pytest.raises(ValueError, match="lifecycle 'beta'"):
        check("RLD999", "x-y", area="cluster", lifecycle="beta")
    assert check("RLD999", "x-y", area="cluster", lifecycle="preview")(lambda s, p: []).lifecycle == "preview"
