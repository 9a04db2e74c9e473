"""The dashboard address without a cluster: what rldoctor ships, and every bad answer.

The servers here are real HTTP servers on free ports: one that is not a Ray dashboard at
all, one that accepts connections and never answers, and a small stand-in that answers the
dashboard's routes the way a dashboard of a given Ray does (old versions, refused tokens,
a job that fails or never starts), recording what rldoctor sent.
"""

from __future__ import annotations

import ast
import json
import socket
import subprocess
import sys
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import run_rldoctor
from localcluster import free_ports

SECRET = "s3cr3t-token-0123456789abcdef"


class StandIn:
    """A dashboard stand-in: `ray_version`, `token`, and how its jobs behave."""

    def __init__(self, ray_version="2.60.0", token=None, job_status="FAILED",
                 job_logs="Traceback (most recent call last):\nRuntimeError: boom on the head\n",
                 monitor_done_after: int | None = None):
        self.ray_version = ray_version
        # Reads of the head's events/event_JOBS.log before Ray's job monitor logs the job's
        # end there (None: no such log, as on a cluster without the file).
        self.monitor_done_after = monitor_done_after
        self.event_reads = 0
        self.token = token
        self.job_status = job_status
        self.job_logs = job_logs
        self.requests: list[tuple[str, str, dict]] = []
        self.packages: set[str] = set()
        self.deleted: set[str] = set()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, body):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                owner.requests.append((method, self.path, dict(self.headers), body))
                path = self.path.split("?")[0]
                if path == "/api/version":
                    return self._answer(200, {"version": "4", "ray_version": owner.ray_version})
                if path == "/api/authentication_mode":
                    return self._answer(200, {"authentication_mode": "token" if owner.token else "disabled"})
                if owner.token:
                    sent = self.headers.get("Authorization")
                    if not sent:
                        return self._answer(401, {"error": "missing token"})
                    if sent != f"Bearer {owner.token}":
                        return self._answer(403, {"error": "wrong token"})
                if path == "/api/v0/cluster_metadata":
                    return self._answer(200, {"result": True, "data": {"pythonVersion": "3.11.7"}})
                if path.startswith("/api/packages/gcs/"):
                    name = path.rsplit("/", 1)[1]
                    if method == "PUT":
                        owner.packages.add(name)
                        return self._answer(200, {})
                    return self._answer(200 if name in owner.packages else 404, {})
                if path == "/api/jobs/" and method == "POST":
                    sub = json.loads(body)["submission_id"]
                    return self._answer(200, {"job_id": "02000000", "submission_id": sub})
                if path.endswith("/logs"):
                    return self._answer(200, {"logs": owner.job_logs})
                if path.endswith("/stop"):
                    return self._answer(200, {"stopped": True})
                if path == "/api/v0/nodes" and owner.monitor_done_after is not None:
                    return self._answer(200, {"result": True, "data": {"result": {"result": [
                        {"node_id": "ab" * 28, "is_head_node": True, "state": "ALIVE"}]}}})
                if path == "/api/v0/logs/file" and owner.monitor_done_after is not None:
                    owner.event_reads += 1
                    sub = next(json.loads(b)["submission_id"] for m, p, _, b in owner.requests
                               if m == "POST" and p == "/api/jobs/")
                    lines = ['{"message": "Completed a ray job rldoctor-0123456789ab with a '
                             'status SUCCEEDED."}']
                    if owner.event_reads > owner.monitor_done_after:
                        lines.append(f'{{"message": "Completed a ray job {sub} with a status '
                                     f'{owner.job_status}."}}')
                    return self._answer(200, "\n".join(lines).encode())
                if path.startswith("/api/jobs/") and method == "DELETE":
                    owner.deleted.add(path)
                    return self._answer(200, {"deleted": True})
                if path in owner.deleted:
                    return self._answer(404, b"Job does not exist")
                if path.startswith("/api/jobs/"):
                    stopped = any(m == "POST" and p.endswith("/stop") for m, p, _, _ in owner.requests)
                    return self._answer(200, {"status": "STOPPED" if stopped else owner.job_status,
                                              "message": "Job has not started yet. It may be "
                                              "waiting for the runtime environment to be set up."})
                return self._answer(404, b"not found")

            def do_GET(self):
                self._handle("GET")

            def do_PUT(self):
                self._handle("PUT")

            def do_POST(self):
                self._handle("POST")

            def do_DELETE(self):
                self._handle("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in():
    made = []

    def make(**kwargs):
        made.append(StandIn(**kwargs))
        return made[-1]

    yield make
    for server in made:
        server.close()


def _env(tmp_path, **extra):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(tmp_path)
    env.update(extra)
    return env


def _one_line(result):
    lines = result.stderr.strip().splitlines()
    assert result.code == 3, result
    assert len(lines) == 1 and "Traceback" not in result.stderr, result
    return lines[0]


# -- what is shipped ----------------------------------------------------------------------

ALLOWED_OUTSIDE_STDLIB = {
    "ray",
    "rldoctor",
    "grpc",  # grpcio: ray[default] has it, and the dashboard (the only way in) needs ray[default]
}


def _top_imports(source: str) -> dict[str, bool]:
    """{top-level module: imported only inside a `try` that catches ImportError}."""
    tree = ast.parse(source)
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers):
            for inner in node.body:
                for sub in ast.walk(inner):
                    guarded.add(id(sub))
    found: dict[str, bool] = {}
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        for name in names:
            top = name.split(".")[0]
            found[top] = found.get(top, True) and id(node) in guarded
    return found


def test_shipped_package_imports_only_stdlib_ray_and_itself(tmp_path):
    from rldoctor.dashboard import package

    pkg = package.build()
    assert package.build().sha1 == pkg.sha1  # same sources, same name: the upload is skipped
    names = zipfile.ZipFile(__import__("io").BytesIO(pkg.data)).namelist()
    assert "rldoctor/job/main.py" in names and all(n.startswith("rldoctor/") for n in names)
    # the client side never travels: no checks, reports, CLI or HTTP client
    assert not any(n.startswith(("rldoctor/render/", "rldoctor/dashboard/", "rldoctor/lint/"))
                   or n in ("rldoctor/cli.py", "rldoctor/registry.py") for n in names), names
    outside = {}
    for name in names:
        source = zipfile.ZipFile(__import__("io").BytesIO(pkg.data)).read(name).decode()
        for top, guarded in _top_imports(source).items():
            if top in sys.stdlib_module_names or top in ALLOWED_OUTSIDE_STDLIB or top == "__future__":
                continue
            if not guarded:
                outside.setdefault(top, []).append(name)
    assert outside == {}, outside
    # and it imports from the zip alone, where click, psutil, tabulate and torch are absent
    zipfile.ZipFile(__import__("io").BytesIO(pkg.data)).extractall(tmp_path)
    modules = [n[:-3].replace("/", ".").removesuffix(".__init__") for n in names]
    code = (
        "import sys, importlib\n"
        "class NotOnTheCluster:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('click', 'psutil', 'tabulate', 'torch', 'gymnasium',\n"
        "                                  'matplotlib', 'prometheus_client', 'numpy'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, NotOnTheCluster())\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        f"for name in {modules!r}:\n"
        "    mod = importlib.import_module(name)\n"
        f"    assert mod.__file__.startswith({str(tmp_path)!r}), (name, mod.__file__)\n"
        "print('ok', len(sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stderr[-3000:]


# What the zip may hold besides the cluster side (rldoctor.cluster, .node, .job): the
# stdlib-only shared modules the cluster side imports. A client module here means a cluster
# module imports the client (tests/test_layering.py says which import).
SHIPPED_SHARED = {"rldoctor", "rldoctor.auth_token", "rldoctor.errors", "rldoctor.redact",
                  "rldoctor.snapshot_document", "rldoctor.node_state", "rldoctor.metric_numbers",
                  "rldoctor.rllib_roles", "rldoctor.words", "rldoctor.bundle",
                  "rldoctor.bundle.manifest", "rldoctor.bundle.writer", "rldoctor.raylog",
                  "rldoctor.raylog.catalogue", "rldoctor.raylog.hits", "rldoctor.raylog.kinds",
                  "rldoctor.raylog.lines"}
CLIENT_PREFIXES = ("rldoctor.checks", "rldoctor.report", "rldoctor.engine", "rldoctor.commands",
                   "rldoctor.dashboard", "rldoctor.watch", "rldoctor.lint", "rldoctor.inputs",
                   "rldoctor.bundle.assemble", "rldoctor.bundle.build", "rldoctor.bundle.obfuscate",
                   "rldoctor.bundle.evidence", "rldoctor.bundle.target", "rldoctor.safe_write", "rldoctor.cli", "rldoctor.registry", "rldoctor.runner",
                   "rldoctor.diagnose", "rldoctor.muting", "rldoctor.docs", "rldoctor.output",
                   "rldoctor.acquire", "rldoctor.cache",
                   # reading a snapshot file or a bundle is the client's, writing one is not
                   "rldoctor.snapshot", "rldoctor.bundle.reader")


def _not_cluster_side(modules) -> list[str]:
    """The shipped modules that are neither the cluster side nor a shared stdlib-only module."""
    from rldoctor.dashboard import package

    return sorted(m for m in modules
                  if not any(m == f"rldoctor.{f}" or m.startswith(f"rldoctor.{f}.") for f in package.FOLDERS)
                  and m not in SHIPPED_SHARED
                  or any(m == c or m.startswith(c + ".") for c in CLIENT_PREFIXES))


def test_shipped_package_is_the_cluster_side_and_what_it_needs():
    from rldoctor.dashboard import package

    modules = set(package.shipped_modules())
    assert _not_cluster_side(modules) == [], _not_cluster_side(modules)
    root = package._source_of("rldoctor").parent
    for folder in package.FOLDERS:  # every cluster-side module travels (smoke-train's excepted)
        for path in (root / folder).glob("*.py"):
            name = f"rldoctor.{folder}" + ("" if path.stem == "__init__" else f".{path.stem}")
            assert (name in modules) != (name in package.NOT_SHIPPED), name
    # 116.9 KiB before the tree was laid out by side; + 7.7 KiB for the autoscaler collector (issue 33);
    # + 1 KiB for cluster/bounded.py, the bounded reads and what they cut (issue 35): 125 KiB;
    # 85.4 KiB once docstrings and comments stay home (shipped_source) and reading snapshots
    # and bundles left the shipped modules (snapshot_document); + 2.3 KiB for
    # cluster/dashboard_http.py, the one dashboard client both sides use (issue 31), - 2.4 KiB
    # once signatures travel without their annotations: 85.2 KiB; + 2.6 KiB for the collector
    # contract (cluster/sections.py, issue 31), - 2.6 KiB with one space per block level: 85.9 KiB;
    # + 0.1 KiB for the nodes autoscaler v1 terminated, from its monitor.log (issue 33): 86.03 KiB;
    # + 0.2 KiB for the switch that keeps Ray's relayed cluster events off stdout, + 1.2 KiB for
    # the one shared task read (cluster/task_table.py), the time-bounded pid histories and the
    # task reads made only when something calls for them (issue 35): 87.92 KiB; + 0.3 KiB for
    # the bundle's running calls read job by job (task_table.by_job, issue 35): 88.21 KiB; + 1.4 KiB
    # for the table of secret shapes the job masks before it prints (redact.SHAPES, issue 49): 89.62 KiB;
    # + 0.15 KiB for the hook of the join's time keeper (connect.tell, issue 48): 89.77 KiB;
    # + 5.6 KiB for preflight's node side (node/preflight.py, what each node answers: the env
    # built, package versions, the storage marker, the env stepped, GPUs; issue 50): 95.40 KiB;
    # + 4.79 KiB once the node-side facts are a module each, found (node/fact_*.py, facts.py,
    # processes.py, py_spy.py for probes.py; issue 52: each zip member is compressed on its
    # own): 100.19 KiB; + 16.1 KiB for the catalogue of Ray's lines and its line reader
    # (rldoctor.raylog: catalogue, lines, kinds, hits), which the probes read a live node's
    # logs with as `check --from` reads a dead one's, and the live log_lines section (issue
    # 47): 116.41 KiB; + 0.3 KiB for a snapshot of fewer sections (sections.needed_for and
    # `follows`: the preflight's, inside the collectors' job too; issue 50): 116.71 KiB
    assert len(package.build().data) < 116.8 * 1024


def test_a_client_module_imported_by_the_cluster_side_is_caught(monkeypatch):
    """The guard above fails as soon as a cluster module imports the client: here
    cluster/nodes.py is made to import the checks and the report."""
    from rldoctor.dashboard import package

    real = package._imported

    def with_a_wrong_import(path, pkg):
        names = real(path, pkg)
        return names | {"rldoctor.checks.cluster", "rldoctor.report.overview"} if path.name == "nodes.py" else names

    monkeypatch.setattr(package, "_imported", with_a_wrong_import)
    wrong = _not_cluster_side(package.shipped_modules())
    assert "rldoctor.checks.cluster" in wrong and "rldoctor.report.overview" in wrong, wrong


def _sha_of_copy(tree) -> str:
    code = "from rldoctor.dashboard import package; print(package.build().sha1)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=tree, env={**__import__("os").environ, "PYTHONPATH": str(tree)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


# a check, a report part, a command, the CLI, the watch, the bundle's assembly, the pipeline
CLIENT_EDITS = ("checks/cluster/nodes.py", "report/overview.py", "commands/check.py", "cli.py",
                "watch/rounds.py", "bundle/assemble.py", "engine/registry.py", "dashboard/http.py")


def test_the_client_edits_name_files_that_exist():
    """The hash test's client edits land on real modules (a name gone stale guards nothing)."""
    from rldoctor.dashboard import package

    root = package._source_of("rldoctor").parent
    for client in CLIENT_EDITS:
        top, _, rest = client.partition("/")
        path = root.parent / client if top == "checks" else root / client
        assert path.is_file(), client


def test_the_package_hash_changes_only_with_cluster_side_code(tmp_path):
    """On a copy of the tree: an edit to client modules (a check, a report part, a command,
    the CLI, the watch, the bundle's assembly) leaves the zip's hash, and so the upload,
    alone; an edit to a collector changes it."""
    import shutil

    from rldoctor.dashboard import package

    root = package._source_of("rldoctor").parent
    tree = tmp_path / "src"
    shutil.copytree(root, tree / "rldoctor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(root.parent / "checks", tree / "rldoctor" / "checks",
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = _sha_of_copy(tree)
    assert before == package.build().sha1  # the copy is what is installed
    # code, not a comment (comments never travel): each file must exist, or the edit would
    # make a new module that nothing imports and test nothing
    for client in CLIENT_EDITS:
        path = tree / "rldoctor" / client
        assert path.is_file(), f"{client} is gone: name a client module that exists"
        with open(path, "a") as handle:
            handle.write("\nAN_EDIT_ON_THE_CLIENT_SIDE = 1\n")
    assert _sha_of_copy(tree) == before
    # prose on the cluster side does not travel: a comment or a docstring reworded there (on
    # the same lines, so that the code's line numbers stay) leaves the hash alone too
    nodes = tree / "rldoctor" / "cluster" / "nodes.py"
    text = nodes.read_text()
    assert text.startswith('"""') and "  # " in text
    nodes.write_text('"""Reworded: ' + text[3:].replace("  # ", "  # reworded: ", 1))
    assert _sha_of_copy(tree) == before
    with open(nodes, "a") as handle:
        handle.write("\nAN_EDIT_ON_THE_CLUSTER_SIDE = 1\n")
    edited = _sha_of_copy(tree)
    assert edited != before
    # a new stripper never reads back the zip the old one made (same sources, other output)
    with open(tree / "rldoctor" / "dashboard" / "shipped_source.py", "a") as handle:
        handle.write("\n_strip = strip\n\n\ndef strip(text):\n    return _strip(text) + '\\n'\n")
    assert _sha_of_copy(tree) not in (before, edited)


def test_shipped_sources_keep_their_lines_and_lose_their_prose():
    """Every shipped module, stripped, still compiles with the same line count (a traceback
    from the cluster points at the repository's line), and holds no comment or docstring."""
    import ast
    import io
    import tokenize

    from rldoctor.dashboard import package, shipped_source

    for module, path in package.shipped_modules().items():
        text = path.read_text()
        stripped = shipped_source.strip(text)
        assert stripped.count("\n") == text.count("\n"), module
        tree = ast.parse(stripped)
        compile(tree, str(path), "exec")
        assert ast.get_docstring(tree) is None, module
        for node in ast.walk(tree):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                assert ast.get_docstring(node) is None or not node.body[0].lineno == node.lineno, \
                    (module, node.name)
        comments = [t for t in tokenize.generate_tokens(io.StringIO(stripped).readline)
                    if t.type == tokenize.COMMENT]
        assert comments == [], (module, comments[:3])
    code = ('"""Module."""\nimport os  # why\n\n\nclass A:\n    """Only a docstring."""\n\n\n'
            'def f(x):\n    """Doc\n    over lines."""\n    s = """# not a comment"""\n'
            '    return x  # trailing\n\n\ndef g(): "same line"\n')
    out = shipped_source.strip(code)
    assert out.splitlines() == ["", "import os", "", "", "class A:", "    pass", "", "", "def f(x):",
                                "", "", '    s = """# not a comment"""', "    return x", "", "",
                                'def g(): "same line"']
    namespace = {}
    exec(compile(out, "m.py", "exec"), namespace)
    assert namespace["f"](3) == 3 and namespace["A"].__doc__ is None


def test_shipped_sources_lose_signature_annotations_but_not_a_dataclass_fields():
    from rldoctor.dashboard import shipped_source

    code = ("from __future__ import annotations\nfrom dataclasses import dataclass\n\n\n"
            "@dataclass\nclass P:\n    x: int = 0\n\n\n"
            "def f(a: dict | None = None, *rest: str, b: 'T' = 1, **kw: int) -> tuple[int, str]:\n"
            "    n: int = 2\n    return (a, rest, b, kw, n)\n\n\n"
            "def g(x: int,\n      y: list[str] = (),\n      ) -> None: return None\n"
            "async def h(é: int = 1) -> int:\n    return é\n")
    out = shipped_source.strip(code)
    assert out.count("\n") == code.count("\n")
    assert "def f(a = None, *rest, b = 1, **kw):" in out
    assert "    x: int = 0" in out and "    n: int = 2" in out  # not a signature: kept
    assert "def g(x,\n      y = (),\n      ): return None" in out
    assert "async def h(é = 1):" in out
    namespace = {}
    exec(compile(out, "m.py", "exec"), namespace)
    assert namespace["f"]({}, "r", b=3, k=1) == ({}, ("r",), 3, {"k": 1}, 2)
    assert namespace["P"]().x == 0 and namespace["f"].__annotations__ == {}


def test_frame_round_trip_among_ray_output():
    from rldoctor.job import frame, unframe

    doc = {"schema": "rldoctor.snapshot/v1", "nodes": [{"node_id": "a" * 56}] * 50}
    logs = "(raylet) noise\n" + frame(doc) + "\n(raylet) more noise\n"
    assert unframe(logs) == doc
    assert unframe(logs[: len(logs) // 2]) is None  # a cut frame is no snapshot


# -- bad input and faults: one line, exit 3 -----------------------------------------------

def test_nothing_listening(tmp_path):
    port = free_ports(1)[0]
    result = run_rldoctor("check", "--address", f"http://127.0.0.1:{port}", env=_env(tmp_path))
    line = _one_line(result)
    assert "cannot reach a Ray dashboard" in line and str(port) in line
    assert result.seconds < 15


def test_not_a_ray_dashboard(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=tmp_path)
    try:
        port = int(proc.stdout.readline().split("port ")[1].split()[0])
        result = run_rldoctor("check", "--address", f"http://127.0.0.1:{port}",
                              env=_env(tmp_path))
        assert "is not a Ray dashboard" in _one_line(result)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_a_port_that_never_answers_fails_within_15s(tmp_path):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts into the backlog, never reads or answers
    try:
        result = run_rldoctor("check", "--address", f"http://127.0.0.1:{silent.getsockname()[1]}",
                              env=_env(tmp_path), timeout=60)
        assert "no answer from" in _one_line(result)
        assert result.seconds < 15, result
    finally:
        silent.close()


def test_dashboard_of_a_ray_older_than_240(tmp_path, stand_in):
    server = stand_in(ray_version="2.9.3")
    line = _one_line(run_rldoctor("check", "--address", server.url, env=_env(tmp_path)))
    assert "Ray 2.9.3" in line and "2.40" in line
    assert not any(m == "POST" for m, *_ in server.requests)  # nothing was submitted


@pytest.mark.parametrize("given", [None, "wrong-token-0123456789"])
def test_token_missing_or_wrong(tmp_path, stand_in, given):
    server = stand_in(token=SECRET)
    env = _env(tmp_path, **({"RAY_AUTH_TOKEN": given} if given else {}))
    result = run_rldoctor("check", "--address", server.url, env=env)
    line = _one_line(result)
    assert ("found no token" in line) if given is None else ("refused the token from RAY_AUTH_TOKEN" in line)
    assert "403" in line if given else "401" in line
    for secret in (SECRET, "wrong-token-0123456789"):
        assert secret not in result.stdout + result.stderr


def test_requests_look_like_rays_sdk_not_a_browser(tmp_path, stand_in):
    server = stand_in(token=SECRET, job_status="FAILED")
    token_file = tmp_path / "token"
    token_file.write_text(SECRET + "\n")
    result = run_rldoctor("collect", "--output", str(tmp_path / "s.json"), "--address", server.url,
                          env=_env(tmp_path, RAY_AUTH_TOKEN_PATH=str(token_file)))
    _one_line(result)
    assert SECRET not in result.stdout + result.stderr
    for method, path, headers, _ in server.requests:
        lowered = {k.lower(): v for k, v in headers.items()}
        assert not lowered["user-agent"].startswith("Mozilla")
        assert "origin" not in lowered and "referer" not in lowered
        if path not in ("/api/version", "/api/authentication_mode"):
            assert lowered["authorization"] == f"Bearer {SECRET}", (method, path)
    posted = [json.loads(body) for m, p, _, body in server.requests if m == "POST" and p == "/api/jobs/"]
    assert len(posted) == 1
    job = posted[0]
    assert job["entrypoint_num_cpus"] == 0 and job["submission_id"].startswith("rldoctor-")
    assert job["runtime_env"] == {"py_modules": [f"gcs://{next(iter(server.packages))}"]}
    assert set(job) <= {"entrypoint", "submission_id", "runtime_env", "metadata", "entrypoint_num_cpus"}


def test_job_failing_on_the_cluster_quotes_its_error_and_is_deleted(tmp_path, stand_in):
    server = stand_in(job_status="FAILED")
    line = _one_line(run_rldoctor("check", "--address", server.url, env=_env(tmp_path)))
    assert "failed on the cluster" in line and "RuntimeError: boom on the head" in line
    sub = next(json.loads(b)["submission_id"] for m, p, _, b in server.requests
               if m == "POST" and p == "/api/jobs/")
    assert ("DELETE", f"/api/jobs/{sub}") in [(m, p) for m, p, *_ in server.requests]


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_job_deleted_once_rays_job_monitor_logged_its_end(tmp_path, stand_in):
    """The delete waits for this job's "Completed a ray job" event (another job's does not
    count), then goes at once: no second look a monitor period later."""
    server = stand_in(job_status="FAILED", monitor_done_after=3)
    started = time.monotonic()
    _one_line(run_rldoctor("check", "--address", server.url, env=_env(tmp_path)))
    calls = [(m, p.split("?")[0]) for m, p, *_ in server.requests]
    sub = next(json.loads(b)["submission_id"] for m, p, _, b in server.requests
               if m == "POST" and p == "/api/jobs/")
    deletes = [i for i, call in enumerate(calls) if call == ("DELETE", f"/api/jobs/{sub}")]
    reads = [i for i, call in enumerate(calls) if call == ("GET", "/api/v0/logs/file")]
    assert len(deletes) == 1 and len(reads) == 4 and reads[-1] < deletes[0], calls
    assert all(p.startswith("/api/v0/logs/file") for m, p in calls[deletes[0] + 1:] if m == "GET"), calls
    assert "/api/v0/actors" not in [p for _, p in calls]  # no fallback to the supervisor's state
    assert time.monotonic() - started < 8


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_job_stuck_pending_is_stopped_and_deleted(tmp_path, stand_in):
    server = stand_in(job_status="PENDING")
    started = time.monotonic()
    line = _one_line(run_rldoctor("check", "--address", server.url, "--timeout", "2",
                                  env=_env(tmp_path)))
    assert "could not start" in line and "PENDING" in line and "runtime environment" in line
    assert time.monotonic() - started < 15
    calls = [(m, p) for m, p, *_ in server.requests]
    sub = next(p.split("/")[3] for m, p in calls if m == "GET" and p.startswith("/api/jobs/rldoctor-"))
    assert ("POST", f"/api/jobs/{sub}/stop") in calls and ("DELETE", f"/api/jobs/{sub}") in calls


def test_upload_skipped_when_the_cluster_has_the_package(tmp_path, stand_in):
    server = stand_in(job_status="FAILED")
    for _ in range(2):
        run_rldoctor("check", "--address", server.url, env=_env(tmp_path))
    puts = [p for m, p, *_ in server.requests if m == "PUT"]
    assert len(puts) == 1 and puts[0].startswith("/api/packages/gcs/_ray_pkg_")


def test_ray_address_http_is_taken_like_address(tmp_path, stand_in):
    server = stand_in(ray_version="2.30.0")
    line = _one_line(run_rldoctor("check", env=_env(tmp_path, RAY_ADDRESS=server.url)))
    assert "Ray 2.30.0" in line


# -- the job's output: read while it runs, redacted in the cluster, its log file wiped ------

SNAPSHOT_FIXTURE = __import__("pathlib").Path(__file__).resolve().parent.parent / "fixtures" \
    / "healthy-3node.json"
ENV_SECRET = "envsecret-Qw3Er5Ty7Ui9"


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_check_reads_the_snapshot_while_the_job_runs_then_stops_and_deletes_it(
        tmp_path, stand_in):
    """The job's driver does not end after printing (it waits for the stop, then wipes its
    log file): the client must take the frame from a RUNNING job, stop it, then delete it."""
    from rldoctor.job import frame

    doc = json.loads(SNAPSHOT_FIXTURE.read_text())
    server = stand_in(job_status="RUNNING", monitor_done_after=0,
                      job_logs="Running entrypoint for job rldoctor-x\n" + frame(doc) + "\n")
    started = time.monotonic()
    result = run_rldoctor("check", "--address", server.url, "--timeout", "5",
                          "--format", "json", env=_env(tmp_path))
    took = time.monotonic() - started
    assert result.code in (0, 1), result
    report = json.loads(result.stdout)
    assert {row["node_id"] for row in report["cluster"]["rows"]} == \
        {n["node_id"] for n in doc["nodes"]}
    assert took < 15, took  # not the RUNNING job's timeout (5 + 30 s)
    posted = next(json.loads(b) for m, p, _, b in server.requests if m == "POST" and p == "/api/jobs/")
    assert "--linger 90" in posted["entrypoint"]  # the driver waits for the stop, bounded
    sub = posted["submission_id"]
    calls = [(m, p) for m, p, *_ in server.requests]
    stop = calls.index(("POST", f"/api/jobs/{sub}/stop"))
    assert stop < calls.index(("DELETE", f"/api/jobs/{sub}"))
    assert ("GET", f"/api/jobs/{sub}/logs") in calls[:stop]
    assert ("GET", f"/api/jobs/{sub}/logs") not in calls[stop:]


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_the_job_prints_a_redacted_snapshot_then_wipes_its_log_on_the_stop(tmp_path):
    """The driver's side, as Ray runs it: stdout is job-driver-rldoctor-<id>.log. What it
    prints is redacted already (the token, env_vars values), and on SIGTERM it deletes the
    file and ends at once."""
    doc = json.loads(SNAPSHOT_FIXTURE.read_text())
    doc["runtime_envs_seen"] = [{"runtime_env": {"env_vars": {"SIM_PASSWORD": ENV_SECRET}}}]
    doc.setdefault("notes", []).append(f"a message that quotes the token {SECRET}")
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    code = ("import json, sys\nfrom rldoctor.job import main as job_main\n"
            f"doc = json.load(open({str(tmp_path / 'doc.json')!r}))\n"
            "job_main._the_job = lambda timeout_s, extras=(): doc\n"
            "sys.exit(job_main.main(['--linger', '60']))\n")
    log = tmp_path / "job-driver-rldoctor-0123456789ab.log"
    env = _env(tmp_path, RAY_AUTH_TOKEN=SECRET)
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT,
                                env=env)
    try:
        from rldoctor.job import END, unframe

        deadline = time.monotonic() + 30
        while END not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        text = log.read_text()
        printed = unframe(text)
        assert printed is not None and len(printed["nodes"]) == len(doc["nodes"]), text[-2000:]
        assert ENV_SECRET not in json.dumps(printed) and SECRET not in json.dumps(printed)
        assert printed["runtime_envs_seen"][0]["runtime_env"]["env_vars"]["SIM_PASSWORD"] \
            == "***redacted***"
        time.sleep(0.5)
        assert proc.poll() is None and log.exists()  # lingers, waiting for the stop
        stopped = time.monotonic()
        proc.send_signal(__import__("signal").SIGTERM)
        proc.wait(10)
        assert time.monotonic() - stopped < 2
        assert not log.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_shipped_sources_are_reindented_on_the_same_lines_and_strings_untouched():
    """One space per block level; continuation lines one more; a line inside a string or a
    multi-line f-string keeps its spaces; every shipped module keeps its syntax tree."""
    import ast

    from rldoctor.dashboard import package, shipped_source

    code = ('class A:\n    def f(self, x,\n              y):\n        s = """a\n    b"""\n'
            '        if x:\n            return (x +\n                    y)\n'
            '        t = f"""{x}\n    {y}"""\n        return s, t\n')
    out = shipped_source.reindent(code)
    assert out.splitlines() == ["class A:", " def f(self, x,", "  y):", '  s = """a', '    b"""',
                                "  if x:", "   return (x +", "    y)", '  t = f"""{x}', '    {y}"""',
                                "  return s, t"]
    namespace = {}
    exec(compile(out, "m.py", "exec"), namespace)
    assert namespace["A"]().f(0, 2) == ("a\n    b", "0\n    2") and namespace["A"]().f(1, 2) == 3
    assert shipped_source.reindent("def f(:\n    pass\n") == "def f(:\n    pass\n"  # not Python
    for module, path in package.shipped_modules().items():
        text = shipped_source.strip(path.read_text())
        out = shipped_source.shipped(path.read_text())
        assert out.count("\n") == text.count("\n"), module
        assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(text)), module


def test_the_gcs_addresss_fallback_carries_preflights_probes_into_the_job(tmp_path, stand_in,
                                                                          monkeypatch):
    """A GCS address whose Ray will not take this driver (another release) goes through its
    dashboard: the job gets what `--address http://...` would give it, preflight's plan and
    --since's window included (it used to lose both)."""
    import os

    from rldoctor import acquire
    from rldoctor.cluster import private
    from rldoctor.cluster.preflight import Preflight
    from rldoctor.cluster.session import Budget
    from rldoctor.errors import Undiagnosable

    server = stand_in(job_status="FAILED")
    for key in [k for k in os.environ if k.startswith("RAY_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(private, "dashboard_address",
                        lambda gcs, timeout_s: server.url.removeprefix("http://"))
    with pytest.raises(Undiagnosable, match="went through the cluster's dashboard"):
        acquire.after_refusal("127.0.0.1:1", Budget(20), "Ray 2.40.0 there, 2.60.0 here",
                              extras=(Preflight({"demand": {"bundles": []}}),), window_s=600)
    [entrypoint] = [json.loads(b)["entrypoint"] for m, p, _, b in server.requests
                    if m == "POST" and p == "/api/jobs/"]
    assert " --preflight-plan " in entrypoint and " --since-s 600" in entrypoint, entrypoint
