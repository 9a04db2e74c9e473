"""A check that Ray refused as a driver (version mismatch), judged from snapshot edits.

What the live run produces is tested on a real cluster in tests/test_e2e_versions.py;
here: RLD102's message and fix from the versions the head recorded, and the checks whose
sections need a driver skipped with that reason while the rest run.
"""

from __future__ import annotations

import copy
import json

from conftest import FIXTURES
from rldoctor.checks.cluster import version_mismatch
from rldoctor.collect.driverless import NEED_A_DRIVER, REFUSED
from rldoctor.collect.versions import driver_only
from rldoctor.diagnose import diagnose
from rldoctor.model import Severity
from rldoctor.snapshot import Snapshot

MESSAGE = ("Version mismatch: The cluster was started with:\n    Ray: 2.59.0\n    Python: 3.11.7\n"
           "This process on node 127.0.0.10 was started with:\n    Ray: 2.60.0\n"
           "    Python: 3.11.7\n")
HERE = {"ray": "2.60.0", "python": "3.11.7", "rllib": "2.60.0", "torch": "2.13.0",
        "gymnasium": "1.2.2"}


def refused(cluster: dict | None = None, driver: dict | None = None) -> dict:
    """The versions section of a driverless run: this machine's, and the cluster's record."""
    section = driver_only(MESSAGE)
    section["driver"] = dict(driver or HERE)
    if cluster is not None:
        section["cluster"] = cluster
        section["cluster_source"] = "recorded by the head in the GCS when it started"
    return section


def run(versions: dict):
    return list(version_mismatch(Snapshot({"versions": versions}), {}))


def test_ray_message_gives_the_cluster_versions_when_the_gcs_record_is_missing():
    section = driver_only(MESSAGE)
    assert section["cluster"] == {"ray": "2.59.0", "python": "3.11.7"}
    assert section["connect_error"].startswith("Version mismatch: The cluster was started with:")


def test_rld102_names_both_versions_and_what_to_install_here():
    [finding] = run(refused({"ray": "2.59.0", "python": "3.11.7"}))
    assert finding.severity is Severity.FAIL and finding.subject == "cluster"
    assert ("the cluster was started with Ray 2.59.0 and Python 3.11.7, this machine runs "
            "Ray 2.60.0 and Python 3.11.7 (Ray differs)") in finding.message
    assert finding.evidence["differs"] == ["ray"]
    assert finding.evidence["cluster_source"] == "recorded by the head in the GCS when it started"
    assert finding.fix.startswith('Here: `pip install "ray[rllib]==2.59.0"`')


def test_rld102_python_only_mismatch_asks_for_that_python():
    [finding] = run(refused({"ray": "2.60.0", "python": "3.11.9"}))
    assert "(Python differs)" in finding.message and finding.evidence["differs"] == ["python"]
    assert finding.fix.startswith("Here: a Python 3.11.9 environment")
    [finding] = run(refused({"ray": "2.59.0", "python": "3.10.14"}))
    assert "(Ray and Python differ)" in finding.message


def test_without_a_driver_the_probe_sections_are_skipped_with_the_reason_and_the_rest_run():
    data = copy.deepcopy(json.loads((FIXTURES / "healthy-3node.json").read_text()))
    data["versions"] = refused({"ray": "2.59.0", "python": "3.11.7"})
    for section, what in NEED_A_DRIVER.items():
        data.pop(section, None)
        data["collectors"][section] = {"status": "unavailable", "reason": f"{what} {REFUSED}"}
    report = diagnose(Snapshot(data), {"kind": "file"})
    status = {r.code: r for r in report.results}
    for code in ("RLD201", "RLD202", "RLD303", "RLD304"):
        assert status[code].status == "skipped"
        assert "need rldoctor to join as a driver" in status[code].detail
        assert "Ray or Python version differs from the cluster's (RLD102)" in status[code].detail
    for code in ("RLD101", "RLD103", "RLD301", "RLD401", "RLD402", "RLD403"):
        assert status[code].status == "ok", status[code]
    assert [f.code for f in report.findings] == ["RLD102"]
