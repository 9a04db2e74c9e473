"""RLD701 and RLD702 on the recorded auth-off cluster (dashboard on 0.0.0.0) and edits of it,
and the probe's socket-table reading on this machine's own /proc."""

from __future__ import annotations

import copy
import json
import socket

import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor.checks._endpoints import kind_of, reach
from rldoctor.checks.security.exposure import auth_disabled, exposed_endpoint
from rldoctor.node import fact_listening
from rldoctor.node import processes
from rldoctor.model import Note, Severity
from rldoctor.snapshot import Snapshot

PATH = FIXTURES / "auth-off-exposed.json"
SNAP = json.loads(PATH.read_text())
HEAD = next(n for n in SNAP["nodes"] if n["is_head"])
WORKER = next(n for n in SNAP["nodes"] if not n["is_head"])
DASHBOARD_PORT = int(SNAP["cluster"]["dashboard_url"].rsplit(":", 1)[1])
GCS_PORT = int(SNAP["cluster"]["gcs_address"].rsplit(":", 1)[1])


def run(check, data):
    out = list(check(Snapshot(data), dict(check.params)))
    return [f for f in out if not isinstance(f, Note)], [n for n in out if isinstance(n, Note)]


def by_subject(findings):
    return {f.subject: f for f in findings}


def edited(token=False, bind=None, host_addresses=None, tls=None) -> dict:
    data = copy.deepcopy(SNAP)
    if token:
        data["cluster"]["client_auth"]["cluster"] = data["cluster"]["client_auth"]["mode"] = "token"
        data["cluster"]["auth_mode"] = "token"
    for host in data["hosts"].values():
        table = host["listening"]
        if host_addresses is not None:
            table["host_addresses"] = host_addresses
        if tls is not None:
            table["tls"] = tls
        for sock in table["sockets"]:
            if bind:
                sock["address"] = bind(sock)
    return data


def test_recorded_auth_off_cluster_fails_both_and_names_node_port_and_process():
    [finding], _ = run(auth_disabled, SNAP)
    assert finding.severity is Severity.FAIL and finding.subject == "cluster"
    how = " ".join(finding.evidence["how_known"])
    assert "answered rldoctor's call without a token" in how and '"disabled"' in how
    assert f"dashboard 0.0.0.0:{DASHBOARD_PORT}" in finding.message
    assert "RAY_AUTH_MODE=token" in finding.fix and "authOptions.mode: token" in finding.fix
    assert "RLD105" in finding.fix and "refused" in finding.fix

    found = by_subject(run(exposed_endpoint, SNAP)[0])
    head, worker = found[f"node:{HEAD['node_id']}"], found[f"node:{WORKER['node_id']}"]
    assert head.severity is Severity.FAIL and worker.severity is Severity.FAIL
    assert f"dashboard 0.0.0.0:{DASHBOARD_PORT} (python dashboard.py" in head.message
    assert f"GCS [::]:{GCS_PORT} (gcs_server" in head.message
    assert "ShadowRay" in head.message and "--dashboard-host=127.0.0.1" in head.fix
    kinds = {e["kind"]: e for e in head.evidence["endpoints"]}
    assert kinds["dashboard"]["severity"] == "fail" and kinds["metrics_export"]["severity"] == "warn"
    assert kinds["node_manager"]["port"] == HEAD["ports"]["node_manager"]
    # The head's GCS and dashboard are never put on the worker node, which shares this machine.
    named = {e["kind"] for e in worker.evidence["endpoints"]}
    assert not named & {"dashboard", "gcs", "client_server"}
    own = [e for e in worker.evidence["endpoints"] if e["kind"] == "user"]
    assert [(e["address"], e["process"], e["severity"]) for e in own] == [
        ("0.0.0.0", "ray::OwnServer", "info")]


def test_everything_on_loopback_warns_once_and_exposes_nothing():
    data = edited(bind=lambda s: "::1" if ":" in s["address"] else "127.0.0.1")
    [finding], _ = run(auth_disabled, data)
    assert finding.severity is Severity.WARN and "loopback only" in finding.message
    assert finding.evidence["beyond_loopback_count"] == 0
    assert run(exposed_endpoint, data)[0] == []


def test_a_private_node_address_is_beyond_loopback_but_not_exposed():
    data = edited(bind=lambda s: "10.0.0.5" if s["address"] in ("::", "0.0.0.0") else s["address"])
    [finding], _ = run(auth_disabled, data)
    assert finding.severity is Severity.FAIL and "10.0.0.5" in finding.message
    assert run(exposed_endpoint, data)[0] == []


def test_token_on_lowers_the_dashboard_to_info_and_leaves_rays_defaults_unreported():
    data = edited(token=True)
    assert run(auth_disabled, data)[0] == []
    findings, notes = run(exposed_endpoint, data)
    [head] = findings
    assert head.subject == f"node:{HEAD['node_id']}" and head.severity is Severity.INFO
    assert [e["kind"] for e in head.evidence["endpoints"]] == ["dashboard"]
    assert "token authentication guards it" in head.message and "TLS" in head.fix
    [quiet] = [n for n in notes if n.subject == "cluster"]
    assert "GCS" in quiet.message and "are not reported" in quiet.message
    assert any(f"[::]:{GCS_PORT} GCS" in p for p in quiet.evidence["ports"][HEAD["node_id"]])


def test_token_on_a_host_with_a_public_address_warns_and_tls_softens_it():
    data = edited(token=True, host_addresses=["127.0.0.1", "35.1.2.3"])
    found = by_subject(run(exposed_endpoint, data)[0])
    head = found[f"node:{HEAD['node_id']}"]
    assert head.severity is Severity.WARN and "public 35.1.2.3 among them" in head.message
    assert "clear text" in head.message and "RAY_USE_TLS=1" in head.fix
    assert {e["reach"] for e in head.evidence["endpoints"]} == {"public"}
    with_tls = by_subject(run(exposed_endpoint, edited(
        token=True, host_addresses=["35.1.2.3"], tls=True))[0])[f"node:{HEAD['node_id']}"]
    # Still warn: the metrics ports need no token whatever TLS does; the rest drops to info.
    levels = {e["kind"]: e["severity"] for e in with_tls.evidence["endpoints"]}
    assert levels["gcs"] == "info" and levels["metrics_export"] == "warn"


def test_token_on_an_explicit_public_bind_warns():
    # (Documentation ranges such as 203.0.113.0/24 are not global addresses: use a real one.)
    data = edited(token=True, bind=lambda s: "8.8.8.8" if s["role"] == "dashboard" else s["address"])
    head = by_subject(run(exposed_endpoint, data)[0])[f"node:{HEAD['node_id']}"]
    assert head.severity is Severity.WARN and f"dashboard 8.8.8.8:{DASHBOARD_PORT}" in head.message


def test_unknown_auth_is_judged_like_token_and_701_stays_silent():
    data = copy.deepcopy(SNAP)
    data["cluster"]["client_auth"]["cluster"] = "unknown"
    data["cluster"].update(auth_mode="unknown", state_api=False)
    assert run(auth_disabled, data)[0] == []
    assert {f.severity for f in run(exposed_endpoint, data)[0]} == {Severity.INFO}


def test_without_socket_tables_701_falls_back_on_node_addresses():
    data = copy.deepcopy(SNAP)
    for host in data["hosts"].values():
        host.pop("listening")
    [finding], _ = run(auth_disabled, data)
    assert finding.severity is Severity.WARN and "not read" in finding.message
    findings, notes = run(exposed_endpoint, data)
    assert findings == [] and "no socket tables" in notes[0].message
    for node in data["nodes"]:
        node["ip"] = node["ip"].replace("127.0.0.", "10.0.0.")
    [finding], _ = run(auth_disabled, data)
    assert finding.severity is Severity.FAIL and "10.0.0.10" in finding.message


def test_a_partial_socket_table_is_noted():
    data = copy.deepcopy(SNAP)
    data["hosts"][WORKER["node_id"]]["listening"].update(status="partial", why="2 process(es) hid")
    _, notes = run(exposed_endpoint, data)
    assert any("socket table partial: 2 process(es) hid" in n.message for n in notes)


def test_reach_of_addresses():
    private_host, public_host = ["127.0.0.1", "10.0.0.5"], ["10.0.0.5", "35.1.2.3"]
    assert reach("0.0.0.0", private_host) == "all" and reach("::", private_host) == "all"
    assert reach("0.0.0.0", public_host) == "public"
    assert reach("127.0.0.12", []) == "loopback" and reach("::1", []) == "loopback"
    assert reach("::ffff:127.0.0.1", []) == "loopback"
    assert reach("10.1.2.3", []) == "private" and reach("fd00::2", []) == "private"
    assert reach("100.64.0.9", []) == "private" and reach("35.1.2.3", []) == "public"


def test_ports_are_named_from_the_node_record_and_the_worker_range():
    node = {"ports": {"node_manager": 5000, "object_manager": 5001}, "metrics_export_port": 5002}
    cluster = {"gcs_address": "10.0.0.1:6379", "dashboard_url": "10.0.0.1:8265"}
    assert kind_of({"role": "raylet", "port": 5001}, node, cluster, None) == "object_manager"
    assert kind_of({"role": "dashboard_agent", "port": 5002}, node, cluster, None) == "metrics_export"
    assert kind_of({"role": "raylet", "port": 7}, node, cluster, None) == "ray_other"
    assert kind_of({"role": "gcs", "port": 6379}, node, cluster, None) == "gcs"
    assert kind_of({"role": "dashboard", "port": 44227}, node, cluster, None) == "dashboard_metrics"
    assert kind_of({"role": "worker", "port": 10005}, node, cluster, [10002, 19999]) == "worker"
    assert kind_of({"role": "worker", "port": 8000}, node, cluster, [10002, 19999]) == "user"
    assert kind_of({"role": "worker_child", "port": 29500}, node, cluster, None) == "user"


# -- the probe's reading of /proc -----------------------------------------------------------

def test_socket_table_reading_finds_a_real_listening_socket():
    with socket.socket() as v4, socket.socket(socket.AF_INET6) as v6:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        v6.bind(("::", 0))
        v6.listen()
        table = set(fact_listening._tcp_listeners().values())
        assert ("127.0.0.1", v4.getsockname()[1]) in table
        assert ("::", v6.getsockname()[1]) in table


def test_probe_outside_a_raylet_says_so():
    table = fact_listening.listening_here()
    assert table["status"] == "unavailable" and "raylet" in table["why"]
    assert "127.0.0.1" in table["host_addresses"]


@pytest.mark.parametrize("args,role,name", [
    (["/x/ray/core/src/ray/gcs/gcs_server", "--gcs_server_port=1"], "gcs", "gcs_server"),
    (["/v/bin/python", "/v/ray/dashboard/dashboard.py", "--host=0.0.0.0"], "dashboard",
     "python dashboard.py"),
    (["/v/bin/python", "-m", "ray.util.client.server", "--port=1"], "client_server",
     "python -m ray.util.client.server"),
    (["ray::DashboardAgent" + " " * 40], "dashboard_agent", "ray::DashboardAgent"),
    (["ray-dashboard-JobHead-0 (/v/bin/python -B -c ...)"], "dashboard", "ray-dashboard-JobHead-0"),
    (["/v/bin/python", "-u", "/v/ray/autoscaler/_private/monitor.py"], "autoscaler",
     "python monitor.py"),
    (["/v/bin/python", "-u", "/v/ray/_private/log_monitor.py"], "log_monitor", "python log_monitor.py"),
    (["ray::PPO.train"], "worker", "ray::PPO.train"),
    (["/usr/bin/nginx", "-g", "daemon off;"], None, "nginx"),
])
def test_ray_processes_are_told_apart_by_their_command_line(args, role, name):
    assert processes.ray_role(args) == role and processes.process_name(args) == name


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_reports_on_the_fixture_say_it_all_and_mask_nothing_of_it(fmt):
    result = run_rldoctor("check", "--from", str(PATH), "--only", "RLD701,RLD702", "--format", fmt)
    assert result.code == 1, result
    assert "redacted" not in result.stdout, result.stdout
    assert f"0.0.0.0:{DASHBOARD_PORT}" in result.stdout and "RLD701" in result.stdout


@pytest.mark.parametrize("version", ["2.40.0", "2.51.1"])
def test_a_ray_older_than_token_auth_is_told_to_keep_ports_private_not_to_turn_tokens_on(version):
    data = copy.deepcopy(SNAP)
    data["cluster"]["ray_version"] = version
    [finding], _ = run(auth_disabled, data)
    assert finding.severity is Severity.FAIL
    assert f"Ray {version}, which has no token authentication" in finding.fix
    assert "ray get-auth-token" not in finding.fix and "private" in finding.fix
    exposed, _ = run(exposed_endpoint, data)
    assert exposed and all(f"Ray {version} has no token authentication" in f.fix
                           and "Turn token authentication on first" not in f.fix for f in exposed)


def test_token_auth_fix_stays_for_252_and_newer():
    data = copy.deepcopy(SNAP)
    data["cluster"]["ray_version"] = "2.52.0"
    [finding], _ = run(auth_disabled, data)
    assert "ray get-auth-token --generate" in finding.fix


def test_rld702s_fix_is_its_tables_cases_joined_the_tokens_first_and_rld701s_one_case():
    """What a finding's fix says is what `explain` prints: RLD702's is the cases of its table its
    ports and node need (public address, no TLS), after the token's when the cluster has none,
    and RLD701's is one case of its own, by the cluster's Ray."""
    from rldoctor.engine.registry import fix_pattern

    public = edited(token=True, host_addresses=["127.0.0.1", "35.1.2.3"])
    old = copy.deepcopy(SNAP)
    old["cluster"]["ray_version"] = "2.40.0"
    cases = exposed_endpoint.fixes
    for data in (SNAP, old, public, edited(token=True, host_addresses=["35.1.2.3"], tls=True)):
        findings = run(exposed_endpoint, data)[0]
        assert findings and all(fix_pattern(cases).fullmatch(f.fix) for f in findings)
        for f in run(auth_disabled, data)[0]:
            assert f.fix in [t.format(old="2.40.0") for t in auth_disabled.fixes.values()]
    head = by_subject(run(exposed_endpoint, public)[0])[f"node:{HEAD['node_id']}"]
    tls, on_public = (next(t for t in cases.values() if t.startswith(words)) for words in
                      ("Token authentication does not encrypt", "A node on a public address"))
    assert head.fix.endswith(f"{on_public} {tls}")
    first = by_subject(run(exposed_endpoint, old)[0])[f"node:{HEAD['node_id']}"].fix
    assert first.startswith("Ray 2.40.0 has no token authentication: keep these ports private to "
                            "the cluster's nodes, and upgrade (RLD701 says how). Bind the dashboard")
