"""The incident bundle without a cluster: redactor, obfuscator, size cap, writer, reader.

The reader's refusals run through the real CLI (`rldoctor check --from`): one line on
stderr, exit 3, no traceback, nothing extracted.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import time

import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor.bundle import SCHEMA
from rldoctor.bundle.evidence import point_to_bundle
from rldoctor.bundle.obfuscate import Obfuscator, map_path
from rldoctor.bundle.reader import index
from rldoctor.cluster.stack_targets import stack_targets
from rldoctor.bundle.target import BundleFile
from rldoctor.bundle.writer import Member, cut_front, fit, tar_size
from rldoctor.cluster.stacks import frame_text, is_user_file, parse_py_spy, user_frames
from rldoctor.errors import Undiagnosable
from rldoctor.redact import MASK, Redactor, is_secret_key, redact

HEALTHY = FIXTURES / "healthy-3node.json"
WORKER_FAULTS = FIXTURES / "worker-faults.json"

# What `py-spy dump --pid PID --full-filenames` (py-spy 0.4.3) printed for a Ray actor whose
# method blocks in the user's env (recorded from a real local cluster).
PY_SPY_OUT = """\
Process 12610: ray::Runner.sample
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 12610 (idle): "MainThread"
    MyEnv.step (/tmp/s1/my_env.py:7)
    Runner.sample (/tmp/s1/my_env.py:13)
    _inject_tracing_into_class.<locals>.span_wrapper.<locals>._resume_span (/work/main/.venv/lib/python3.11/site-packages/ray/util/tracing/tracing_helper.py:487)
    FunctionActorManager._make_actor_method_executor.<locals>.actor_method_executor (/work/main/.venv/lib/python3.11/site-packages/ray/_private/function_manager.py:740)
    Worker.main_loop (/work/main/.venv/lib/python3.11/site-packages/ray/_private/worker.py:1069)
    <module> (/work/main/.venv/lib/python3.11/site-packages/ray/_private/workers/default_worker.py:323)
Thread 12666 (idle): "PythonGCThread"
    Condition.wait (/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py:327)
    Event.wait (/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py:629)
    PythonGCThread.run (/work/main/.venv/lib/python3.11/site-packages/ray/_private/gc_collect_manager.py:29)
    Thread._bootstrap_inner (/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py:1045)
    Thread._bootstrap (/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py:1002)
Thread 0x7F00AB (active+gil): "worker"
    helper (util.py)
"""


# -- stacks: parsing py-spy and naming the user's frame ------------------------------------------

def test_parse_py_spy_reads_threads_and_frames():
    threads = parse_py_spy(PY_SPY_OUT)
    assert [t["name"] for t in threads] == ["MainThread", "PythonGCThread", "worker"]
    main = threads[0]
    assert main["id"] == 12610 and main["active"] is False
    assert main["frames"][0] == {"function": "MyEnv.step", "file": "/tmp/s1/my_env.py", "line": 7}
    assert len(main["frames"]) == 6
    assert threads[2]["active"] is True and threads[2]["id"] == "0x7F00AB"
    assert threads[2]["frames"] == [{"function": "helper", "file": "util.py", "line": None}]


def test_user_frames_are_the_users_own_innermost_first():
    frames = user_frames(parse_py_spy(PY_SPY_OUT))
    assert [f["function"] for f in frames] == ["MyEnv.step", "Runner.sample"]
    assert frame_text(frames[0]) == "MyEnv.step (my_env.py:7)"
    assert frames[0]["thread"] == "MainThread"


@pytest.mark.parametrize("path, mine", [
    ("/home/me/proj/my_env.py", True),
    ("my_env.py", True),
    ("/tmp/ray/session_1/runtime_resources/working_dir_files/_ray_pkg_x/env.py", True),
    ("/venv/lib/python3.11/site-packages/ray/rllib/env/single_agent_env_runner.py", False),
    ("/usr/lib/python3/dist-packages/numpy/core/x.py", False),
    ("/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", False),
    ("<frozen importlib._bootstrap>", False),
    ("python/ray/_raylet.pyx", False),
    ("/src/ray/python/ray/rllib/algorithms/ppo/ppo.py", False),
])
def test_is_user_file(path, mine):
    assert is_user_file(path) is mine


def test_no_user_code_no_user_frames():
    text = PY_SPY_OUT.replace("/tmp/s1/my_env.py", "/v/lib/python3.11/site-packages/x.py")
    text = text.replace("(util.py)", "(/v/lib/python3.11/site-packages/u.py)")
    assert user_frames(parse_py_spy(text)) == []


def test_probe_stack_of_a_missing_pid_fails_with_a_reason():
    from rldoctor.node.py_spy import py_spy_dump

    reply = py_spy_dump(2**22 + 12345, 1.0)
    assert reply["status"] == "failed" and "no such process" in reply["error"]


def test_probe_stack_of_a_live_process_takes_milliseconds(tmp_path):
    from rldoctor.node.py_spy import py_spy_dump

    script = tmp_path / "my_env.py"
    script.write_text("import time\nclass MyEnv:\n    def step(self):\n        while True:\n"
                      "            time.sleep(0.05)\nMyEnv().step()\n")
    proc = subprocess.Popen([sys.executable, str(script)])
    try:
        for _ in range(50):  # until the child runs the script (not Python's start-up)
            reply = py_spy_dump(proc.pid, 2.0)
            frames = user_frames(parse_py_spy(reply.get("text", "")))
            if frames:
                break
            time.sleep(0.1)
        assert reply["status"] == "ok", reply
        assert frame_text(frames[0]) == "MyEnv.step (my_env.py:5)"
        assert reply["duration_s"] < 0.5, reply
    finally:
        proc.kill()
        proc.wait()


# -- the redactor -----------------------------------------------------------------------------

SECRET = "sk-live-4f9a8b7c6d5e"


def test_secret_looking_keys():
    for key in ("api_key", "WANDB_API_KEY", "password", "db_passwd", "AccessToken", "auth",
                "Authorization", "client_secret", "aws_secret_access_key", "credentials"):
        assert is_secret_key(key), key
    for key in ("auth_mode", "authentication_mode", "auth_token_in_use", "RAY_AUTH_TOKEN_PATH",
                "node_id", "monkey", "keyboard_layout", "secret_name", "ip", "filter_keys", "sort_keys",
                "KeyError", "AuthenticationError", "TokenException"):
        assert not is_secret_key(key), key


def test_an_exception_named_for_keys_keeps_its_message():
    # a traceback's last line is evidence: the missing key is what the on-call must read
    assert redact("KeyError: 'num_workers'") == "KeyError: 'num_workers'"
    assert redact(f"api_key: {SECRET}") == f"api_key: {MASK}"


def test_nested_data_is_masked_and_counted():
    r = Redactor()
    data = {
        "nodes": [{"node_id": "ab12" * 14, "ip": "10.0.0.1", "auth_mode": "token"}],
        "jobs": [{"runtime_env": {"env_vars": {"WANDB_API_KEY": SECRET, "DEBUG": "1", "N": 3}},
                  "serialized_runtime_env": json.dumps({"env_vars": {"HF_HOME": "/data/hf-cache-77"}}),
                  "metadata": {"deep": {"Password": "hunter2hunter2", "enabled": True}}}],
        "env": [{"name": "OPENAI_API_KEY", "value": "sk-other-123456"}],
    }
    out = r.data(data)
    text = json.dumps(out)
    for secret in (SECRET, "hunter2hunter2", "sk-other-123456", "/data/hf-cache-77"):
        assert secret not in text
    assert out["jobs"][0]["runtime_env"]["env_vars"] == {"WANDB_API_KEY": MASK, "DEBUG": MASK, "N": MASK}
    assert out["jobs"][0]["metadata"]["deep"]["enabled"] is True
    assert out["nodes"] == data["nodes"]  # what the checks read stays as it was
    assert r.counts["env_vars"] == 4 and r.counts["secret_keys"] == 2


LOG = f"""\
2026-12-01 21:21:09,453\tINFO runtime_env_agent.py:543 -- Creating runtime env: {{"env_vars": {{"MY_SERVICE_URL": "https://trainer:pw-{SECRET}@example.com/hook", "WANDB_API_KEY": "{SECRET}"}}}} with timeout 600 seconds.
ray start --head --port=6379 --password hunter2hunter2 --auth-mode token
connecting with api_key={SECRET} and token: q1w2e3r4t5y6 to {{'secret': 'abc123xyz'}}
curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig" https://bob:s3cr3t@db.internal:5432/x
aws AKIAIOSFODNN7EXAMPLE
- current keyed subscription keys: 0
[2026-12-01 21:20:13,001 I 13788 13788] (raylet) node_manager.cc:123: node 5fda6f42 alive, auth mode token
"""


def test_log_text_is_masked_but_stays_readable():
    r = Redactor()
    out = r.text(LOG)
    for secret in (SECRET, "hunter2hunter2", "q1w2e3r4t5y6", "abc123xyz", "eyJhbGciOiJIUzI1NiJ9",
                   "s3cr3t", "AKIAIOSFODNN7EXAMPLE"):
        assert secret not in out, secret
    assert "--auth-mode token" in out
    assert "subscription keys: 0" in out
    assert "node 5fda6f42 alive, auth mode token" in out
    assert "runtime_env_agent.py:543 -- Creating runtime env" in out
    assert r.counts["url_credentials"] == 2 and r.counts["env_vars"] >= 1


def test_values_learned_from_data_are_masked_in_free_text():
    r = Redactor()
    r.learn([{"runtime_env": {"env_vars": {"HUB_TOKEN": "hub_8Hd73kdLq0"}}}])
    assert r.text("worker printed hub_8Hd73kdLq0 at startup") == f"worker printed {MASK} at startup"
    r.learn({"env_vars": {"PYTHONPATH": "/opt/app", "MODE": "production"}})
    assert r.text("File /opt/app/my_env.py, mode production") == "File /opt/app/my_env.py, mode production"


def test_the_auth_token_is_masked_everywhere(monkeypatch, tmp_path):
    import rldoctor.redact as redaction

    token = "f3" * 24
    monkeypatch.setenv("RAY_AUTH_TOKEN", token)
    redaction._secrets.cache_clear()
    try:
        r = Redactor()
        assert token not in json.dumps(r.data({"x": [f"header {token}", {"y": token}]}))
        assert r.counts["auth_token"] == 2
    finally:
        monkeypatch.delenv("RAY_AUTH_TOKEN")
        redaction._secrets.cache_clear()


def test_tune_rows_keep_only_training_settings():
    r = Redactor()
    row = {"training_iteration": 3, "env_runners": {"episode_return_mean": 41.5},
           "hostname": "gpu-7", "config": {"lr": 0.001, "gamma": 0.99, "env": "CartPole-v1",
                                           "env_config": {"api_key": SECRET, "endpoint": "sim-7"},
                                           "model_config": {"fcnet_hiddens": [16, 16], "x": "y"},
                                           "callbacks": "my_pkg.Callbacks", "wandb": {"project": "p1"}}}
    out = r.tune_row(row)
    config = out["config"]
    assert config["lr"] == 0.001 and config["env"] == "CartPole-v1"
    assert config["model_config"]["fcnet_hiddens"] == [16, 16] and config["model_config"]["x"] == MASK
    assert config["env_config"] == {"api_key": MASK, "endpoint": MASK}
    assert config["callbacks"] == MASK and config["wandb"] == {"project": MASK}
    assert out["env_runners"] == row["env_runners"] and out["training_iteration"] == 3
    assert r.counts["tune_config"] == 5
    assert SECRET not in r.text(f"later a log line says {SECRET}")


def test_module_redact_still_masks_the_token_forms():
    assert redact("RAY_AUTH_TOKEN=abcdefgh12345678") == f"RAY_AUTH_TOKEN={MASK}"
    assert redact("authorization: Bearer abcdefgh12345678") == f"authorization: Bearer {MASK}"
    assert redact("status: OK, auth_mode: token") == "status: OK, auth_mode: token"


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_redactor_speed_on_ray_log_lines():
    """A log tail of 20,000 lines like Ray's (raylet, GCS, runtime env agent) in well under a second."""
    lines = [
        "[2026-12-01 21:20:13,115 I 13788 13788] (raylet) worker_pool.cc:533: Started worker process with pid 14012, the token is 3",
        "[2026-12-01 21:20:13,301 I 13788 13829] (raylet) local_object_manager.cc:245: :info_message:Spilled 12 MiB, 3 objects",
        "2026-12-01 21:21:09,453\tINFO runtime_env_agent.py:543 -- Creating runtime env: {\"env_vars\": {\"K\": \"v-123456789\"}}",
        "[2026-12-01 21:20:14,001 I 13736 13736] (gcs_server) gcs_actor_manager.cc:820: Actor created, actor_id=3f2c9a1b, job_id=01000000",
        "2026-12-01 21:20:17,723\tINFO head.py:290 -- Dashboard head http address: 127.0.0.10:47181",
    ] * 4000
    text = "\n".join(lines)
    r = Redactor()
    r.learn({"env_vars": {"A": "v-123456789", "B": "secret-value-xyz"}})
    started = time.perf_counter()
    out = r.text(text)
    seconds = time.perf_counter() - started
    assert "v-123456789" not in out
    assert seconds < 1.0, f"{len(text) / 1e6:.1f} MB in {seconds:.2f}s"


# -- obfuscation -------------------------------------------------------------------------------

def test_obfuscation_is_consistent_and_the_map_private(tmp_path):
    ob = Obfuscator(host_names={"gpu-node-7", "10.0.0.5"})
    a = ob.text("node 10.0.0.5 (gpu-node-7) lost 10.0.0.6; 127.0.0.1 and 0.0.0.0 stay; v2.60.0")
    b = ob.text('{"ip": "10.0.0.6", "peer": "10.0.0.5", "host": "gpu-node-7.local"}')
    assert "10.0.0.5" not in a + b and "10.0.0.6" not in a + b and "gpu-node-7" not in a + b
    fake5, fake6 = ob.ips["10.0.0.5"], ob.ips["10.0.0.6"]
    assert f"node {fake5} (host-1) lost {fake6}" in a and "127.0.0.1 and 0.0.0.0 stay; v2.60.0" in a
    assert f'"peer": "{fake5}"' in b
    target = tmp_path / "b.tar.gz"
    path = map_path(str(target))
    ob.write_map(path)
    assert os.path.dirname(path) == str(tmp_path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(open(path).read())["ips"][fake5] == "10.0.0.5"


# -- size cap and writer -----------------------------------------------------------------------

def test_logs_are_cut_from_the_front_to_fit_the_cap():
    members = [Member("snapshot.json", b"{}" * 2000),
               Member("nodes/a/logs/raylet.out", b"".join(b"line %d\n" % i for i in range(200_000)), "log"),
               Member("nodes/a/logs/small.log", b"tiny\n" * 10, "log")]
    fit(members, 600_000)
    assert tar_size(members) <= 600_000
    big = members[1].data
    assert big.startswith(b"[rldoctor: ") and big.endswith(b"line 199999\n")
    assert members[1].cut_bytes > 0 and members[2].data == b"tiny\n" * 10
    assert big.split(b"\n")[1].startswith(b"line ")  # cut at a line start
    with pytest.raises(Undiagnosable):
        fit([Member("snapshot.json", b"x" * 200_000)], 100_000)


def test_cut_front_keeps_whole_lines():
    data, cut = cut_front(b"aaaa\nbbbb\ncccc\n", 7)
    assert data.endswith(b"\ncccc\n") and cut == 10


def _write_bundle(path, manifest=None, snapshot=None, extra=()):
    members = [Member("manifest.json", json.dumps(manifest or {"schema": SCHEMA, "items": []}).encode()),
               Member("snapshot.json", (snapshot if snapshot is not None else HEALTHY.read_bytes()))]
    members += list(extra)
    BundleFile(str(path), force=True).write("rldoctor-bundle-test", members)
    return path


def test_a_written_bundle_reads_back_without_ray_or_torch(tmp_path):
    bundle = _write_bundle(tmp_path / "b.tar.gz")
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".partial")]
    code = ("import sys\nfrom rldoctor.snapshot import load\n"
            f"snap = load({str(bundle)!r})\n"
            "print(len(snap.nodes), snap.get('bundle')['top'], "
            "[m for m in ('ray', 'torch') if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["3", "rldoctor-bundle-test", "[]"], proc.stderr
    result = run_rldoctor("check", "--from", str(bundle), "--format", "json")
    assert result.code == 0, result
    expected = json.loads((FIXTURES / "healthy-3node.expected.json").read_text())["findings"]
    assert [f["code"] for f in result.findings()] == [f["code"] for f in expected]


def test_write_failure_leaves_nothing_under_the_final_name(tmp_path):
    """A disk that fills while writing (here RLIMIT_FSIZE): one line, exit 3, no file, no temp."""
    target = tmp_path / "full.tar.gz"
    code = f"""
import os, resource, sys
sys.path.insert(0, {str(FIXTURES.parent / 'tests')!r})
from rldoctor.bundle.target import BundleFile
from rldoctor.bundle.writer import Member
from rldoctor.errors import Undiagnosable
out = BundleFile({str(target)!r})
resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
try:
    out.write("top", [Member("snapshot.json", os.urandom(200000))])
except Undiagnosable as exc:
    print("REFUSED", exc)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "REFUSED" in proc.stdout and "cannot write" in proc.stdout, proc.stdout + proc.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("case", ["exists", "no-folder", "folder-is-a-file", "is-a-directory"])
def test_collect_bundle_refuses_bad_targets_before_touching_a_cluster(tmp_path, case):
    target = tmp_path / "b.tar.gz"
    if case == "exists":
        target.write_text("keep me")
    elif case == "no-folder":
        target = tmp_path / "nowhere" / "b.tar.gz"
    elif case == "folder-is-a-file":
        (tmp_path / "file").write_text("")
        target = tmp_path / "file" / "b.tar.gz"
    else:
        target.mkdir()
    # Nothing listens on port 1: a refusal that came after connecting would say so.
    result = run_rldoctor("collect", "--bundle", str(target), "--address", "127.0.0.1:1")
    assert result.code == 3, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--bundle" in lines[0] and "Traceback" not in result.stderr, result
    assert "cannot reach" not in lines[0]
    if case == "exists":
        assert target.read_text() == "keep me" and "--force" in lines[0]
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".partial")]


def test_collect_bundle_of_an_unreachable_cluster_writes_nothing(tmp_path):
    target = tmp_path / "b.tar.gz"
    result = run_rldoctor("collect", "--bundle", str(target), "--address", "127.0.0.1:1")
    assert result.code == 3 and "cannot reach" in result.stderr, result
    assert "Traceback" not in result.stderr and os.listdir(tmp_path) == []


def test_dashboard_auth_headers_are_rays_own():
    """The one private Ray call of the bundle: the header Ray's state API client sends."""
    code = ("from rldoctor.cluster.private import http_auth_headers\n"
            "print(http_auth_headers())")
    token = "ab" * 24
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(env, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token))
    assert f"'Bearer {token}'" in proc.stdout and "authorization" in proc.stdout.lower(), proc.stderr
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(env, RAY_AUTH_MODE="disabled"))
    assert proc.stdout.strip() == "{}", proc.stderr


def test_collect_needs_exactly_one_output():
    result = run_rldoctor("collect", "--output", "a.json", "--bundle", "b.tar.gz")
    assert result.code == 2 and "exactly one" in result.stderr


# -- the reader's refusals ---------------------------------------------------------------------

def _raw_tar(path, entries):
    """A gzip tar with entries (name, bytes | ('symlink', target))."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            if isinstance(data, tuple):
                info.type, info.linkname = tarfile.SYMTYPE, data[1]
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


MANIFEST = json.dumps({"schema": SCHEMA}).encode()


@pytest.mark.parametrize("case, words", [
    ("traversal", "outside the bundle"),
    ("absolute", "absolute path"),
    ("symlink", "is a link"),
    ("truncated", "corrupt or truncated"),
    ("corrupt", "corrupt or truncated"),
    ("foreign", "not an rldoctor bundle"),
    ("newer", "newer than this rldoctor"),
    ("no-snapshot", "no snapshot.json"),
    ("bad-snapshot", "newer than this rldoctor"),
    ("two-tops", "more than one top folder"),
])
def test_check_from_refuses_bad_bundles(tmp_path, case, words):
    path = tmp_path / "bad.tar.gz"
    snap = HEALTHY.read_bytes()
    if case == "traversal":
        _raw_tar(path, [("b/manifest.json", MANIFEST), ("b/snapshot.json", snap),
                        ("b/../../escaped.txt", b"boom")])
    elif case == "absolute":
        _raw_tar(path, [("/tmp/evil.json", b"{}"), ("b/manifest.json", MANIFEST)])
    elif case == "symlink":
        _raw_tar(path, [("b/manifest.json", MANIFEST), ("b/snapshot.json", ("symlink", "/etc/passwd"))])
    elif case == "truncated":
        _write_bundle(path, extra=[Member("nodes/a/logs/raylet.out", os.urandom(300_000), "log")])
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif case == "corrupt":
        path.write_bytes(gzip.compress(b"x" * 10)[:4] + os.urandom(2000))
    elif case == "foreign":
        _raw_tar(path, [("project/README.md", b"hello"), ("project/setup.py", b"")])
    elif case == "newer":
        _write_bundle(path, manifest={"schema": "rldoctor.bundle/v2"})
    elif case == "no-snapshot":
        _raw_tar(path, [("b/manifest.json", MANIFEST)])
    elif case == "bad-snapshot":
        _write_bundle(path, snapshot=json.dumps({"schema": "rldoctor.snapshot/v9"}).encode())
    elif case == "two-tops":
        _raw_tar(path, [("a/manifest.json", MANIFEST), ("b/snapshot.json", snap)])
    result = run_rldoctor("check", "--from", str(path))
    assert result.code == 3, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in result.stderr, result
    assert not (tmp_path.parent / "escaped.txt").exists() and sorted(os.listdir(tmp_path)) == ["bad.tar.gz"]


# -- pointing findings at the bundle; choosing whom to stack ----------------------------------

def test_findings_point_at_the_bundles_logs_and_stacks(tmp_path):
    from rldoctor.engine.pipeline import Diagnosis
    from rldoctor.snapshot import Snapshot

    doc = json.loads(WORKER_FAULTS.read_text())
    plain = Diagnosis.every_check().run(Snapshot(json.loads(WORKER_FAULTS.read_text())), {})
    crash = next(f for f in plain.findings if f.code == "RLD403")
    node_id = crash.evidence["node_id"]
    worker_id = crash.evidence["worker_ids"][0]
    items = [{"kind": "log", "node_id": node_id, "status": "ok", "file": f"nodes/{node_id}/logs/raylet.out"},
             {"kind": "log", "node_id": node_id, "status": "ok", "worker_id": worker_id,
              "file": f"nodes/{node_id}/logs/workers/worker-{worker_id}-01000000-99.err"},
             {"kind": "log", "node_id": node_id, "status": "failed", "file": None}]
    names = [f"top/{i['file']}" for i in items if i["file"]]
    snap = Snapshot(dict(doc, bundle=index({"items": items}, "top", names, "b.tar.gz")))
    report = Diagnosis.every_check().run(snap, {})
    assert [f.code for f in report.findings] == [f.code for f in plain.findings]
    pointed = next(f for f in report.findings if f.code == "RLD403").evidence["in_bundle"]
    assert pointed["bundle"] == "b.tar.gz"
    assert pointed["files"][0] == f"top/nodes/{node_id}/logs/workers/worker-{worker_id}-01000000-99.err"
    assert f"top/nodes/{node_id}/logs/raylet.out" in pointed["files"]
    point_to_bundle(plain, Snapshot(doc))  # no bundle: nothing added
    assert "in_bundle" not in crash.evidence


def test_stack_targets_rllib_first_then_long_calls_then_drivers():
    doc = {"actors": {"items": [
        {"actor_id": "a1", "class_name": "SingleAgentEnvRunner", "state": "ALIVE", "node_id": "n1",
         "pid": 11, "job_id": "01"},
        {"actor_id": "a2", "class_name": "PPO", "state": "ALIVE", "node_id": "n2", "pid": 12, "job_id": "01"},
        {"actor_id": "a3", "class_name": "SingleAgentEnvRunner", "state": "DEAD", "node_id": "n1",
         "pid": 13, "job_id": "01"},
        {"actor_id": "a4", "class_name": "MultiAgentEnvRunner", "state": "ALIVE", "node_id": "n1",
         "pid": 14, "job_id": "02"},
        {"actor_id": "a5", "class_name": "Cache", "state": "ALIVE", "node_id": "n1", "pid": 15, "job_id": "02"},
    ]}, "training": {"trainings": [{"name": "t", "runners": [{"node_id": "n1", "pid": 11, "state": "ALIVE"}],
                                    "learners": [{"node_id": "n3", "pid": 16, "state": "ALIVE"}]}]}}
    now = 1_000_000
    running = [{"node_id": "n1", "worker_pid": 15, "name": "Cache.get", "start_time_ms": now - 60_000},
               {"node_id": "n1", "worker_pid": 17, "name": "f", "start_time_ms": now - 1_000}]
    jobs = [{"job_id": "02", "status": "RUNNING", "driver": {"node_id": "n1", "pid": 99}},
            {"job_id": "01", "status": "RUNNING", "driver": {"node_id": "n2", "pid": 98}}]
    targets = stack_targets(doc, running, jobs, now)
    pids = [t["pid"] for t in targets]
    assert set(pids) == {11, 12, 14, 15, 16, 99}  # 13 dead, 17 young, 98's job has an algorithm actor
    assert pids.index(12) < pids.index(16) < pids.index(11) < pids.index(15)
    labels = {t["pid"]: t["label"] for t in targets}
    assert "env runner" in labels[11] and "of t" in labels[11]
    assert "running for 60s" in labels[15] and "driver of job 02" in labels[99]
    assert len(stack_targets(doc, running, jobs, now, limit=2)) == 2


def test_a_death_the_checks_call_recent_has_its_log_in_the_bundle():
    """One "recent death" window (rldoctor.words.RECENT_DEATH_H) for RLD402/RLD403 and for the
    worker logs the bundle gathers, both counted back from when the snapshot was taken, so a
    finding about a worker that died 2 h earlier points at a log the bundle holds."""
    from datetime import datetime

    from rldoctor.cluster import gather
    from rldoctor import words
    from rldoctor.checks._rllib import age_hours

    doc = json.loads(WORKER_FAULTS.read_text())
    taken_ms = datetime.fromisoformat(doc["created_at"]).timestamp() * 1000
    model = doc["workers"]["dead"][0]
    recent = dict(model, worker_id="r" * 56, end_time_ms=taken_ms - 2 * 3600 * 1000)
    old = dict(model, worker_id="o" * 56, end_time_ms=taken_ms - 25 * 3600 * 1000)
    doc["workers"]["dead"] = [recent, old]
    assert age_hours(recent["end_time_ms"], doc["created_at"]) <= words.RECENT_DEATH_H
    assert age_hours(old["end_time_ms"], doc["created_at"]) > words.RECENT_DEATH_H
    kept = [w["worker_id"] for ws in gather._recent_dead_workers(doc).values() for w in ws]
    assert kept == [recent["worker_id"]]
