"""Ray's own log lines, as data: what each line means, which releases write it, where, and
what it names.

Each `Entry` is one wording of one line Ray (or Python, gRPC, absl, NCCL inside a Ray
process) writes: a fixed `marker` (found with bytes.find before any regex runs), the
`pattern` with named groups for what the line names (node_id, ip, worker_id, pid, actor,
job, and the line's own facts), the Ray `releases` that write it, the `files` it appears
in, the rldoctor `code` it is evidence for, the `cause` in one line and the `fix`, both
formatted with the groups. A wording that changed between releases is two entries. An
entry with a `signal` is also counted under that key by the probes on a live node.

Sources: the format strings in Ray's source at its release tags (ray-project/ray:
gcs_node_manager.cc, node_manager.cc, agent_manager.cc, worker_pool.cc, file_system_monitor.cc,
util/logging.cc, _raylet.pyx, rllib/utils/actor_manager.py), the installed 2.60 wheel, and
lines users pasted in public issue threads (named in fixtures/userlogs/*/SOURCE).

`code` "by-process" means the code follows the process that wrote the line: a raylet's or
the GCS's crash is a node's death (RLD101), a worker's is a worker crash (RLD403).

Standard library only: the client-only install reads logs too, and the probes read a live
node's logs with it (rldoctor.node.fact_ray_logs), pickled by value onto the nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Where a line is written (the readers' file kinds, rldoctor.raylog.kinds).
WORKER = ("worker", "core_worker", "console-worker")
DRIVER = ("job_driver", "core_driver", "console", "other")
RAYLET = ("raylet", "console-raylet")
GCS = ("gcs", "console-gcs")
AGENT = ("agent", "runtime_env", "dashboard")
EVENTS = ("events",)
ANY = ("*",)


@dataclass(frozen=True)
class Entry:
    id: str
    marker: str
    pattern: str
    releases: str
    files: tuple
    code: str  # an RLD code, or "by-process"
    kind: str  # crash, exception, oom, agent, node-removed, heartbeat, gcs, disk, fds, ...
    cause: str
    fix: str
    names: tuple = ()  # what the line names (groups of `pattern`)
    severity: str = "fail"
    # the file kinds in which the line is not evidence (a healthy process writes it there)
    not_in: tuple = ()
    # a line that says something died without saying why: evidence only when no other line
    # of the input tells the cause
    consequence: bool = False
    # the key this line is counted under in a live node's `ray_logs.signals` (the probes'
    # reading, rldoctor.node.fact_ray_logs; RLD106, RLD107 and RLD305 read it)
    signal: str = ""
    compiled: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "compiled", re.compile(self.pattern))


_RAY_CHECK_FIX = ("A failed internal check is a bug in Ray or a state it did not expect: read the "
                  "stack after the line in {file}, search Ray's issues for the check's text, and "
                  "upgrade Ray (or report it with that stack). Restart the process's node.")
NATIVE_FIX = _NATIVE_FIX = ("A signal in a worker comes from native code (the env's simulator, a C extension, "
               "a CUDA library): run the env alone under `python -X faulthandler` to reproduce "
               "it, fix or pin that library, and in RLlib contain it with "
               "`config.fault_tolerance(restart_failed_sub_environments=True)`.")
_EXCEPTION_FIX = ("Fix the user's code where it raised ({exception}); reproduce it outside Ray "
                  "with the same config. RLlib's restarts only repeat a deterministic error.")
_NODE_FIX = ("Read the node's raylet.out and raylet.err (and the host's `dmesg`, the cloud's or "
             "Kubernetes' events) for why it went; replace the node, and keep RLlib's "
             "`restart_failed_env_runners=True` so a training survives a lost node.")
_OOM_FIX = ("Fewer or smaller workers per node (fewer env runners, smaller batches), more memory "
            "per node, or a fixed leak; `ray logs raylet.out -ip {ip}` lists what was killed. "
            "Raise `object_store_memory` only when the object store is what is full.")
_RUNTIME_ENV_FIX = ("Read runtime_env_setup-{job}.log and runtime_env_agent.log on the node for "
                    "the installer's own error; fix the runtime_env (package names, versions, "
                    "index reachable from every node) or bake the packages into the image.")
_FDS_FIX = ("Start Ray with a limit of at least 65535 open files: `ulimit -n 65535` before "
            "`ray start`, `LimitNOFILE=65535` in a systemd unit, `--ulimit nofile=65535:65535` "
            "for Docker; and look for a leak of sockets or files in the user's code.")
_THREADS_FIX = ("The process could not start a thread: raise the limit on processes/threads "
                "(`ulimit -u`, the container's pids limit, `kernel.threads-max`) and cap the "
                "threads of the env and its libraries (OMP_NUM_THREADS=1, torch.set_num_threads).")
_DISK_FIX = ("Free the file system that holds Ray's temp dir, logs and spilled objects (old "
             "session_* dirs under /tmp/ray, spilled objects, checkpoints), or move them to a "
             "larger disk: `ray start --temp-dir`, `--object-spilling-directory`.")
_GCS_LOST_FIX = ("The head's GCS died or could not be reached: read the head's gcs_server.out "
                 "and gcs_server.err for why (a crash, an OOM kill of the head, `ray stop`); "
                 "check the network between the nodes and the head's port 6379. With GCS fault "
                 "tolerance (external Redis) the raylets wait for its return.")
_AGENT_FIX = ("Read dashboard_agent.log and runtime_env_agent.log (and their .err) on that node "
              "for the agent's own error: a grpcio/aiohttp version Ray does not support, a port "
              "already taken (pin it with --dashboard-agent-listen-port / "
              "--runtime-env-agent-port), or the agent killed for memory; fix it and restart the "
              "node.")
_WORKERS_START_FIX = ("Read the node's python-core-worker-*.log and worker-*.err for why its "
                      "workers do not start or register; dump a hanging one with `py-spy dump "
                      "--pid`; repair the node's Python environment; raise "
                      "RAY_worker_register_timeout_seconds for slow but healthy starts; widen "
                      "--min-worker-port/--max-worker-port when it has no ports left.")
_GPU_FIX = ("Read the worker's .err for the CUDA/NCCL error before the crash: GPU memory "
            "(smaller batches or models, one process per GPU), a driver/CUDA/NCCL version "
            "mismatch between nodes, or a collective that timed out because one rank died "
            "(find that rank's own error). `NCCL_DEBUG=INFO` names the failing link.")

# The fix for a node's death, by what its death message says (first match wins).
NODE_DEATH_FIXES = (
    ("Runtime Env Agent", "runtime env agent", "The raylet could not reach its runtime env "
     "agent (the agent failed to start, crashed or was killed; a port conflict or a bad "
     "grpcio/aiohttp is the usual cause): " + _AGENT_FIX),
    ("agent", "agent", "One of the node's Ray agents failed and the raylet fate-shares with it: "
     + _AGENT_FIX),
    ("health check", "heartbeat", "The GCS stopped hearing from the node's raylet: the host "
     "died or froze, the raylet crashed (its raylet.err) or was killed (the kernel's OOM "
     "killer: `dmesg`), or the network to the head failed. " + _NODE_FIX),
    ("heartbeat", "heartbeat", "The GCS stopped hearing from the node's raylet: the host died "
     "or froze, the raylet crashed or was killed, or the network to the head failed. " + _NODE_FIX),
    ("preempt", "preempted", "The node was preempted (a spot/preemptible instance taken back): "
     "keep RLlib's restarts on and checkpoint often, or use on-demand nodes for the head and "
     "the learner."),
    ("idle", "idle", "The autoscaler removed an idle node: expected, unless work was still "
     "placed there (raise idle_timeout_minutes)."),
    ("SIGTERM", "stopped", "The raylet was stopped with SIGTERM (`ray stop`, a person, or "
     "Kubernetes ending the pod): a stop someone asked for, not a crash."),
    ("autoscaler", "stopped", "The autoscaler terminated the node: expected when scaling down."),
    ("memory", "memory", "The node ran out of memory: " + _OOM_FIX),
)


def _e(*args, **kw) -> Entry:
    return Entry(*args, **kw)


ENTRIES: tuple[Entry, ...] = (
    # -- a process killed by a signal ------------------------------------------------------
    _e("py-fatal-signal", "Fatal Python error: ",
       r"Fatal Python error: (?P<signal>Segmentation fault|Aborted|Bus error|Floating point "
       r"exception|Illegal instruction)",
       "all (Python's faulthandler, enabled in every Ray worker)", WORKER + DRIVER, "by-process",
       "crash", "{process} died: {signal} in native code (faulthandler's dump in {file})",
       _NATIVE_FIX, ("signal",)),
    # SIGTERM, SIGINT and SIGHUP ask a process to end (a user's `ray job stop`, Ray's own
    # shutdown, a node drained): the handler dumps for them too, and that is no crash
    _e("absl-signal", "*** SIG", r"\*\*\* (?P<signal>SIG(?!(?:TERM|INT|HUP)\b)[A-Z]+) received at "
       r"time=(?P<epoch>\d+)",
       "2.0-2.60 (absl failure signal handler)", ANY, "by-process", "crash",
       "{process} died of {signal} (its crash dump in {file})",
       "A signal in Ray's own C++ process is a bug or a host fault: read the stack after the line "
       "in {file}, search Ray's issues for its top frames, upgrade Ray; SIGABRT after "
       "`Check failed` is that check. " + _NODE_FIX, ("signal",)),
    _e("abort-terminate", "terminate called after throwing",
       r"terminate called after throwing an instance of '(?P<exception>[^']+)'",
       "all (the C++ runtime)", ANY, "by-process", "crash",
       "{process} aborted on an uncaught C++ exception ({exception})",
       _NATIVE_FIX, ("exception",)),
    _e("core-dumped", "(core dumped)", r"(?P<signal>Segmentation fault|Aborted|Bus error) "
       r"\(core dumped\)", "all (the shell that ran the process)", ANY, "by-process", "crash",
       "{process} died: {signal}, and dumped core", _NATIVE_FIX, ("signal",)),
    _e("ray-check", "Check failed", r"Check failed: (?P<check>.+?)\s*$",
       "all; 2.50+ prefix it with \"An unexpected system state has occurred\"", ANY,
       "by-process", "crash", "{process} aborted on a failed internal check: {check}",
       _RAY_CHECK_FIX, ("check",)),
    _e("glog-fatal", "", r"^F\d{4} \d\d:\d\d:\d\d[.\d]* +\d+ (?P<where>[\w.]+:\d+)\] "
       r"(?P<message>.+)$", "all (glog/gRPC fatal lines on stderr)", RAYLET + GCS + WORKER,
       "by-process", "crash", "{process} stopped on a fatal error at {where}: {message}",
       _RAY_CHECK_FIX, ("where", "message")),
    _e("spdlog-fatal", "", r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d{3} [CF] \d+ \d+\] "
       r"(?:\(\w+\) )?(?:[\w./-]+:\d+: )?(?P<message>.+)$", "2.0-2.60 (RAY_LOG(FATAL))",
       RAYLET + GCS + WORKER, "by-process", "crash",
       "{process} stopped on a fatal error: {message}", _RAY_CHECK_FIX, ("message",)),
    # -- exceptions in user code ------------------------------------------------------------
    _e("creation-task", "Exception raised in creation task",
       r"Exception raised in creation task: (?P<message>.*)",
       "1.x-2.60 (_raylet.pyx)", WORKER + DRIVER, "RLD405", "exception",
       "an actor's __init__ raised {exception}{in_who}", _EXCEPTION_FIX, ("exception",)),
    _e("creation-task-exit", "exception in the initialization method",
       r"Worker exits because there was an exception in the initialization method",
       "2.4-2.60 (_raylet.pyx, the worker's exit detail)", ANY, "RLD405", "exception",
       "an actor's __init__ raised{in_who}: the worker exited", _EXCEPTION_FIX),
    _e("rllib-apply", "Worker exception caught during",
       r"Worker exception caught during `?apply\(\)`?: ?(?P<message>.*)",
       "2.3-2.60 (rllib/utils/actor_manager.py)", WORKER + DRIVER, "RLD405", "exception",
       "an RLlib env runner or learner raised {exception}{in_who}", _EXCEPTION_FIX,
       ("exception",)),
    _e("rllib-out-of-service", "out of service",
       r"Ray error \((?P<message>.*)\), taking actor (?P<index>\d+) out of service",
       "2.3-2.60 (rllib/utils/actor_manager.py)", WORKER + DRIVER, "RLD405", "exception",
       "RLlib took its actor {index} out of service after it failed{in_who}", _EXCEPTION_FIX,
       ("index",), severity="warn", consequence=True),
    _e("rllib-env-step", "Environment step failed",
       r"Environment step failed(?P<message>.*)", "2.40-2.60 (rllib/env/env_runner.py)",
       WORKER + DRIVER, "RLD405", "exception", "an RLlib env's step() raised{in_who}",
       _EXCEPTION_FIX),
    _e("rllib-env-step-old", "resulted in an error",
       r"(?P<what>Stepping|Resetting) the env resulted in an error",
       "2.3-2.39 (rllib/env/env_runner.py); reset: 2.40-2.60", WORKER + DRIVER, "RLD405",
       "exception", "an RLlib env raised while {what}{in_who}", _EXCEPTION_FIX, ("what",)),
    _e("rllib-all-eval-crashed", "resulted in all workers crashing",
       r"Calling `sample\(\)` on your remote evaluation worker\(s\) resulted in all workers "
       r"crashing", "2.3-2.60 (rllib/algorithms/algorithm.py)", WORKER + DRIVER, "RLD405",
       "exception", "every RLlib evaluation env runner crashed in sample()", _EXCEPTION_FIX),
    _e("rllib-no-healthy", "No healthy remote workers left",
       r"No healthy remote workers left", "2.3-2.39 (rllib/execution/rollout_ops.py)",
       WORKER + DRIVER, "RLD405", "exception",
       "RLlib had no healthy env runner left (every remote worker failed)", _EXCEPTION_FIX),
    _e("unhandled-error", "Unhandled error (suppress with",
       r"Unhandled error \(suppress with '?RAY_IGNORE_UNHANDLED_ERRORS=1'?\): (?P<message>.*)",
       "1.x-2.60 (_private/worker.py)", ANY, "RLD405", "exception",
       "a task or actor call failed and nobody read its result: {exception}", _EXCEPTION_FIX,
       ("exception",)),
    _e("ray-task-error", "ray::", r"(?:RayTaskError(?:\((?P<inner>\w+)\))?: )?ray::(?P<task>[\w.]+)"
       r"\(\) \(pid=(?P<pid>\d+), ip=(?P<ip>[\d.]+)", "1.x-2.60 (exceptions.py)", DRIVER,
       "RLD405", "exception", "the remote call {task} raised {exception}", _EXCEPTION_FIX,
       ("task", "pid", "ip"), consequence=True),
    # -- workers that died ------------------------------------------------------------------
    _e("worker-died-pushed", "A worker died or was killed while executing",
       r"A worker died or was killed while executing (?:a|the) task by an unexpected system "
       r"error.*?(?:Worker exit type: (?P<exit_type>\w+)(?: Worker exit detail: (?P<detail>.*))?)?$",
       "2.0-2.60 (node_manager.cc, pushed to the driver)", ANY, "RLD403", "crash",
       "a worker died while running a task ({exit_type}{detail_short})", _NATIVE_FIX,
       consequence=True),
    _e("actor-died", "The actor died unexpectedly before finishing this task",
       r"The actor died unexpectedly before finishing this task", "1.x-2.60 (exceptions.py)",
       ANY, "RLD403", "crash", "an actor's worker died{in_who} ({exit_type}{detail_short})",
       _NATIVE_FIX, consequence=True),
    _e("worker-eof", "Worker unexpectedly exits with a connection error code",
       r"Worker unexpectedly exits with a connection error code (?P<errno>\d+)",
       "2.0-2.60 (client_connection.cc / node_manager.cc)", ANY, "RLD403", "crash",
       "a worker vanished without a word (connection error code {errno}: killed with SIGKILL, "
       "by the kernel's OOM killer, or crashed)", "Check the host's `dmesg` for OOM kills "
       "(then see RLD402) and the worker's .err for a crash dump. " + _NATIVE_FIX, ("errno",),
       consequence=True),
    # -- the raylet and its agents -----------------------------------------------------------
    _e("agent-failed", "The raylet exited immediately because one Ray agent failed",
       r"The raylet exited immediately because one Ray agent failed, agent_name = "
       r"(?P<agent>\w+)", "2.7-2.60 (raylet/agent_manager.cc)", RAYLET + DRIVER, "RLD101",
       "agent", "the raylet exited because its {agent} failed (the raylet fate-shares with it)",
       _AGENT_FIX, ("agent",)),
    _e("agent-failed-old", "The raylet exited immediately because the Ray agent failed",
       r"The raylet exited immediately because the Ray agent failed",
       "2.0-2.6 (raylet/agent_manager.cc)", RAYLET + DRIVER, "RLD101", "agent",
       "the raylet exited because its dashboard agent failed (the raylet fate-shares with it)",
       _AGENT_FIX),
    _e("agent-timeout", "The raylet exited immediately because the runtime env agent timed out",
       r"The raylet exited immediately because the runtime env agent timed out",
       "2.10-2.60 (raylet/runtime_env_agent_client.cc)", RAYLET + DRIVER, "RLD101", "agent",
       "the raylet exited because its runtime env agent did not answer", _AGENT_FIX),
    _e("agent-exit", "Agent process with id",
       r"Agent process with (?:id|name) (?P<agent>[\w.]+) exited, (?:return value|exit code) "
       r"(?P<code>-?\d+)", "2.0-2.60 (raylet/agent_manager.cc)", RAYLET, "RLD101", "agent",
       "the node's {agent} exited with code {code}", _AGENT_FIX, ("agent", "code")),
    _e("marked-dead-raylet", "mistakenly been marked as dead",
       r"Exiting because this node manager has mistakenly been marked as dead by the GCS",
       "2.0-2.60 (raylet/node_manager.cc)", RAYLET + DRIVER, "RLD101", "heartbeat",
       "the raylet exited because the GCS had marked its node dead (missed health checks)",
       "The raylet was alive but too slow to answer the GCS's health checks: an overloaded "
       "host (CPU, memory, swap), a long GC pause, or a slow network to the head. Give the "
       "raylet room (fewer workers per node) and check the link. " + _NODE_FIX),
    _e("raylet-ipc-dead", "the local Raylet is dead",
       r"Exiting because the Raylet IPC connection failed and the local Raylet is dead",
       "2.50-2.60 (raylet_ipc_client.cc)", WORKER + DRIVER, "RLD101", "node-removed",
       "a worker exited because its node's raylet died", _NODE_FIX),
    _e("local-raylet-died", "The task's local raylet died",
       r"The task's local raylet died", "1.x-2.60 (exceptions.py)", ANY, "RLD101",
       "node-removed", "a task failed because its node's raylet died", _NODE_FIX),
    _e("node-died-task", "Task failed because the node it was running on is dead",
       r"Task failed because the node it was running on is dead or unavailable\. Node IP: "
       r"(?P<ip>[\d.]+), node ID: (?P<node_id>[0-9a-f]+)", "2.52-2.60 (normal_task_submitter.cc)",
       ANY, "RLD101", "node-removed", "a task failed because its node {ip} died", _NODE_FIX,
       ("ip", "node_id")),
    # -- the GCS: node removal, health checks ------------------------------------------------
    _e("node-removed-240", "Removing node, node name = ",
       r"Removing node, node name = (?P<node_name>\S+), death reason = (?P<reason>\w+), "
       r"death message = (?P<message>.*?)(?: node_id=(?P<node_id>[0-9a-f]{56}))?\s*$",
       "2.10-2.5x (gcs/gcs_server/gcs_node_manager.cc; node_id= appended by WithField)",
       GCS + DRIVER, "RLD101", "node-removed",
       "the GCS removed node {node_name} ({reason}): {message}", "", ("node_name", "reason",
                                                                     "message")),
    _e("node-removed-260", ", death message = ",
       r"(?:^|: ), death reason = (?P<reason>\w+), death message = (?P<message>.*?)"
       r"(?: node_id=(?P<node_id>[0-9a-f]+))?(?: node_name=(?P<node_name>\S+))?\s*$",
       "2.50-2.60 (gcs/gcs_node_manager.cc)", GCS + DRIVER, "RLD101", "node-removed",
       "the GCS removed a node ({reason}): {message}", "", ("reason", "message", "node_id")),
    _e("node-marked-dead", "has been marked dead because the detector",
       r"node id: (?P<node_id>[0-9a-f]+) and address: (?P<ip>[\d.]+)(?: and node name: "
       r"(?P<node_name>\S+))? has been marked dead because the detector has missed too many "
       r"heartbeats", "2.0-2.60 (gcs_node_manager.cc, pushed to drivers)", ANY, "RLD101",
       "heartbeat", "node {ip} was marked dead: the GCS missed too many of its heartbeats", "",
       ("node_id", "ip")),
    _e("node-marked-dead-old", "has been marked dead because the monitor",
       r"The node with (?:client|node) ID (?P<node_id>[0-9a-f]+) has been marked dead because "
       r"the monitor has missed too many heartbeats", "0.x-1.x (monitor.py)", ANY, "RLD101",
       "heartbeat", "a node was marked dead: the monitor missed too many of its heartbeats", "",
       ("node_id",)),
    _e("health-dead", "Node is dead because the health check failed",
       r"Node is dead because the health check failed\.?(?: node_id=(?P<node_id>[0-9a-f]+))?",
       "2.4-2.60 (gcs_health_check_manager.cc)", GCS, "RLD101", "heartbeat",
       "the GCS declared a node dead: its health checks failed", "", ("node_id",)),
    _e("health-failed", "Health check failed for node",
       r"Health check failed for node (?P<node_id>[0-9a-f]+)", "2.4-2.60 "
       "(gcs_health_check_manager.cc)", GCS, "RLD101", "heartbeat",
       "the GCS's health checks of a node failed", "", ("node_id",), severity="warn"),
    # -- the GCS itself ---------------------------------------------------------------------
    _e("gcs-lost", "Failed to connect to GCS within",
       r"Failed to connect to GCS within (?P<seconds>\d+) seconds",
       "2.0-2.60 (gcs_rpc_client.h / rpc_client.h)", ANY, "RLD101", "gcs",
       "a Ray process lost the GCS for {seconds} s and exited (the head's GCS died or was "
       "unreachable)", _GCS_LOST_FIX, ("seconds",)),
    _e("gcs-unreachable", "Failed to connect to GCS at address",
       r"Failed to connect to GCS at address (?P<address>\S+) within (?P<seconds>\d+) seconds",
       "2.0-2.60 (gcs_client.cc)", ANY, "RLD101", "gcs",
       "a Ray process could not reach the GCS at {address}", _GCS_LOST_FIX, ("address",),
       severity="warn"),
    _e("gcs-restarted", "Using existing cluster ID from external storage",
       r"Using existing cluster ID from external storage", "2.8-2.60 (gcs_server.cc)", GCS,
       "RLD101", "gcs", "the GCS restarted and recovered its state (GCS fault tolerance)",
       _GCS_LOST_FIX, severity="warn"),
    # -- memory: Ray's monitor, and what the kernel leaves --------------------------------
    _e("oom-summary", "killed due to memory pressure (OOM)",
       r"(?P<count>\d+) Workers \(tasks / actors\) killed due to memory pressure \(OOM\), "
       r"(?P<other>\d+) Workers crashed due to other reasons at node \(ID: (?P<node_id>[0-9a-f]+), "
       r"IP: (?P<ip>[\d.]+)\)", "2.2-2.60 (raylet/node_manager.cc)", RAYLET + DRIVER, "RLD402",
       "oom", "Ray's memory monitor killed {count} worker(s) on node {ip}", _OOM_FIX,
       ("count", "node_id", "ip")),
    _e("oom-kill-260", "were killed due to the node running low on memory",
       r"(?P<count>\d+) worker\(s\) were killed due to the node running low on memory",
       "2.55-2.60 (node_manager.cc)", ANY, "RLD402", "oom",
       "Ray's memory monitor killed {count} worker(s){on_ip}", _OOM_FIX, ("count",)),
    _e("oom-kill-old", "Task was killed due to the node running low on memory",
       r"Task was killed due to the node running low on memory", "2.2-2.54 (node_manager.cc)",
       ANY, "RLD402", "oom", "Ray's memory monitor killed a task's worker{on_ip}", _OOM_FIX),
    _e("oom-memory-on-node", "Memory on the node (IP: ",
       r"Memory on the node \(IP: (?P<ip>[\d.]+), ID: (?P<node_id>[0-9a-f]+)\)",
       "2.2-2.60 (node_manager.cc)", ANY, "RLD402", "oom",
       "Ray's memory monitor killed a worker on node {ip}", _OOM_FIX, ("ip", "node_id")),
    _e("oom-killing-260", "kill details:", r"Killing (?P<count>\d+) worker\(s\), kill details:",
       "2.56-2.60 (node_manager.cc)", RAYLET, "RLD402", "oom",
       "Ray's memory monitor killed {count} worker(s){on_ip}", _OOM_FIX, ("count",)),
    _e("oom-error", "OutOfMemoryError", r"(?:ray\.exceptions\.)?OutOfMemoryError: (?P<message>.*)",
       "2.2-2.60 (exceptions.py)", WORKER + DRIVER, "RLD402", "oom",
       "a task failed with OutOfMemoryError: {message}", _OOM_FIX, ("message",),
       not_in=("none",)),
    _e("k8s-memory", "may have exceeded K8s pod memory limits",
       r"The worker may have exceeded K8s pod memory limits", "2.10-2.60 (_raylet.pyx)", ANY,
       "RLD402", "oom", "a worker exited in a Kubernetes pod that may have hit its memory limit",
       "Check the pod's `lastState.terminated.reason` (OOMKilled) and raise the container's "
       "memory limit or run fewer workers per pod. " + _OOM_FIX),
    # -- runtime_env ------------------------------------------------------------------------
    _e("runtime-env-raylet", "Couldn't create a runtime environment for job",
       r"Couldn't create a runtime environment for job (?P<job>\w+)",
       "2.0-2.60 (raylet/worker_pool.cc)", RAYLET + DRIVER, "RLD404", "runtime-env",
       "the runtime_env of job {job} could not be created on this node", _RUNTIME_ENV_FIX,
       ("job",)),
    _e("runtime-env-agent", "Failed to create runtime env",
       r"Failed to create runtime env(?: for job (?P<job>\w+))?", "2.0-2.60 "
       "(runtime_env/agent/runtime_env_agent.py)", AGENT + RAYLET, "RLD404", "runtime-env",
       "the node's runtime env agent failed to create a runtime_env", _RUNTIME_ENV_FIX,
       ("job",)),
    _e("runtime-env-setup-error", "Failed to set up runtime environment",
       r"Failed to set up runtime environment", "1.x-2.60 (exceptions.py RuntimeEnvSetupError)",
       ANY, "RLD404", "runtime-env", "a task or actor failed: its runtime_env could not be set up",
       _RUNTIME_ENV_FIX),
    _e("runtime-env-job", "runtime_env setup failed",
       r"runtime_env setup failed", "2.0-2.60 (dashboard/modules/job/job_manager.py)", ANY,
       "RLD404", "runtime-env", "a job failed: its runtime_env setup failed", _RUNTIME_ENV_FIX),
    # -- the host: disk, open files, threads -----------------------------------------------
    _e("disk-full", "% full, available space: ",
       r"(?P<path>\S+) is over (?P<percent>\d+)% full, available space: (?P<available>\d+);",
       "2.0-2.3x (common/file_system_monitor.cc: bytes)", ANY, "RLD305", "disk",
       "the file system of {path} is over {percent}% full ({available} bytes left)", _DISK_FIX,
       ("path", "percent", "available"), signal="disk_over_capacity"),
    _e("disk-full-units", "% full, available space: ",
       r"(?P<path>\S+) is over (?P<percent>\d+)% full, available space: (?P<available>[\d.]+ ?"
       r"[KMGT]i?B)", "2.4x-2.60 (common/file_system_monitor.cc: with a unit)", ANY, "RLD305",
       "disk", "the file system of {path} is over {percent}% full ({available} left)", _DISK_FIX,
       ("path", "percent", "available"), signal="disk_over_capacity"),
    _e("out-of-disk", "OutOfDiskError", r"OutOfDiskError", "2.0-2.60 (exceptions.py)", ANY,
       "RLD305", "disk", "an object could not be created: the local disk is full", _DISK_FIX),
    _e("no-space", "No space left on device", r"No space left on device",
       "all (the OS, errno 28)", ANY, "RLD305", "disk", "a write failed: no space left on device",
       _DISK_FIX),
    _e("accept4-fds", "Too many open files", r"(?P<what>Failed accept4|accept)?.*Too many open files",
       "all (gRPC's tcp_server_posix.cc, the OS's errno 24)", ANY, "RLD107", "fds",
       "{process} ran out of file descriptors (\"Too many open files\")", _FDS_FIX,
       signal="too_many_open_files"),
    _e("fd-limit-grpc", "File descriptor limit reached",
       r"File descriptor limit reached", "2.4x-2.60 (gRPC's tcp_server_posix.cc, newer gRPC)",
       ANY, "RLD107", "fds", "{process} reached its open-files limit (gRPC: \"File descriptor "
       "limit reached\")", _FDS_FIX, signal="too_many_open_files"),
    _e("threads", "can't start new thread", r"can't start new thread", "all (Python)", ANY,
       "RLD107", "threads", "{process} could not start a thread (the process/thread limit)",
       _THREADS_FIX),
    _e("threads-cpp", "Resource temporarily unavailable",
       r"(?:pthread_create|Thread creation|thread).*Resource temporarily unavailable",
       "all (the OS, EAGAIN on thread creation)", ANY, "RLD107", "threads",
       "{process} could not start a thread (the process/thread limit)", _THREADS_FIX),
    # -- workers that cannot start ---------------------------------------------------------
    _e("workers-not-registered", "have not registered within the timeout",
       r"(?:worker process\((?P<pid>\d+)\) )?have not registered within the timeout",
       "2.0-2.60 (raylet/worker_pool.cc)", RAYLET, "RLD106", "workers-start",
       "the raylet's new workers do not register within the timeout (hanging or crashing at start)",
       _WORKERS_START_FIX, ("pid",), severity="warn", signal="workers_not_registered"),
    _e("no-available-ports", "No available ports",
       r"No available ports", "2.0-2.60 (raylet/worker_pool.cc)", RAYLET,
       "RLD106", "workers-start", "the raylet has no port left to start a worker on",
       _WORKERS_START_FIX, severity="warn", signal="no_available_ports"),
    # -- object store -----------------------------------------------------------------------
    _e("store-full", "in object store because it is full",
       r"Failed to put object (?P<object>[0-9a-f]+) in object store because it is full",
       "1.x-2.60 (_raylet.so)", ANY, "RLD301", "object-store",
       "an object could not be put: the object store is full",
       "Find the owners (`ray memory --group-by STACK_TRACE --sort-by OBJECT_SIZE`), release "
       "leaked references, send less in flight, or raise --object-store-memory."),
    _e("store-full-error", "ObjectStoreFullError", r"ObjectStoreFullError", "1.x-2.60", ANY,
       "RLD301", "object-store", "a task failed with ObjectStoreFullError",
       "Find the owners (`ray memory --group-by STACK_TRACE --sort-by OBJECT_SIZE`), release "
       "leaked references, send less in flight, or raise --object-store-memory."),
    _e("spill-failed", "Failed to spill objects", r"Failed to spill objects", "1.x-2.60 "
       "(local_object_manager.cc)", ANY, "RLD302", "spill",
       "the raylet failed to spill objects to disk",
       "Spill to a large, fast disk with --object-spilling-directory and keep it below 95% "
       "full; put less in the object store."),
    # -- versions, ports ----------------------------------------------------------------------
    _e("version-mismatch", "Version mismatch: ", r"Version mismatch: (?P<message>.*)",
       "1.x-2.60 (_private/utils.py check_version_info)", ANY, "RLD102", "version",
       "a process's Ray or Python differs from the cluster's: {message}",
       "Install identical Ray and Python versions on every node and the driver (one image or "
       "lock file)."),
    # Not a bind that is tried again: Ray 2.60's agent logs "Failed to bind to port P (attempt
    # 1/6). Retrying in 0.17s. Error: ... address already in use" and binds on a later attempt
    # (seen beside another cluster's start on one host); when every attempt fails, the
    # exception it logs last still says "already in use" on a line of its own.
    _e("port-bind", "lready in use",
       r"(?i)^(?!.*\bretrying in\b).*(?:bind|address).*already in use", "all (the OS, EADDRINUSE)",
       RAYLET + GCS + ("agent", "runtime_env"), "RLD101", "port", "{process} could not bind its port: another process holds it",
       "Free the port (a Ray left running from before: `ray stop` on that host, or another "
       "service) or give Ray other ports (--port, --node-manager-port, "
       "--dashboard-agent-listen-port, --runtime-env-agent-port, --min-worker-port)."),
    # -- GPU ------------------------------------------------------------------------------------
    _e("nccl", "NCCL", r"(?P<message>(?:ncclSystemError|ncclInternalError|ncclUnhandledCudaError|"
       r"ncclRemoteError|ncclInvalidUsage|NCCL error|NCCL communicator was aborted|"
       r"Watchdog caught collective operation timeout).*)", "all (NCCL / torch.distributed)",
       WORKER + DRIVER, "RLD403", "gpu", "a worker's NCCL collective failed: {message}", _GPU_FIX,
       ("message",)),
    _e("cuda", "CUDA", r"(?P<message>(?:CUDA error: |CUDA out of memory|CUDA driver version is "
       r"insufficient|CUBLAS_STATUS_\w+|cudaErrorIllegalAddress|an illegal memory access was "
       r"encountered).*)", "all (CUDA / torch)", WORKER + DRIVER, "RLD403", "gpu",
       "a worker's CUDA call failed: {message}", _GPU_FIX, ("message",)),
)

# Event labels (events/event_*.log, JSON lines) that are evidence by themselves.
EVENT_LABELS = {
    "RAY_NODE_REMOVED": ("event-node-removed", "RLD101", "node-removed",
                         "the GCS removed node {ip}: {message}"),
    "RAYLET_MARKED_DEAD": ("event-raylet-marked-dead", "RLD101", "heartbeat",
                           "the raylet exited: the GCS had marked its node dead"),
    "RAY_FATAL_CHECK_FAILED": ("event-fatal", "by-process", "crash",
                               "{process} stopped on a fatal error: {message}"),
    "Out of Memory": ("event-oom", "RLD402", "oom", "Ray's memory monitor killed workers{on_ip}"),
}

# What a line names wherever it says it, whatever entry it matched (first match wins).
NAMES = (
    ("ip", re.compile(r"\(IP: (?P<v>[\d.]+), ID: [0-9a-f]{56}\)")),
    ("node_id", re.compile(r"\(IP: [\d.]+, ID: (?P<v>[0-9a-f]{56})\)")),
    ("node_id", re.compile(r"(?:node[ _]id|Node I[Dd]|node I[Dd])(?: = |: ?|=)(?P<v>[0-9a-f]{56})")),
    ("ip", re.compile(r"(?:Node IP|Worker IP address|address)(?: = |: )(?P<v>\d+\.\d+\.\d+\.\d+)")),
    ("ip", re.compile(r"\bip[=:] ?(?P<v>\d+\.\d+\.\d+\.\d+)")),
    ("worker_id", re.compile(r"(?:worker[ _]id|Worker ID|worker ID)(?: = |: ?|=)(?P<v>[0-9a-f]{56})")),
    ("pid", re.compile(r"(?:Worker PID: |\bpid=)(?P<v>\d+)")),
    ("job", re.compile(r"(?:job[ _]id|Job ID|job ID)(?: = |: ?|=)(?P<v>[0-9a-f]{8})\b")),
    ("actor_id", re.compile(r"(?:actor[ _]id|Actor\()(?: = |: ?|=)?(?P<v>[0-9a-f]{32})")),
)


def names_in(text: str) -> dict:
    out: dict = {}
    for key, pattern in NAMES:
        if key in out:
            continue
        m = pattern.search(text)
        if m:
            out[key] = m.group("v")
    return out


BY_ID = {e.id: e for e in ENTRIES}
MARKERS = tuple(sorted({e.marker.encode() for e in ENTRIES if e.marker}))
# entries without a fixed marker: matched on lines of .err files and pasted text only
UNMARKED = tuple(e for e in ENTRIES if not e.marker)
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?(?P<type>[A-Z]\w*(?:Error|Exception|Exit|Interrupt|"
                             r"Warning|Failure))(?:\((?P<inner>\w+)\))?(?::\s?(?P<msg>.*))?$")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<func>\S+)')
_NOT_USER = re.compile(r"(site-packages|dist-packages|/lib/python\d[\d.]*/|<frozen |^<)")


def exception_in(text: str):
    """(type, message) when `text` is a Python exception's last line, else None."""
    m = _EXCEPTION_LINE.match(text.strip())
    if not m:
        return None
    return m.group("type"), (m.group("msg") or "").strip()


def user_frame(text: str) -> str | None:
    """`file:line in func` of a traceback or faulthandler frame outside libraries."""
    m = _FRAME.match(text)
    if not m or _NOT_USER.search(m.group("file")):
        return None
    return f"{m.group('file')}:{m.group('line')} in {m.group('func')}"


def process_of(kind: str, name: str) -> str:
    """Who wrote a file of this kind (for `{process}` and the by-process codes)."""
    if kind in ("raylet", "console-raylet"):
        return "the raylet"
    if kind in ("gcs", "console-gcs"):
        return "the GCS"
    if kind in ("agent", "runtime_env", "dashboard"):
        return f"the {name.split('.')[0].replace('_', ' ')}"
    if kind in ("worker", "core_worker", "console-worker"):
        return "a worker"
    return "a Ray process"


_COMPONENT = re.compile(r"^\s*\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d{3} [TDIWECF] \d+ \d+\] "
                        r"\((?P<c>raylet|gcs_server)\) ")


def writer_kind(text: str, kind: str) -> str:
    """The kind of the process that wrote the line: its `(raylet)`/`(gcs_server)` tag when it
    has one (an agent's log quotes its raylet's lines), else the file's."""
    m = _COMPONENT.match(text)
    if not m:
        return kind
    return "raylet" if m.group("c") == "raylet" else "gcs"


def code_of(entry_code: str, kind: str) -> str:
    if entry_code != "by-process":
        return entry_code
    return "RLD101" if kind in ("raylet", "console-raylet", "gcs", "console-gcs") else "RLD403"


def applies(entry: Entry, kind: str) -> bool:
    return "*" in entry.files or kind in entry.files or kind in ("other", "console")


def match(line: str, kind: str):
    """Every entry whose pattern matches `line` (its marker first): [(entry, match)]."""
    out = []
    for entry in ENTRIES:
        if not entry.marker or entry.marker not in line:
            continue  # those without a marker: UNMARKED, on stderr-like files only (scan.py)
        if not applies(entry, kind) or kind in entry.not_in:
            continue
        m = entry.compiled.search(line)
        if m:
            out.append((entry, m))
    return out


def event_fix(kind: str, message: str) -> str:
    """The fix for an event label's line."""
    if kind in ("node-removed", "heartbeat"):
        return death_fix(message)[1]
    if kind == "oom":
        return _OOM_FIX.format(ip="<node ip>")
    return _RAY_CHECK_FIX.format(file="the process's .err")


def death_fix(message: str) -> tuple[str, str]:
    """(what, fix) for a node's death by its message."""
    low = (message or "").lower()
    for needle, what, fix in NODE_DEATH_FIXES:
        if needle.lower() in low:
            return what, fix
    return "unknown", _NODE_FIX
