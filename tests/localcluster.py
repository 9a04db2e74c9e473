"""A real multi-node Ray cluster on this machine, for tests, demos and benchmarks.

Each node is a `ray start` in a session of its own, with its own free ports,
labels and environment; every node shares one temp dir under /tmp and one auth
token. Stopping kills exactly the processes this cluster started: those of the
nodes' sessions and any that carry this cluster's marker in their environment.
Never the default ports, never another cluster's processes.

    python tests/localcluster.py demo     # start 3 nodes, run `rldoctor check` and `rldoctor watch`, stop
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
MARKER = "RLDOCTOR_TEST_CLUSTER"


@dataclass
class NodeSpec:
    num_cpus: int = 1
    labels: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    resources: dict[str, float] = field(default_factory=dict)
    object_store_memory: int = 100 * 2**20
    extra_args: list[str] = field(default_factory=list)
    # A cgroup directory (tests/cgroups.py MemoryCgroup) that the node's `ray start`, and so
    # every process of the node, runs in: a node in a container-like memory limit.
    cgroup: str | None = None
    # A node on a host of its own (tests/netns.py): the address it registers with.
    ip: str | None = None
    # A command the node's `ray start` runs under: `ip netns exec <ns>` (its host, with `ip`),
    # `prlimit --nofile=1024:1024` (a limit every process of the node inherits).
    command_prefix: list[str] = field(default_factory=list)


@dataclass
class Node:
    spec: NodeSpec
    sid: int  # session id of the node's processes
    index: int
    node_id: str = ""
    log: Path | None = None


# The loopback addresses of this process's clusters: 127.0.0.x, or under `make test`'s second
# worker 127.0.20.x. Two clusters on one IP at once would hand their workers the same ports
# (each raylet gives out Ray's default worker ports, 10002 up, in order).
_LANE = 20 * int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)


def loopback(host: int) -> str:
    """Loopback address `host` of this process's lane (127.0.0.x, or 127.0.20.x, ...): a cluster's
    nodes are 10, 11, ...; a second cluster up at the same time takes others (20, 21, ...)."""
    return f"127.0.{_LANE}.{host}"


def free_ports(count: int, taken: set[int] | None = None) -> list[int]:
    """`count` distinct free TCP ports on loopback, never Ray's defaults nor any in `taken`.

    The sockets are closed before Ray binds, so the OS may offer a port again in a later
    call: a cluster passes every port it has handed out as `taken` (and gets it updated).
    """
    taken = set() if taken is None else taken
    with ExitStack() as stack:
        ports = []
        while len(ports) < count:
            s = stack.enter_context(socket.socket())
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            if port not in (6379, 8265, 10001, 52365) and port not in ports and port not in taken:
                ports.append(port)
        taken.update(ports)
        return ports


@contextmanager
def frozen(pids: list[int]):
    """`pids` stopped (SIGSTOP) inside the block and going on again (SIGCONT) after it."""
    assert pids, "nothing to freeze"
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:  # it died meanwhile (killed by what the test stopped)
                pass


def _carries(pid: int, marker: str) -> bool:
    """Whether process `pid` has this cluster marker in its environment."""
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f"{MARKER}={marker}".encode() in f.read().split(b"\0")


def _pids_of(sid: int | None = None, marker: str | None = None) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid == os.getpid():
            continue
        try:
            if sid is not None and os.getsid(pid) == sid:
                found.append(pid)
                continue
            if marker is not None and _carries(pid, marker):
                found.append(pid)
        except (OSError, ProcessLookupError):
            continue
    return found


def _is_running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _raylet_flags(sid: int) -> dict[str, str]:
    """The `--name=value` flags of the raylet among session `sid`'s processes ({} while none)."""
    for pid in _pids_of(sid=sid):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if args and args[0].endswith("raylet"):
            return dict(arg.split("=", 1) for arg in args if arg.startswith("--") and "=" in arg)
    return {}


class LocalCluster:
    def __init__(self, nodes: list[NodeSpec], dashboard: bool = True, token_auth: bool = True,
                 head_env: dict[str, str] | None = None, dashboard_host: str = "127.0.0.1",
                 bin_dir: Path | None = None, log_monitor: bool = True):
        self.specs = nodes
        # Ray's log monitor on each node (on by default, as Ray has it) relays the workers'
        # output to the drivers that ask for it (`log_to_driver`). A module whose drivers ask
        # for none, which reads no session directory, job log or bundle, starts its nodes
        # without one (`ray start --include-log-monitor false`): about 0.9 CPU-s per node
        # started and 0.6 % of a core per node while it runs (tests/README.md).
        self.log_monitor = log_monitor
        # The venv whose `ray` starts the nodes and whose python runs drivers: another Ray
        # release's (tests/ray_venvs.py), or rldoctor's own by default.
        self.bin = Path(bin_dir) if bin_dir else BIN
        self.python = str(self.bin / "python")
        self.dashboard = dashboard
        self.dashboard_host = dashboard_host  # "0.0.0.0": the dashboard on every interface
        self.token_auth = token_auth
        self.head_env = head_env or {}
        self.marker = uuid.uuid4().hex
        self.root = Path(tempfile.mkdtemp(prefix="rldc-", dir="/tmp"))
        self.temp_dir = self.root / "ray"
        self.temp_dir.mkdir()
        self.scratch = self.root / "scratch"
        self.scratch.mkdir()
        self.home = self.root / "home"
        self.home.mkdir()
        self.token_path = self.root / "auth_token"
        self.token = secrets.token_hex(24)
        self.token_path.write_text(self.token)
        self.nodes: list[Node] = []
        self._ports: set[int] = set()  # every port handed to this cluster's nodes
        self.gcs_port, self.dashboard_port, self.client_port = free_ports(3, self._ports)
        self._stopped = False

    # -- addresses and environment for clients of this cluster ---------------------------
    def node_ip(self, index: int) -> str:
        return self.specs[index].ip or loopback(10 + index)

    @property
    def client_prefix(self) -> list[str]:
        """What a driver or CLI of this cluster runs under: the head's host (its prefix)."""
        return list(self.specs[0].command_prefix)

    @property
    def address(self) -> str:
        return f"{self.node_ip(0)}:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def job_status(self, submission_id: str) -> str:
        """A submitted job's status from the Jobs API ("?" while it cannot be read): what
        `ray job status` shows, whose printed wording changes between Ray releases."""
        import json
        import urllib.request

        request = urllib.request.Request(f"{self.dashboard_url}/api/jobs/{submission_id}",
                                         headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                return json.loads(reply.read()).get("status") or "?"
        except (OSError, ValueError):
            return "?"

    def client_env(self, **extra: str) -> dict[str, str]:
        """Environment for a driver or CLI of this cluster (token auth, isolated temp dir)."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("RAY_") and k != MARKER}
        env["RAY_TMPDIR"] = str(self.root)
        env["HOME"] = str(self.home)  # never the real ~/.ray or ~/ray_results
        if self.token_auth:
            env["RAY_AUTH_MODE"] = "token"
            env["RAY_AUTH_TOKEN_PATH"] = str(self.token_path)
        else:
            env["RAY_AUTH_MODE"] = "disabled"
        env.update(extra)
        return env

    def run_driver(self, code: str, timeout: float = 120, expect_lines: int = 0) -> str:
        """Run a short Python driver against this cluster (token auth and all).

        Returns what the driver printed after "=> " on its lines (Ray prints cluster
        events such as "(raylet) A worker died ..." to a driver's stdout too). With
        `expect_lines`, fewer such lines is an error that shows the driver's output.
        """
        # A result line goes out in one write of its own, on a line of its own: Ray's
        # "(raylet) ..." notices come from another thread and may land inside a print's
        # several writes (seen: "...OOM killing.=>" then " 29785 ActorDiedError").
        prologue = ("import ray, logging, os, builtins\n"
                    "def print(*args, sep=' ', end='\\n', **kw):\n"
                    "    text = sep.join(map(str, args))\n"
                    "    if text.startswith('=>') and not kw.get('file'):\n"
                    "        os.write(1, ('\\n' + text + end).encode())\n"
                    "    else:\n"
                    "        builtins.print(*args, sep=sep, end=end, **kw)\n"
                    f"ray.init(address={self.address!r}, namespace='drivers', "
                    "logging_level=logging.ERROR, log_to_driver=False)\n")
        # -u: a driver whose cluster lost a worker may leave through Ray's own quick exit,
        # which skips the flush of a buffered stdout.
        proc = subprocess.run([*self.client_prefix, self.python if self.bin != BIN else sys.executable,
                               "-u", "-c", prologue + code],
                              capture_output=True, text=True, timeout=timeout,
                              env=self.client_env())
        if proc.returncode:
            raise RuntimeError(f"driver failed:\n{code}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
        # A line of Ray's own (a warning without its newline) may come first on the line.
        lines = [line[line.index("=> ") + 3:] for line in proc.stdout.splitlines()
                 if "=> " in line]
        if len(lines) < expect_lines:
            raise RuntimeError(f"driver printed {len(lines)} of {expect_lines} '=> ' line(s) "
                               f"(exit {proc.returncode}):\n{proc.stdout[-2000:]}\n"
                               f"{proc.stderr[-3000:]}")
        return "\n".join(lines)

    def _node_env(self, spec: NodeSpec, head: bool) -> dict[str, str]:
        env = self.client_env()
        env[MARKER] = self.marker
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        env["TMPDIR"] = str(self.scratch)  # Ray's helpers' temp files go away with the cluster
        if head:
            env.update(self.head_env)
        env.update(spec.env)
        return env

    # -- lifecycle --------------------------------------------------------------------------
    def _start_node(self, index: int, spec: NodeSpec) -> subprocess.Popen:
        head = index == 0
        agent, agent_grpc, metrics, runtime_env = free_ports(4, self._ports)
        # Each node gets its own loopback address (127.0.0.1 itself Ray swaps for the
        # host's public IP): nodes look like distinct hosts and traffic never leaves lo.
        args = [str(self.bin / "ray"), "start", "--node-ip-address", self.node_ip(index),
                "--num-cpus", str(spec.num_cpus),
                "--object-store-memory", str(spec.object_store_memory),
                "--dashboard-agent-listen-port", str(agent),
                "--dashboard-agent-grpc-port", str(agent_grpc),
                "--metrics-export-port", str(metrics),
                "--runtime-env-agent-port", str(runtime_env),
                "--disable-usage-stats"]
        if not self.log_monitor:
            args += ["--include-log-monitor", "false"]
        if spec.labels:
            args += ["--labels", ",".join(f"{k}={v}" for k, v in spec.labels.items())]
        if spec.resources:
            import json

            args += ["--resources", json.dumps(spec.resources)]
        if head:
            args += ["--head", "--port", str(self.gcs_port), "--temp-dir", str(self.temp_dir),
                     "--ray-client-server-port", str(self.client_port),
                     "--dashboard-host", self.dashboard_host]
            # A port of its own even without the dashboard: Ray 2.60 then still starts
            # dashboard.py (headless), on 8265 unless told otherwise.
            args += ["--include-dashboard", "true" if self.dashboard else "false",
                     "--dashboard-port", str(self.dashboard_port)]
        else:
            args += ["--address", self.address]
        args += spec.extra_args
        args = [*spec.command_prefix, *args]  # each prefix execs: the pid stays the node's
        if spec.cgroup:  # a shell moves itself into the group, then becomes `ray start`
            args = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', spec.cgroup, *args]
        log = self.root / f"node{index}.log"
        proc = subprocess.Popen(args, env=self._node_env(spec, head), stdout=log.open("w"),
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.nodes.append(Node(spec=spec, sid=proc.pid, index=index, log=log))
        return proc

    def start(self, timeout_s: float = 90) -> "LocalCluster":
        atexit.register(self.stop)
        try:
            # The head, then every worker node side by side (tests/README.md, "Starting
            # clusters"); a node whose raylet missed Ray's register deadline is started again.
            self._start_with_a_retry([0], timeout_s)
            if len(self.specs) > 1:
                self._start_with_a_retry(list(range(1, len(self.specs))), timeout_s)
            self._learn_node_ids()
        except BaseException:
            self.stop()
            raise
        return self

    # What `ray start` says when its raylet did not register with the GCS in time: seen now
    # and then on a loaded 2-core host (a GetAllNodeInfo past its 30 s deadline), for a head
    # as for a worker, in clusters that start fine the next time.
    _REGISTRATION_TIMED_OUT = ("timed out during startup", "Failed to get node info",
                               "GCS cannot find the node")

    def _start_with_a_retry(self, indices: list[int], timeout_s: float) -> None:
        """Start the nodes `indices` together; once more, on fresh ports and one at a time, each
        whose raylet's registration timed out."""
        again = {}
        for index, failure in self._start_together(indices, timeout_s).items():
            if not any(words in failure for words in self._REGISTRATION_TIMED_OUT):
                raise RuntimeError(failure)
            again[index] = failure
        for index, first in again.items():
            [failed] = [n for n in self.nodes if n.index == index]
            self.nodes.remove(failed)
            _kill(_pids_of(sid=failed.sid), signal.SIGKILL)
            if index == 0:  # the head: its GCS and dashboard on ports of their own
                self.gcs_port, self.dashboard_port, self.client_port = free_ports(3, self._ports)
            print(f"localcluster: node {index} did not register, starting it again:\n"
                  f"{first[-600:]}", file=sys.stderr)
        for index in again:  # one at a time now: the host or its GCS is slow at this moment
            for failure in self._start_together([index], timeout_s).values():
                raise RuntimeError(failure)

    def _start_together(self, indices: list[int], timeout_s: float) -> dict[int, str]:
        """`ray start` for each node of `indices`, side by side; waits for all of them. Returns
        the failures: node index -> what went wrong.

        Each node's `ray start` names its raylet and object store sockets (and log files) in the
        shared temp dir by the first free number, so the next node starts once the previous
        one's sockets exist: started at the same instant, two nodes took the same names and one
        of them never registered (half of the 3-node starts on this host)."""
        deadline = time.monotonic() + timeout_s
        procs = {}
        for index in indices:
            procs[index] = self._start_node(index, self.specs[index])
            if index != indices[-1]:
                self._wait_for_sockets(index, procs[index], deadline)
        self.nodes.sort(key=lambda node: node.index)
        failures = {}
        for index, proc in procs.items():
            try:
                self._wait(proc, max(0.1, deadline - time.monotonic()), timeout_s)
            except RuntimeError as exc:
                failures[index] = str(exc)
        return failures

    def _wait_for_sockets(self, index: int, proc: subprocess.Popen, deadline: float) -> None:
        """Until node `index`'s raylet has made its sockets (or its `ray start` ended)."""
        node = next(n for n in self.nodes if n.index == index)
        while time.monotonic() < deadline and proc.poll() is None:
            flags = _raylet_flags(node.sid)
            sockets = [flags.get("--raylet_socket_name"), flags.get("--store_socket_name")]
            if all(sockets) and all(os.path.exists(path) for path in sockets):
                return
            time.sleep(0.05)

    def add_node(self, spec: NodeSpec, timeout_s: float = 90) -> Node:
        """Start one more worker node on the running cluster; returns it (with its node id)."""
        self.specs.append(spec)
        self._wait(self._start_node(len(self.nodes), spec), timeout_s)
        self._learn_node_ids()
        return self.nodes[-1]

    def _wait(self, proc: subprocess.Popen, timeout_s: float, budget_s: float | None = None) -> None:
        try:
            code = proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"`ray start` did not finish in {budget_s or timeout_s}s; "
                               f"see {self.root}") from None
        if code != 0:
            node = next(n for n in self.nodes if n.sid == proc.pid)
            tail = node.log.read_text()[-2000:] if node.log else ""
            raise RuntimeError(f"`ray start` for node {node.index} exited {code}:\n{tail}")

    def _learn_node_ids(self) -> None:
        """Map each node we started to its Ray node id, through its raylet's session."""
        for node in self.nodes:
            node.node_id = _raylet_flags(node.sid).get("--node_id", node.node_id)

    def log_suffix(self, index: int) -> str:
        """The suffix of node `index`'s log files in the shared temp dir ("" for raylet.out,
        ".2" for raylet.2.out): Ray numbers them in the order the nodes came up, which for
        nodes started side by side is not their index."""
        socket = _raylet_flags(self.nodes[index].sid).get("--raylet_socket_name")
        if socket is None:
            raise RuntimeError(f"node {index} has no raylet to read its log names from")
        return socket.rsplit("/", 1)[1][len("raylet"):]

    def kill_node(self, index: int, sig: int = signal.SIGKILL) -> str:
        """Kill every process of one node (raylet, agents, workers) with `sig`; wait until gone."""
        node = self.nodes[index]
        pids = _pids_of(sid=node.sid)
        if not pids:
            raise RuntimeError(f"node {index} has no processes left to kill")
        _kill(pids, sig)
        deadline = time.monotonic() + 10
        while sig == signal.SIGKILL and time.monotonic() < deadline:
            alive = [p for p in pids if _is_running(p)]
            if not alive:
                break
            time.sleep(0.05)
        else:
            if sig == signal.SIGKILL:
                raise RuntimeError(f"node {index}: processes {alive} survived SIGKILL")
        return node.node_id

    def owns(self, pid: int) -> bool:
        """Whether process `pid` is one of this cluster's (it carries the cluster's marker)."""
        try:
            return _carries(pid, self.marker)
        except OSError:
            return False

    def pids(self, index: int, program: str) -> list[int]:
        """Pids of node `index`'s processes whose command line names `program` (e.g. "raylet",
        "dashboard/dashboard.py")."""
        found = []
        for pid in _pids_of(sid=self.nodes[index].sid):
            try:
                args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(arg.decode(errors="replace").endswith(program) for arg in args[:2]):
                found.append(pid)
        return found

    def processes(self) -> list[int]:
        pids = set(_pids_of(marker=self.marker))
        for node in self.nodes:
            pids.update(_pids_of(sid=node.sid))
        return sorted(pids)

    def cpu_seconds(self) -> float:
        """CPU seconds this cluster's processes (GCS, raylets, dashboard, workers, probes) used."""
        import psutil

        total = 0.0
        for pid in self.processes():
            try:
                t = psutil.Process(pid).cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                continue
        return total

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        # SIGKILL at once: a test cluster keeps nothing worth a graceful exit (a test copies
        # what it reads, a session directory, before the stop; the root goes next), and on
        # SIGTERM only Ray's Python processes leave, in about 1.5 s a cluster, while the GCS
        # server, the raylets and the runtime-env agents stay until killed anyway. A second
        # sweep takes a worker that a raylet forked while the first one ran.
        for _ in range(2):
            pids = self.processes()
            _kill(pids, signal.SIGKILL)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and any(_is_running(pid) for pid in pids):
                time.sleep(0.05)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def three_nodes(zones=("zone-a", "zone-a", "zone-a"), **head_kwargs) -> LocalCluster:
    """The standard test and demo cluster: a head and two workers, one CPU each."""
    specs = [NodeSpec(num_cpus=1, labels={"ray.io/availability-zone": z}) for z in zones]
    return LocalCluster(specs, **head_kwargs)


def demo() -> int:
    """Start a 3-node cluster, run `rldoctor check` against it, then a PPO job with a hung
    env runner and the check that names it, then `rldoctor watch` scraped by Prometheus while
    a crash loop fires its alert (tests/demo_watch.py), then a preflight that stops a training
    that could never be placed, then a PPO job whose env raises
    (restarts off) diagnosed after the fact: RLD405 on the cluster, and the same from the head's
    session directory once the cluster is stopped; stop it whatever happens."""
    cluster = three_nodes()
    limited = shutil.which("prlimit") is not None
    if limited:  # a common systemd and container default: RLD107 warns about it
        cluster.specs[0].command_prefix = ["prlimit", "--nofile=1024:1024"]

    def on_signal(signum, frame):
        cluster.stop()
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    kept = None
    print(f"starting a 3-node Ray cluster (head + 2 workers) in {cluster.root}"
          + (", the head under `prlimit --nofile=1024:1024`" if limited else "") + " ...", flush=True)
    started = time.monotonic()
    try:
        cluster.start()
        print(f"cluster up at {cluster.address} in {time.monotonic() - started:.1f}s; "
              f"running: rldoctor check --address {cluster.address}\n", flush=True)
        code = subprocess.call([str(BIN / "rldoctor"), "check", "--address", cluster.address],
                               env=cluster.client_env())
        print(f"\nrldoctor exited {code}", flush=True)
        if code == 0:
            code = _demo_hung_runner(cluster)
        if code == 0:
            from demo_watch import demo_watch

            code = demo_watch(cluster)
        if code == 0:
            code = _demo_preflight(cluster)
        if code == 0:
            kept = Path(tempfile.mkdtemp(prefix="rldoctor-demo-logs-"))
            code = _demo_failed_training(cluster, kept)
        print(f"\nstopping the cluster ({time.monotonic() - started:.0f}s in all)", flush=True)
    finally:
        cluster.stop()
    if kept is not None:
        try:
            if code == 0:
                code = _demo_after_the_fact(kept)
        finally:
            shutil.rmtree(kept, ignore_errors=True)
    print(f"\ndemo done in {time.monotonic() - started:.0f}s", flush=True)
    return code


def _demo_hung_runner(cluster: LocalCluster) -> int:
    """A user's PPO job whose env runner 1 blocks forever in env.step(), then the check."""
    import json

    print("\nstarting a PPO job (tests/ppo_job.py: 2 env runners, runner 1's env blocks forever "
          "in step()) and checking again once the stuck call is past RLD605's 20 s floor ...",
          flush=True)
    job = subprocess.Popen([sys.executable, str(Path(__file__).with_name("ppo_job.py")),
                            "--address", cluster.address, "--runners", "2", "--hang-runner", "1"],
                           env=cluster.client_env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # Waits for the condition the step shows (the stuck call past RLD605's floor, as the
        # cluster reports it), not a time: on a busy host the job takes minutes to get there.
        deadline, stuck = time.monotonic() + 300, False
        while not stuck and time.monotonic() < deadline and job.poll() is None:
            quiet = subprocess.run([str(BIN / "rldoctor"), "check", "--address", cluster.address,
                                    "--only", "RLD605", "--format", "json"],
                                   env=cluster.client_env(), capture_output=True, text=True)
            try:
                stuck = any(f["code"] == "RLD605" for f in json.loads(quiet.stdout)["findings"])
            except (ValueError, KeyError):
                pass
            if not stuck:
                time.sleep(3)
        if not stuck:
            print("the PPO job's env runner was not seen stuck past RLD605's floor within 300 s "
                  f"(the job {'exited ' + str(job.returncode) if job.poll() is not None else 'runs'})",
                  flush=True)
        print(f"running: rldoctor check --address {cluster.address}\n", flush=True)
        code = subprocess.call([str(BIN / "rldoctor"), "check", "--address", cluster.address],
                               env=cluster.client_env())
        print(f"\nrldoctor exited {code} (1: it found the stuck runner)", flush=True)
        return 0 if code == 1 else 1
    finally:
        try:
            os.killpg(job.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        job.wait()


DEMO_JOB = "demo-warehouse-sensor"


def _demo_preflight(cluster: LocalCluster) -> int:
    """Before a training is submitted: `rldoctor preflight` of a PPO config that asks for 40 env
    runners (tests/targets/preflight/configs.py) on this 3-CPU cluster says it can never be
    placed (RLD901), so that job is never submitted."""
    target = "tests.targets.preflight.configs:too_many_runners"
    print(f"\nbefore submitting a PPO training of 40 env runners, running: rldoctor preflight "
          f"{target} --address {cluster.address}\n", flush=True)
    root = Path(__file__).resolve().parent.parent
    code = subprocess.call([str(BIN / "rldoctor"), "preflight", target, "--address",
                            cluster.address, "--timeout", "120"],
                           env=cluster.client_env(PYTHONPATH=str(root)), cwd=root)
    print(f"\nrldoctor exited {code} (1: this training would never be placed here, so it is "
          "not submitted)", flush=True)
    return 0 if code == 1 else 1


def _demo_failed_training(cluster: LocalCluster, keep: Path) -> int:
    """A PPO job submitted with `ray job submit`, RLlib's restarts off, whose env raises in step()
    on runner 1 (tests/failed_training.py): once Ray says FAILED, the check that names its root
    cause (RLD405, its chain), then the head's session directory copied as a log volume keeps it."""
    import json

    print(f"\nsubmitting a PPO job ({DEMO_JOB}: tests/failed_training.py, 2 env runners, RLlib's "
          "restarts off; runner 1's env raises RuntimeError in step()) with `ray job submit` and "
          "waiting until Ray says it FAILED ...", flush=True)
    ray = str(BIN / "ray")
    env = cluster.client_env()
    subprocess.run([ray, "job", "submit", "--address", cluster.dashboard_url, "--no-wait",
                    "--submission-id", DEMO_JOB, "--", sys.executable,
                    str(Path(__file__).with_name("failed_training.py")), "--runners", "2",
                    "--raise-runner", "1", "--iterations", "50"],
                   env=env, check=True, capture_output=True, timeout=120)
    deadline, state = time.monotonic() + 300, "?"
    while time.monotonic() < deadline:
        state = cluster.job_status(DEMO_JOB)
        if state in ("FAILED", "SUCCEEDED", "STOPPED"):
            break
        time.sleep(2)
    if state != "FAILED":
        print(f"the job did not fail as it should (its status: {state})", flush=True)
        return 1
    print(f"Ray's Jobs API says FAILED; running: rldoctor check --address {cluster.address} "
          "--only RLD405\n", flush=True)
    code = subprocess.call([str(BIN / "rldoctor"), "check", "--address", cluster.address,
                            "--only", "RLD405"], env=env)
    report = subprocess.run([str(BIN / "rldoctor"), "check", "--address", cluster.address,
                             "--only", "RLD405", "--format", "json"],
                            env=env, capture_output=True, text=True)
    try:
        [finding] = [f for f in json.loads(report.stdout)["findings"]
                     if f["subject"] == f"job:{DEMO_JOB}"]
    except (ValueError, KeyError):
        finding = None
    if finding:
        print("\nits chain, oldest first (evidence.chain in --format json):", flush=True)
        for link in finding["evidence"].get("chain") or []:
            print(f"  {link['time'] or '':>23}  {link['what']}", flush=True)
    session = (cluster.temp_dir / "session_latest").resolve()
    shutil.copytree(session, keep / session.name, symlinks=True,
                    ignore=shutil.ignore_patterns("sockets", "runtime_resources"),
                    ignore_dangling_symlinks=True)
    print(f"\nrldoctor exited {code} (1: it found the failed job); the head's session directory "
          f"copied to {keep} as a log volume keeps it", flush=True)
    return 0 if code == 1 and finding else 1


def _demo_after_the_fact(kept: Path) -> int:
    """The cluster is gone: the same diagnosis from the copied session directory."""
    print(f"\nthe cluster is gone; running: rldoctor check --from {kept} --only RLD405\n", flush=True)
    code = subprocess.call([str(BIN / "rldoctor"), "check", "--from", str(kept), "--only", "RLD405"])
    print(f"\nrldoctor exited {code} (1: the same root cause, read from the logs alone)", flush=True)
    return 0 if code == 1 else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["demo"]:
        sys.exit(demo())
    print(__doc__)
    sys.exit(2)
