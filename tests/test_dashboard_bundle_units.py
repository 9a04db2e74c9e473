"""The bundle and the watch through the dashboard address, without a cluster.

What the job does inside the cluster before anything leaves it (rldoctor.job.bundle:
redact, fit to --max-size, frame) on edited items, and the client side
(rldoctor.dashboard.bundle, rldoctor.watch.dashboard_rounds) against the dashboard stand-in
of test_dashboard_units: a job that answers with the frames a real one prints.
"""

from __future__ import annotations

import gzip
import io
import json
import signal
import subprocess
import tarfile
import time
from pathlib import Path

from conftest import RLDOCTOR, run_rldoctor
from localcluster import free_ports
from test_dashboard_units import _env, stand_in  # noqa: F401 (stand_in: the fixture)
from test_watch_cli import scrape

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "healthy-3node.json"
ENV_SECRET = "envsecret-Qw3Er5Ty7Ui9"
MASK = "***redacted***"


class FakeGatherer:
    """What rldoctor.cluster.gather.Gatherer holds after a run: items and secret sources."""

    def __init__(self, items, secret_sources=()):
        self.items = items
        self.secret_sources = list(secret_sources)
        self.ran = True


def _items(node_id: str, log_bytes: int = 3000):
    from rldoctor.bundle.manifest import Item

    log = b"".join(b"line %06d SIM_PASSWORD=%s ok\n" % (i, ENV_SECRET.encode())
                   for i in range(log_bytes // 40))
    return [
        Item("log", "raylet.out", node_id=node_id, file=f"nodes/{node_id}/logs/raylet.out",
             payload=log, details={"lines": 1000, "truncated_bytes": 0}),
        Item("stack", "stack of pid 42 (hung)", node_id=node_id,
             file=f"nodes/{node_id}/stacks/42.txt", payload=b"Thread 42\n    step (my_env.py:7)\n",
             details={"pid": 42, "label": "hung", "where": "MyEnv.step (my_env.py:7)"}),
        Item("host", "host facts", node_id=node_id, file=f"nodes/{node_id}/host.json",
             payload={"node_id": node_id, "details": {"kernel": "Linux 6"}}),
        Item("log", "gcs_server.out", node_id=node_id).fail("no such log on the node"),
    ]


def _sent(gatherer, doc, max_bytes, capsys):
    from rldoctor.job import bundle as job_bundle
    from rldoctor.job import unframe

    job_bundle.send_items(gatherer, doc, max_bytes)
    return unframe(capsys.readouterr().out, job_bundle.ITEMS_BEGIN, job_bundle.ITEMS_END)


def test_items_are_redacted_in_the_cluster_before_they_are_printed(capsys):
    doc = json.loads(FIXTURE.read_text())
    node = doc["nodes"][0]["node_id"]
    sources = [{"runtime_env": {"env_vars": {"SIM_PASSWORD": ENV_SECRET}}}]
    sent = _sent(FakeGatherer(_items(node), sources), doc, 50 * 10**6, capsys)
    assert sent is not None and sent["ran"] is True
    assert ENV_SECRET not in json.dumps(sent)
    from rldoctor.dashboard.bundle import decode_item

    items = [decode_item(e) for e in sent["items"]]
    assert [i.name for i in items] == ["raylet.out", "stack of pid 42 (hung)", "host facts",
                                       "gcs_server.out"]
    assert MASK.encode() in items[0].payload and items[0].payload.count(b"\n") == 75
    assert items[1].payload.startswith(b"Thread 42") and items[1].details["where"].startswith("MyEnv")
    assert items[2].payload["details"]["kernel"] == "Linux 6"
    assert items[3].status == "failed" and items[3].error == "no such log on the node"
    assert sent["redacted"]["known_values"] == 75


def test_items_over_max_size_cut_the_largest_log_from_the_front(capsys):
    doc = json.loads(FIXTURE.read_text())
    node = doc["nodes"][0]["node_id"]
    sent = _sent(FakeGatherer(_items(node, log_bytes=400_000)), doc, 150_000, capsys)
    log = sent["items"][0]
    assert log["details"]["cut_to_fit_bytes"] > 200_000
    assert log["details"]["truncated_bytes"] == log["details"]["cut_to_fit_bytes"]
    from rldoctor.dashboard.bundle import decode_item

    payload = decode_item(log).payload
    assert len(payload) < 150_000 and payload.endswith(b" ok\n")
    assert b"line 009999 " in payload and b"line 000000 " not in payload  # the tail is kept


def _frames(node_id: str) -> str:
    from rldoctor.job import bundle as job_bundle
    from rldoctor.job import frame

    doc = json.loads(FIXTURE.read_text())
    items = {"ran": True, "redacted": {"known_values": 3},
             "items": [job_bundle.encode_item(i) for i in _items(node_id)]}
    return ("Running entrypoint for job rldoctor-x\n(raylet) noise\n" + frame(doc) + "\n"
            + frame(items, job_bundle.ITEMS_BEGIN, job_bundle.ITEMS_END) + "\n")


def test_bundle_through_a_dashboard_reads_the_items_then_stops_and_deletes_the_job(
        tmp_path, stand_in):  # noqa: F811
    node = json.loads(FIXTURE.read_text())["nodes"][0]["node_id"]
    server = stand_in(job_status="RUNNING", job_logs=_frames(node))
    path = tmp_path / "b.tar.gz"
    result = run_rldoctor("collect", "--bundle", str(path), "--address", server.url,
                          env=_env(tmp_path))
    assert result.code == 0, result
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(path.read_bytes()))) as tar:
        files = {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar if m.isfile()}
    manifest = json.loads(files["manifest.json"])
    by_name = {i["name"]: i for i in manifest["items"]}
    assert by_name["raylet.out"]["status"] == "ok" and by_name["host facts"]["status"] == "ok"
    assert files[f"nodes/{node}/stacks/42.txt"].startswith(b"Thread 42")
    assert by_name["gcs_server.out"]["error"] == "no such log on the node"
    assert manifest["redacted"]["known_values"] >= 3  # the job's count, carried over
    assert "logs, stacks and host facts" not in by_name
    # progress, item by item, naming the node as the report does (rldoctor.words.node_label)
    assert f"node {node[:12]} (127.0.0.10): raylet.out ok" in result.stderr
    calls = [(m, p) for m, p, *_ in server.requests]
    posted = next(json.loads(b) for m, p, _, b in server.requests if m == "POST" and p == "/api/jobs/")
    assert "--bundle-max-bytes 50000000" in posted["entrypoint"]
    sub = posted["submission_id"]
    assert calls.index(("POST", f"/api/jobs/{sub}/stop")) < calls.index(("DELETE", f"/api/jobs/{sub}"))
    assert not any(m == "GET" and p == f"/api/jobs/{sub}/logs" for m, p in
                   calls[calls.index(("POST", f"/api/jobs/{sub}/stop")):])


def test_bundle_job_failing_is_one_line_and_no_file(tmp_path, stand_in):  # noqa: F811
    server = stand_in(job_status="FAILED")
    path = tmp_path / "b.tar.gz"
    result = run_rldoctor("collect", "--bundle", str(path), "--address", server.url,
                          env=_env(tmp_path))
    errors = [l for l in result.stderr.splitlines() if not l.startswith("rldoctor: bundle: ")]
    assert result.code == 3 and len(errors) == 1 and "Traceback" not in result.stderr, result
    assert "RuntimeError: boom on the head" in errors[0] and not path.exists()
    assert any(m == "DELETE" for m, *_ in server.requests)


def test_watch_through_a_dashboard_logs_a_failed_round_and_sigterm_deletes_the_job(
        tmp_path, stand_in):  # noqa: F811
    server = stand_in(job_status="PENDING")  # a busy cluster: each round's job never starts
    port = free_ports(1)[0]
    log = tmp_path / "watch.jsonl"
    proc = subprocess.Popen([RLDOCTOR, "watch", "--address", server.url, "--interval", "1",
                             "--timeout", "1", "--metrics-port", str(port), "--log", str(log)],
                            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (log.exists() and log.read_text().strip()):
            time.sleep(0.2)
        events = [json.loads(line) for line in log.read_text().splitlines()]
        assert events[0]["event"] == "round_failed" and "PENDING" in events[0]["reason"], events
        assert "rldoctor_up 0.0" in scrape(port)
        deadline = time.monotonic() + 10  # the next round's job is submitted: stop it mid-round
        while time.monotonic() < deadline and sum(
                m == "POST" and p == "/api/jobs/" for m, p, *_ in server.requests) < 2:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=40)
        assert proc.returncode == 0 and "Traceback" not in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    subs = [json.loads(b)["submission_id"] for m, p, _, b in server.requests
            if m == "POST" and p == "/api/jobs/"]
    deleted = {p for m, p, *_ in server.requests if m == "DELETE"}
    assert len(subs) >= 2 and all(f"/api/jobs/{s}" in deleted for s in subs), (subs, deleted)


def test_the_jobs_driver_masks_a_copy_of_an_env_vars_value_elsewhere_in_the_snapshot():
    """The dashboard path's job redacts its snapshot before printing it; an env_vars value it
    masks in a runtime_env must also be masked where it appears again (a driver's command line
    in the jobs section), since the client can no longer learn it."""
    from rldoctor.job.main import redacted_text

    secret = "crashsecret-7Tq2Lp9Wd4Zs"
    doc = {"actors": {"actors": [{"class_name": "Simulator",
                                  "runtime_env": {"env_vars": {"SIM_PASSWORD": secret}}}]},
           "jobs": {"jobs": [{"job_id": "01000000", "type": "DRIVER",
                              "entrypoint": f"python my_env.py 127.0.0.10:6380 {secret} abc"}]}}
    text = redacted_text(doc)
    assert secret not in text
    assert "python my_env.py 127.0.0.10:6380" in text


def test_the_jobs_driver_masks_what_the_bundles_gatherer_read_in_the_snapshot_too():
    """The actors' runtime_envs the bundle's gatherer read (its secret sources) are not in the
    snapshot; their env_vars values are masked in the snapshot's text all the same."""
    from rldoctor.job.main import redacted_text

    secret = "crashsecret-3Hn8Vb1Qe6Ry"
    sources = [[{"runtime_env": {"env_vars": {"SIM_PASSWORD": secret}}}]]
    doc = {"jobs": {"jobs": [{"entrypoint": f"python my_env.py {secret}"}]}}
    assert secret in redacted_text(doc)  # nothing in the snapshot says it is a secret...
    assert secret not in redacted_text(doc, sources)  # ...what the gatherer read does
