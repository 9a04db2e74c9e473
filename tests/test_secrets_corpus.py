"""The secrets corpus (fixtures/secrets/corpus.json: every shape of secret issue 49 found, and
the well-known token shapes, each in the context it came in: a log line, a job's entrypoint, a
runtime_env env var, a config value) through every report format and the bundle: no canary
is left. And the other side: the words a user must read and type are never masked.

Each test first shows that the canaries do reach what it checks unredacted (the report as the
renderers draw it, the logs the bundle is made from), so it would fail if redaction broke.
"""

from __future__ import annotations

import json
import re
import shutil
import tarfile

import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor.redact import MASK, Redactor, redact

CORPUS = json.loads((FIXTURES / "secrets" / "corpus.json").read_text(encoding="utf-8"))
CANARIES = CORPUS["canaries"]
ENTRIES = CORPUS["entries"]
NOW = 1796285600.0
HEAD = "cf971fe174020a73009e8e2b94ac680bc5e3d7d85d8d4fbb42a10edb"
SESSION = FIXTURES / "sessions" / "env-raises"


def _text(entry) -> str:
    """The entry as the text it would be met in."""
    value = entry["value"]
    if isinstance(value, str):
        return value
    if entry["context"] == "env":
        return "Creating runtime env: " + json.dumps({"env_vars": value})
    return "config: " + json.dumps(value)


def _left(text: str) -> list[str]:
    return sorted(name for name, canary in CANARIES.items() if canary in text)


def test_every_entry_names_a_canary_and_every_canary_is_used():
    assert {e["canary"] for e in ENTRIES} == set(CANARIES)
    assert {e["context"] for e in ENTRIES} == {"log", "entrypoint", "env", "config"}
    for entry in ENTRIES:
        assert CANARIES[entry["canary"]] in json.dumps(entry["value"]), entry


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e['shape']}-{e['context']}")
def test_the_redactor_masks_each_entry_as_text_and_as_data(entry):
    canary = CANARIES[entry["canary"]]
    r = Redactor()
    masked = r.text(_text(entry))
    assert canary not in masked and MASK in masked, masked
    assert canary not in redact(_text(entry))
    if entry["context"] == "env":
        assert canary not in json.dumps(r.data({"runtime_env": {"env_vars": entry["value"]}}))
    if entry["context"] == "config":
        assert canary not in json.dumps(r.data(entry["value"]))
        assert canary not in json.dumps(r.tune_row({"config": entry["value"]}))


def test_every_shape_of_the_table_is_documented_and_counted():
    from rldoctor.redact import REDACTION_KINDS, SHAPES

    for shape in SHAPES:
        assert shape.what and shape.kind in REDACTION_KINDS, shape


# -- reports -------------------------------------------------------------------------------------

def _snapshot() -> dict:
    """A snapshot whose failed jobs carry the corpus: entrypoints, driver tracebacks that quote
    the log lines, runtime envs and Ray's message (which echoes the last log line)."""
    jobs = []
    for i, entry in enumerate(ENTRIES):
        line = _text(entry)
        env = {"env_vars": entry["value"]} if entry["context"] == "env" else {}
        jobs.append({
            "submission_id": f"raysubmit_corpus{i:02d}", "job_id": f"{i + 2:08x}", "type": "SUBMISSION",
            "entrypoint": line if entry["context"] == "entrypoint" else "python train.py",
            "status": "FAILED", "error_type": "JOB_ENTRYPOINT_COMMAND_ERROR", "driver_exit_code": 1,
            "message": f"Job entrypoint command failed with exit code 1, last available logs: {line}",
            "start_time": NOW - 200 + i, "end_time": NOW - 100 + i, "runtime_env": json.dumps(env),
            "driver": {"node_id": HEAD, "ip": "127.0.0.10", "pid": 5453 + i},
            "driver_log_tail": ["Traceback (most recent call last):",
                                '  File "/tmp/train.py", line 3, in <module>',
                                f"RuntimeError: {line}"] if entry["context"] == "log" else [],
            "worker_logs": []})
    return {"schema": "rldoctor.snapshot/v1", "created_at": "2026-12-03T08:20:00+00:00",
            "source": {"kind": "snapshot"}, "collectors": {},
            "jobs": {"window_s": 86400.0, "now": NOW, "cut": None, "jobs": jobs},
            "actors": {"items": []}, "workers": {"dead": []},
            "nodes": [{"node_id": HEAD, "ip": "127.0.0.10", "is_head": True, "alive": True,
                       "state": "ALIVE"}]}


@pytest.fixture(scope="module")
def corpus_snapshot(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "snapshot.json"
    path.write_text(json.dumps(_snapshot()), encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["table", "json", "markdown"])
def test_no_canary_in_any_report_format(corpus_snapshot, fmt, tmp_path):
    from rldoctor.engine.pipeline import Diagnosis
    from rldoctor.report.render import RENDERERS
    from rldoctor.snapshot import Snapshot

    doc = _snapshot()
    report = Diagnosis.from_options(read_mutes=False).run(Snapshot(doc), dict(doc["source"]))
    raw = RENDERERS["json"](report)  # what the JSON renderer draws, before the last redaction
    assert _left(raw) == sorted(CANARIES)  # every canary reaches the report unredacted ...
    shown = run_rldoctor("check", "--from", str(corpus_snapshot), "--format", fmt)
    assert shown.code == 1, shown
    assert _left(shown.stdout + shown.stderr) == []  # ... and none reaches the terminal
    assert "RLD405" in shown.stdout and MASK in shown.stdout
    written = tmp_path / f"report.{fmt}"
    assert run_rldoctor("check", "--from", str(corpus_snapshot), "--format", fmt,
                        "--output", str(written)).code == 1
    assert _left(written.read_text()) == []


# -- the bundle, and the snapshot, made from logs -----------------------------------------------

def _seed_logs(root) -> list[str]:
    """A copy of a real session's logs with the corpus appended to the logs the bundle takes
    (the head's GCS and raylet logs, the job's driver and supervisor logs, the .err of the
    job's worker that died); returns the markers of the lines, to find them (masked) in the
    bundle."""
    shutil.copytree(SESSION, root)
    logs = next(root.glob("node0/session_*/logs"))
    targets = [logs / "gcs_server.out", logs / "raylet.out", logs / "job-driver-pm-env-raises.log",
               logs / "jobs" / "supervisor-pm-env-raises.log",
               next(root.rglob("worker-*-02000000-*.err"))]
    markers = []
    for i, entry in enumerate(ENTRIES):
        marker = f"corpus-line-{i:02d}"
        markers.append(marker)
        with open(targets[i % len(targets)], "a", encoding="utf-8") as out:
            out.write(f"{marker} {_text(entry)}\n")
    return markers


def _members(bundle) -> dict[str, str]:
    with tarfile.open(bundle) as tar:
        return {m.name: tar.extractfile(m).read().decode("utf-8", "replace")
                for m in tar.getmembers() if m.isfile()}


@pytest.mark.parametrize("obfuscate", [False, True], ids=["plain", "obfuscated"])
def test_no_canary_in_the_bundle_from_logs(tmp_path, obfuscate):
    logs = tmp_path / "logs"
    markers = _seed_logs(logs)
    seeded = "\n".join(p.read_text(errors="replace") for p in logs.rglob("*") if p.is_file())
    assert _left(seeded) == sorted(CANARIES)
    bundle = tmp_path / "b.tar.gz"
    made = run_rldoctor("collect", "--bundle", str(bundle), "--from", str(logs),
                        *(["--obfuscate"] if obfuscate else []))
    assert made.code == 0, made
    assert _left(made.stdout + made.stderr) == []
    members = _members(bundle)
    everything = "\n".join(members.values()) + "\n".join(members)
    assert _left(everything) == [], {n: _left(t) for n, t in members.items() if _left(t)}
    assert all(m in everything for m in markers)  # the lines are there, their secrets masked
    manifest = json.loads(next(t for n, t in members.items() if n.endswith("/manifest.json")))
    counted = manifest["redacted"]
    assert counted["token_shapes"] > 0 and counted["authorization_headers"] > 0
    if obfuscate:  # internal hosts named in URLs are replaced too
        assert "db.acme.internal" not in everything and "models.acme.internal" not in everything


def test_no_canary_in_check_or_snapshot_from_logs(tmp_path):
    logs = tmp_path / "logs"
    _seed_logs(logs)
    for fmt in ("table", "json", "markdown"):
        shown = run_rldoctor("check", "--from", str(logs), "--format", fmt)
        assert shown.code in (0, 1), shown
        assert _left(shown.stdout + shown.stderr) == []
    snap = tmp_path / "s.json"
    assert run_rldoctor("collect", "--output", str(snap), "--from", str(logs)).code == 0
    assert _left(snap.read_text()) == []


# -- what must stay readable ---------------------------------------------------------------------

ORDINARY = [
    "its keys: code, subject, reason, expires",
    "unknown key 'foo' in an [[ignore]] entry; its keys: code, subject, reason, expires",
    "token count: 512 tokens per step",
    "subject node:cf971fe174020a73009e8e2b94ac680bc5e3d7d85d8d4fbb42a10edb",
    "node cf971fe174020a73009e8e2b94ac680bc5e3d7d85d8d4fbb42a10edb is ALIVE",
    "job 02000000 (raysubmit_Nf7KpUjW9xQ1ZbLs) failed",
    "actor eaa237389813202de978bb8902000000 died on 10.0.0.5",
    "--address 10.0.0.5:6379 and http://127.0.0.1:8265",
    "/etc/passwd:1: not valid TOML: Expected '=' after a key",
    "ray start --head --port 6379 -p 8080 --auth-mode token",
    "python -u train.py -p configs/ppo.yaml --stop-iters 20",
    "restored from /mnt/ckpt/PPO2026/Run7Trial/Checkpoint42 in 3 s",
    "the token is 3",
    "WANDB_API_KEY is not set: runs are not logged",
    "RAY_AUTH_TOKEN_PATH /home/ray/.ray/auth_token",
    "commit 4d71d33a9c1e2b3f4a5d6e7f8091a2b3c4d5e6f7",
    "scikit-learn (sk-learn) and gh_actions are fine",
    "Authorization: required",
    "keys: 3",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_words_are_never_masked(text):
    assert Redactor().text(text) == text
    assert redact(text) == text


def test_the_ignore_files_errors_keep_their_words_and_echo_no_foreign_file(tmp_path):
    config = tmp_path / "rldoctor.toml"
    config.write_text('[[ignore]]\ncode = "RLD101"\nfoo = "x"\n')
    ran = run_rldoctor("check", "--from", str(FIXTURES / "healthy-3node.json"), "--config", str(config))
    assert ran.code == 2 and "its keys: code, subject, reason, expires" in ran.stderr, ran
    foreign = tmp_path / "passwd"
    foreign.write_text("root:x:0:0:root:/root:/bin/bash\n")
    ran = run_rldoctor("check", "--from", str(FIXTURES / "healthy-3node.json"), "--config", str(foreign))
    assert ran.code == 2 and "not valid TOML" in ran.stderr, ran
    assert "root:x" not in ran.stderr and "/bin/bash" not in ran.stderr and MASK not in ran.stderr


# -- Markdown: quoted text is inert --------------------------------------------------------------

HOSTILE = ("</details><!-- [click](javascript:alert(1)) <img src=x onerror=alert(1)> "
           "```` `tick` | pipe \\<b>")


def test_markdown_renders_quoted_log_text_inert(tmp_path):
    doc = _snapshot()
    doc["jobs"]["jobs"] = doc["jobs"]["jobs"][:1]
    job = doc["jobs"]["jobs"][0]
    job["submission_id"] = "raysubmit_`x`</details>"
    job["message"] = f"Job entrypoint command failed with exit code 1, last available logs: {HOSTILE}"
    job["driver_log_tail"] = ["Traceback (most recent call last):", f"RuntimeError: {HOSTILE}"]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    md = run_rldoctor("check", "--from", str(path), "--format", "markdown").stdout
    outside, fence, fenced = [], None, 0
    for line in md.splitlines():  # the evidence's JSON blocks, read as CommonMark reads fences
        if fence is None and line.startswith("```"):
            fence = line[:len(line) - len(line.lstrip("`"))]
            assert len(fence) > 3 and line[len(fence):] == "json", line  # longer than ``` inside
            fenced += 1
        elif fence is not None and line.strip().startswith("`" * 3):
            assert line.strip() == fence, line  # the only line that closes it is its own fence
            fence = None
        elif fence is None:
            outside.append(line)
    assert fence is None and fenced >= 1
    outside = "\n".join(outside)
    span = re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)")  # a code span shows text as it is
    assert any("</details>" in text for _, text in span.findall(outside))  # the subject, whole
    outside = span.sub("", outside)
    ours = {"<details><summary>evidence</summary>", "</details>"}
    lines = [line for line in outside.splitlines() if line not in ours]
    assert len(outside.splitlines()) - len(lines) == 2 * fenced  # no other <details> tag
    unescaped = [line for line in lines if re.search(r"(?<!\\)[<\[]", line)]
    assert unescaped == []  # no tag, no comment, no link: every < and [ escaped
    assert any("\\<\\!--" in line or "\\<!--" in line for line in lines)  # the text is still shown
