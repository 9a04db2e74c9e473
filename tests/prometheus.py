"""A real Prometheus server for tests and the demo: free port, own data dir, fast rounds.

    with PrometheusServer(targets=["127.0.0.1:9464"], rule_files=[RULES]) as prom:
        prom.query('rldoctor_finding{code="RLD401"}')
        prom.alerts()

Debian's `prometheus` package provides the binary (`make prometheus`). The server is
started in its own session and stopped (SIGTERM, then SIGKILL) whatever happens.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from localcluster import free_ports

BINARY = shutil.which("prometheus") or "/usr/bin/prometheus"


class PrometheusServer:
    def __init__(self, targets: list[str], rule_files: list[Path] = (), interval_s: float = 1.0,
                 job: str = "rldoctor"):
        self.root = Path(tempfile.mkdtemp(prefix="rldoctor-prom-"))
        self.port = free_ports(1)[0]
        self.url = f"http://127.0.0.1:{self.port}"
        rules = "".join(f"\n  - {Path(r).resolve()}" for r in rule_files)
        targets_yaml = ", ".join(json.dumps(t) for t in targets)
        (self.root / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {interval_s:g}s\n  evaluation_interval: {interval_s:g}s\n"
            f"rule_files:{rules or ' []'}\n"
            f"scrape_configs:\n  - job_name: {job}\n    static_configs:\n"
            f"      - targets: [{targets_yaml}]\n")
        self.proc: subprocess.Popen | None = None

    def start(self, timeout_s: float = 30) -> "PrometheusServer":
        log = open(self.root / "prometheus.log", "w")
        self.proc = subprocess.Popen(
            [BINARY, f"--config.file={self.root / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.root / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus did not start: {self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return (self.root / "prometheus.log").read_text()[-chars:]
        except OSError:
            return ""

    def _get(self, path: str, **params) -> dict:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=5) as r:
            body = json.loads(r.read())
        assert body.get("status") == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        """An instant query: [{"metric": {labels}, "value": [t, "v"]}, ...]."""
        return self._get("/api/v1/query", query=expr)["result"]

    def alerts(self) -> list[dict]:
        """Prometheus's own view: [{"labels", "annotations", "state": pending|firing, ...}]."""
        return self._get("/api/v1/alerts")["alerts"]

    def targets_up(self) -> bool:
        return any(t.get("health") == "up" for t in self._get("/api/v1/targets")["activeTargets"])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "PrometheusServer":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
