"""One HTTP client to the dashboard (rldoctor.cluster.dashboard_http.Dashboard) for both sides:
the dashboard path, the cluster facts and the log route (LogRoute sits on it). Same headers,
one error vocabulary; no other module of doctor/ speaks HTTP to the dashboard.

Against a real HTTP server on a free port (the standard library's), standing in for the
dashboard's routes; the real dashboard is read by the e2e tests (test_e2e_auth.py,
test_bundle_e2e.py, test_e2e_dashboard*.py).
"""

from __future__ import annotations

import ast
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from test_layering import ROOT, imports, modules

TOKEN = "t0ken-of-this-cluster-0123456789"
HTTP_CLIENTS = ("urllib.request", "http.client", "requests", "urllib3", "aiohttp", "httpx")
THE_CLIENT = "rldoctor.cluster.dashboard_http"
# HTTP that is not to the dashboard, each with why
NOT_THE_DASHBOARD = {
    "rldoctor.cluster.training": "scrapes each node's Prometheus endpoint (MetricsExportPort), "
                                 "not the dashboard",
}


def http_clients(root: Path) -> dict[str, list[str]]:
    """{module: [HTTP client modules it imports]} for every module of doctor/ but the one client."""
    mods = {n: p for n, p in modules(root).items() if n.startswith("rldoctor.")
            and not n.startswith("rldoctor.checks")}
    found = {}
    for name, path in mods.items():
        used = sorted({i for i, _, _ in imports(name, path, set(mods))
                       if any(i == c or i.startswith(c + ".") for c in HTTP_CLIENTS)})
        if used and name != THE_CLIENT:
            found[name] = used
    return found


def test_no_module_but_the_client_speaks_http_to_the_dashboard():
    assert {m: u for m, u in http_clients(ROOT).items() if m not in NOT_THE_DASHBOARD} == {}
    # the exception reads no dashboard route
    training = (ROOT / "doctor" / "cluster" / "training.py").read_text()
    opened = [n for n in ast.walk(ast.parse(training)) if isinstance(n, ast.Attribute)
              and n.attr == "urlopen"]
    assert len(opened) == 1 and "/api/" not in training.split("def _scrape")[1].split("\ndef ")[0]


def test_the_guard_flags_a_second_client(tmp_path):
    files = {"doctor/__init__.py": "", "doctor/cluster/__init__.py": "",
             "doctor/cluster/dashboard_http.py": "import urllib.request\n",
             "doctor/cluster/facts.py": "def f():\n    import urllib.request\n",
             "doctor/cluster/other.py": "import requests\n",
             "doctor/cluster/fine.py": "import urllib.parse\nimport json\n",
             "checks/__init__.py": ""}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert http_clients(tmp_path) == {"rldoctor.cluster.facts": ["urllib.request"],
                                      "rldoctor.cluster.other": ["requests"]}


class Head:
    """Serves /api/version, /api/authentication_mode and the log route behind a token;
    `silent` paths never answer, and every request's headers are kept."""

    def __init__(self, token: str | None = TOKEN, auth_route: bool = True,
                 log: bytes = b"line 1\nline 2\nline 3\n"):
        self.seen: list[tuple[str, dict]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, data: bytes):
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                owner.seen.append((self.path, dict(self.headers)))
                path = self.path.split("?")[0]
                if path == "/api/version":
                    return self._answer(200, b'{"ray_version": "2.49.0"}')
                if path == "/api/authentication_mode":
                    if not auth_route:
                        return self._answer(404, b"404: Not Found")
                    return self._answer(200, b'{"authentication_mode": "%s"}'
                                        % (b"token" if token else b"disabled"))
                if token and self.headers.get("Authorization") != f"Bearer {token}":
                    return self._answer(401 if not self.headers.get("Authorization") else 403,
                                        b"Unauthorized: Missing authentication token")
                if path == "/api/v0/logs/file":
                    if "filename=gone" in self.path:
                        return self._answer(500, b"Log file gone not found on node")
                    if "filename=slow" in self.path:
                        time.sleep(3)
                    return self._answer(200, log)
                return self._answer(404, b"404: Not Found")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def head():
    made = []

    def make(**kwargs):
        made.append(Head(**kwargs))
        return made[-1]

    yield make
    for h in made:
        h.close()


def test_log_route_is_the_dashboard_client_with_its_headers_and_errors(head):
    from rldoctor.cluster.dashboard_http import USER_AGENT, Dashboard
    from rldoctor.cluster.logs import LogError, LogRoute, LogTimeout

    h = head()
    route = LogRoute(h.address, {"Authorization": f"Bearer {TOKEN}"}, timeout_s=2.0)
    assert route.tail("ab" * 28, "raylet.out", 100, 10_000) == (b"line 1\nline 2\nline 3\n", 0)
    assert route.tail("ab" * 28, "raylet.out", 100, 7) == (b"line 3\n", 14)  # the tail is kept
    path, sent = h.seen[-1]
    assert sent["User-Agent"] == USER_AGENT == Dashboard(f"http://{h.address}").headers()["User-Agent"]
    assert "timeout=1" in path  # the server is told a shorter limit than ours

    with pytest.raises(LogError) as refused:
        LogRoute(h.address, {}, timeout_s=2.0).tail("ab" * 28, "raylet.out", 100, 10_000)
    # one vocabulary: the words are the client's own
    assert str(refused.value) == Dashboard(f"http://{h.address}").refused(401).short \
        == "the dashboard refused the request (HTTP 401): check the auth token"
    assert TOKEN not in str(refused.value)
    with pytest.raises(LogError, match="^no such log on the node$"):
        route.tail("ab" * 28, "gone", 100, 10_000)
    with pytest.raises(LogTimeout, match="^no answer within 1s$"):
        LogRoute(h.address, {"Authorization": f"Bearer {TOKEN}"}, timeout_s=1.0).tail(
            "ab" * 28, "slow", 100, 10_000)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(LogError, match="^dashboard unreachable: "):
        LogRoute(f"127.0.0.1:{port}", {}, timeout_s=1.0).tail("ab" * 28, "raylet.out", 1, 100)


def _conn(address: str):
    from rldoctor.cluster.auth import AuthDecision
    from rldoctor.cluster.connect import Connection

    return Connection(address="127.0.0.1:1", gcs_address="127.0.0.1:1", dashboard_url=address,
                      namespace="rldoctor", auth=AuthDecision(mode="disabled", cluster="unknown"))


def test_cluster_facts_read_the_dashboard_through_the_one_client(head):
    from rldoctor.cluster import cluster_facts
    from rldoctor.cluster.dashboard_http import USER_AGENT
    from rldoctor.cluster.session import Budget

    h = head(token=None)
    facts = cluster_facts.collect(_conn(h.address), Budget(10))
    assert facts["state_api"] is True and facts["auth_mode"] == "disabled"
    assert [p for p, _ in h.seen] == ["/api/authentication_mode"]
    assert h.seen[0][1]["User-Agent"] == USER_AGENT

    old = head(token=None, auth_route=False)  # Ray before 2.52: no auth route, no token auth
    facts = cluster_facts.collect(_conn(old.address), Budget(10))
    assert facts["state_api"] is True and facts["auth_mode"] == "disabled"
    assert [p for p, _ in old.seen] == ["/api/authentication_mode", "/api/version"]

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    facts = cluster_facts.collect(_conn(f"127.0.0.1:{port}"), Budget(10))
    assert facts["state_api"] is False
    assert facts["dashboard_error"].startswith("dashboard unreachable: ")
    assert "did not answer: dashboard unreachable: " in facts["state_api_error"]


@pytest.mark.serial  # bounds a time (tests/suite_plan.py)
def test_cluster_facts_say_no_answer_when_the_dashboard_is_silent():
    from rldoctor.cluster import cluster_facts
    from rldoctor.cluster.session import Budget

    with socket.socket() as silent:  # listens, never accepts: the request waits
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        started = time.monotonic()
        facts = cluster_facts.collect(_conn(f"127.0.0.1:{silent.getsockname()[1]}"), Budget(1))
    assert facts["state_api"] is False and time.monotonic() - started < 10
    assert facts["dashboard_error"].startswith("no answer within "), facts
