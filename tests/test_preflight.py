"""What `ray.init` would refuse, judged before calling it (rldoctor.cluster.connect.preflight).

The comparison is Ray's own (check_version_info): the Ray version exactly, Python to the
patch level unless RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL=minor. The live paths are tested
on real clusters: another Ray without a dashboard (tests/test_e2e_gcs_without_dashboard.py),
with one (tests/test_e2e_other_ray.py, tests/test_e2e_versions.py), and a machine that is
not a node (tests/test_e2e_dashboard_faults.py).
"""

from __future__ import annotations

import pytest

from rldoctor.cluster.connect import NotANode, VersionMismatch, _versions_differ

HERE = {"ray": "2.60.0", "python": "3.11.7"}


@pytest.mark.parametrize("there, level, differs", [
    ({"ray": "2.60.0", "python": "3.11.7"}, "patch", False),
    ({"ray": "2.55.0", "python": "3.11.7"}, "patch", True),
    ({"ray": "2.60.0", "python": "3.11.9"}, "patch", True),
    ({"ray": "2.60.0", "python": "3.11.9"}, "minor", False),
    ({"ray": "2.60.0", "python": "3.12.1"}, "minor", True),
    ({"ray": "2.60.0"}, "patch", False),  # no Python recorded: only Ray compared
])
def test_versions_compared_as_ray_compares_them(monkeypatch, there, level, differs):
    monkeypatch.setenv("RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL", level)
    assert _versions_differ(there, HERE) is differs


def test_the_one_line_names_both_versions_the_address_and_what_to_do():
    there = {"ray": "2.40.0", "python": "3.10.14"}
    for refusal in (VersionMismatch("x", cluster=there, here=HERE, address="10.0.0.5:6379"),
                    NotANode("x", cluster=there, here=HERE, address="10.0.0.5:6379")):
        line = refusal.one_line()
        assert "\n" not in line
        assert "10.0.0.5:6379" in line
        assert "the cluster runs Ray 2.40.0 with Python 3.10.14" in line
        assert "rldoctor runs Ray 2.60.0 with Python 3.11.7" in line
        assert "--address http://HOST:PORT" in line and "port-forward" in line
    assert "not one of the cluster's nodes" in NotANode("x", here=HERE).why()
    assert "Ray refuses a driver whose versions differ" in VersionMismatch(
        "x", cluster=there, here=HERE).why()
