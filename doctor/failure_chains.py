"""Why a job or an RLlib training failed: the chain from the job's end back to what started it.

A snapshot-side library, pure (standard library only): it reads the snapshot's raw facts,
whatever their source (a live cluster's state API, or the session directories a dead cluster
left, source.kind "logs"), and joins them. RLD405 (checks/workers/crashes.py) reports its
chains; the report's timeline (rldoctor.report.timeline) lists its events. The facts it reads
(collected by rldoctor.cluster.jobs, or read from logs by rldoctor.inputs.logdir; RLD405 in
docs/checks.md):

- `jobs.jobs[]`: status, message, times, the driver, `driver_log_tail`, `worker_logs`;
- `actors.items[]`: dead actors with Ray's death cause (kind, reason, message);
- `workers.dead[]`: dead workers with exit type and detail;
- `nodes[]`: dead nodes with their death reason, message and end time;
- `events.items[]` (optional): raw Ray events (OOM kills, node removals).

A chain is a dict: `job` (submission id, job id, entrypoint, status, end time), `root` (`kind`:
user_error, code_missing, node_died, oom, runtime_env, killed, signal, owner_died, unknown; and
`summary`, one line), `exception` (type, message, user frame), `worker` (class, actor id, pid,
node, ip), `node` (the worker's node when it died), `links` (the chain, oldest first, each with
`time` and `what`), `not_recorded` (what this Ray or this source does not say), `claimed` (the
(node id, pid) pairs of workers the chain explains, so RLD403 does not call them crashes).
"""

from __future__ import annotations

import re
from datetime import datetime

WINDOW_S = 24 * 3600.0
FAILED = "FAILED"
ENDED = ("FAILED", "SUCCEEDED", "STOPPED")

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
_PREFIX = re.compile(r"^\((?P<who>[^()]*?) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\d.:a-fA-F]+))?\) ?")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+?)\s*$')
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:\([\w.]+\))?)(?::\s?(?P<msg>.*))?$")
_ACTOR_ID = re.compile(r"actor_id[:=]\s*([0-9a-f]{32})")
_UNAVAILABLE = re.compile(r"The actor ([0-9a-f]{32}) is unavailable")
_PID = re.compile(r"\bpid[:=]\s*(\d+)")
_CLASS = re.compile(r"class_name:\s*(\w+)")
_IP = re.compile(r"\bip[:=]\s*([\d.]+)")
_MODULE = re.compile(r"No module named '([\w.]+)'")
# Where a remote worker's "Traceback" line was, Ray writes the task: `ray::Cls.method() (pid=N, ip=X, ...)`
_REMOTE = re.compile(r"^(?:[\w.]*RayTaskError(?:\([\w.]+\))?: )?ray::(?P<name>[\w.]+)\(\) "
                     r"\(pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\d.:a-fA-F]+))?")

# Exceptions Ray and RLlib raise around the user's: never the root cause themselves.
WRAPPERS = {"RayTaskError", "RayActorError", "ActorDiedError", "ActorUnavailableError",
            "WorkerCrashedError", "NodeDiedError", "LocalRayletDiedError", "RaySystemError",
            "OwnerDiedError", "ObjectLostError", "TaskUnschedulableError", "GetTimeoutError",
            "RuntimeEnvSetupError", "OutOfMemoryError", "ActorUnschedulableError"}
_IMPORT_ERRORS = ("ModuleNotFoundError", "ImportError")
# Paths that are Ray's, RLlib's, Python's or a library's, not the user's.
_NOT_USER = re.compile(r"(site-packages|dist-packages|/lib/python\d[\d.]*/|<frozen |^<)")


def clean(line: str) -> str:
    return _REPEATED.sub("", _ANSI.sub("", str(line))).rstrip("\n")


def split_prefix(line: str) -> tuple[dict | None, str]:
    """`(SingleAgentEnvRunner pid=5195, ip=127.0.0.11) text` -> ({who, pid, ip}, text)."""
    m = _PREFIX.match(line)
    if not m:
        return None, line
    return {"who": m.group("who"), "pid": int(m.group("pid")), "ip": m.group("ip")}, line[m.end():]


def is_user_file(path: str) -> bool:
    return not _NOT_USER.search(path or "")


def _base(exc_type: str) -> str:
    name = exc_type.split("(")[0].rsplit(".", 1)[-1]
    return name


def _inner_type(exc_type: str) -> str | None:
    m = re.search(r"\(([\w.]+)\)$", exc_type)  # RayTaskError(RuntimeError)
    return m.group(1).rsplit(".", 1)[-1] if m else None


def parse_tracebacks(lines) -> list[dict]:
    """Python tracebacks in log lines, each `{type, message, frames, source, text}` in order.

    Lines relayed from a worker (`(Cls pid=N, ip=X) ...`) are grouped by that worker, so an
    env runner's traceback is told from the driver's own; `source` is the worker's
    `{who, pid, ip}` or None for the process that wrote the file.
    """
    streams: dict = {}
    order: list = []
    for raw in lines or ():
        who, text = split_prefix(clean(raw))
        key = (who or {}).get("pid"), (who or {}).get("who")
        if key not in streams:
            streams[key] = {"who": who, "lines": []}
            order.append(key)
        streams[key]["lines"].append(text)
    found = []
    for key in order:
        stream = streams[key]
        found.extend(_tracebacks_in(stream["lines"], stream["who"]))
    return found


def _tracebacks_in(lines: list[str], who: dict | None) -> list[dict]:
    out = []
    i, n = 0, len(lines)
    source = who
    while i < n:
        remote = _remote_header(lines, i)
        if remote is None and not lines[i].lstrip().startswith("Traceback (most recent call last):"):
            i += 1
            continue
        # a remote traceback (Ray puts the task's `ray::Cls.method() (pid=N, ip=X)` where the
        # worker's "Traceback" line was) is the worker's, not this process's
        source = remote or who
        frames, j = [], i + 1
        while j < n:
            m = _FRAME.match(lines[j])
            if m:
                frames.append({"file": m.group("file"), "line": int(m.group("line")),
                               "func": m.group("func")})
                j += 1
                continue
            if lines[j].startswith((" ", "\t")) or not lines[j].strip():  # source lines, carets
                j += 1
                continue
            break
        if j >= n:
            break
        m = _EXC.match(lines[j].strip())
        exc_type = m.group("type") if m else lines[j].strip()[:120]
        message = [(m.group("msg") or "") if m else ""]
        k = j + 1
        while k < n and (lines[k].startswith(("\t", "    ")) or
                         lines[k].startswith(("class_name:", "actor_id:", "The actor "))) \
                and not _FRAME.match(lines[k]) and len(message) < 40:
            if not _is_caret(lines[k]):  # Python 3.11's ^^^^ under a hidden frame
                message.append(lines[k].strip())
            k += 1
        tb = {"type": exc_type, "message": "\n".join(x for x in message if x).strip(),
              "frames": frames, "source": source}
        out.append(tb)
        if _remote_header(lines, j) is not None:
            # RayTaskError(X): its remote traceback follows, and holds the real exception
            tb["wrapped"] = True
            i = j
        else:
            i = k
    return out


def _is_caret(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and set(stripped) <= set("^~")


def _remote_header(lines: list[str], i: int) -> dict | None:
    """`{who, pid, ip}` when line i opens a remote traceback (`ray::Cls.method() (pid=N, ip=X...)`,
    alone or after `RayTaskError(X): `) and frames follow it; else None."""
    m = _REMOTE.match(lines[i].strip())
    if not m:
        return None
    for line in lines[i + 1:i + 8]:
        if _FRAME.match(line):
            name = m.group("name")
            who = name.rsplit(".", 1)[0] if "." in name else name
            return {"who": who, "pid": int(m.group("pid")), "ip": m.group("ip")}
        if not _is_caret(line):
            return None
    return None


def user_frame(frames: list[dict]) -> dict | None:
    """The innermost frame of the user's own code (not Ray's, RLlib's or a library's)."""
    for frame in reversed(frames or []):
        if is_user_file(frame.get("file", "")):
            return frame
    return None


def frame_text(frame: dict | None) -> str | None:
    if not frame:
        return None
    return f"{frame['file']}:{frame['line']} in {frame['func']}"


def _is_wrapper(tb: dict) -> bool:
    if tb.get("wrapped"):  # a RayTaskError whose remote traceback was read after it
        return True
    base = _base(tb["type"])
    if base in WRAPPERS and not _inner_type(tb["type"]):
        return True
    # RLlib's `raise RuntimeError from e` (_try_env_step) carries no message of its own
    return base == "RuntimeError" and not tb["message"]


def user_exception(tracebacks: list[dict]) -> dict | None:
    """The user's own exception: the last one that is not a wrapper and has a user frame;
    failing that, the last one that is not a wrapper."""
    candidates = [tb for tb in tracebacks if not _is_wrapper(tb)]
    with_frame = [tb for tb in candidates if user_frame(tb["frames"])]
    pick = (with_frame or candidates or [None])[-1]
    if pick is None:
        return None
    inner = _inner_type(pick["type"])
    return {"type": inner or _base(pick["type"]), "message": _first_lines(pick["message"], 3),
            "frame": user_frame(pick["frames"]), "source": pick.get("source")}


def _first_lines(text: str, count: int) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return " ".join(lines[:count])[:400]


def _epoch(value) -> float | None:
    """Epoch seconds from seconds, milliseconds or an ISO string; None when unknown."""
    if value in (None, "", 0):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            try:
                return datetime.fromisoformat(value).timestamp()
            except ValueError:
                return None
    value = float(value)
    if value <= 0:
        return None
    return value / 1000.0 if value > 1e11 else value


def now_of(data: dict) -> float | None:
    jobs = data.get("jobs") or {}
    return _epoch(jobs.get("now")) or _epoch(data.get("created_at"))


def window_of(data: dict, window_s: float | None) -> float:
    if window_s is not None:
        return float(window_s)
    return float((data.get("jobs") or {}).get("window_s") or WINDOW_S)


class _Facts:
    """The snapshot's actors, dead workers and nodes, indexed for the joins."""

    def __init__(self, data: dict):
        self.nodes = {n.get("node_id"): n for n in data.get("nodes") or []}
        self.actors = list((data.get("actors") or {}).get("items") or [])
        self.actor_by_id = {a.get("actor_id"): a for a in self.actors}
        self.dead = list((data.get("workers") or {}).get("dead") or [])
        self.worker_by_pid = {}
        for w in self.dead:
            self.worker_by_pid.setdefault((w.get("node_id"), w.get("pid")), w)
        self.events = list((data.get("events") or {}).get("items") or [])

    def node_label(self, node_id: str | None) -> str:
        node = self.nodes.get(node_id) or {}
        short = (node_id or "?")[:12]
        return f"{short} ({node['ip']})" if node.get("ip") else short

    def worker_of(self, actor: dict) -> dict | None:
        return self.worker_by_pid.get((actor.get("node_id"), actor.get("pid")))

    def actor_end(self, actor: dict) -> float | None:
        w = self.worker_of(actor)
        return _epoch(actor.get("end_time")) or (_epoch(w.get("end_time_ms")) if w else None)


def failed_jobs(data: dict, window_s: float | None = None) -> list[dict]:
    """One chain per job that FAILED within the window, newest first."""
    jobs = (data.get("jobs") or {}).get("jobs") or []
    now = now_of(data)
    window = window_of(data, window_s)
    facts = _Facts(data)
    chains = []
    for job in jobs:
        hand_run = job.get("status") != FAILED and training_died_under(job, facts.actors)
        if job.get("status") != FAILED and not hand_run:
            continue
        end = _epoch(job.get("end_time"))
        if now is not None and end is not None and end < now - window:
            continue
        chain = chain_of(job, facts, data)
        if hand_run:
            chain["job"]["status"] = "FAILED"
            chain["job"]["status_recorded"] = job.get("status")
            chain["not_recorded"].append(
                "Ray records every driver run by hand (not `ray job submit`) as SUCCEEDED when it "
                "ends, with no exit code: the failure is told by its RLlib actors' deaths")
        chains.append(chain)
    chains.sort(key=lambda c: -(c["job"].get("end_time") or 0))
    return chains


RLLIB_ACTOR = re.compile(r"EnvRunner|Learner|_WrappedExecutable|^(PPO|APPO|IMPALA|DQN|SAC|BC|MARWIL|CQL)$")
_QUIET = ("OWNER_DIED", "RAY_KILL", "OUT_OF_SCOPE", "REF_DELETED")


def training_died_under(job: dict, actors: list[dict]) -> bool:
    """A driver run by hand (Ray calls it SUCCEEDED once it ends) whose RLlib actors died of
    something else than their owner's end or ray.kill: a training that failed."""
    if job.get("type") != "DRIVER" or job.get("status") != "SUCCEEDED" or not job.get("job_id"):
        return False
    for a in actors:
        if a.get("job_id") != job["job_id"] or a.get("state") != "DEAD":
            continue
        if not RLLIB_ACTOR.search(a.get("class_name") or ""):
            continue
        cause = a.get("death_cause") or {}
        if cause.get("reason") in _QUIET:
            continue
        if "INTENDED" in (cause.get("message") or "") and cause.get("reason") == "WORKER_DIED":
            continue
        return True
    return False


def _job_view(job: dict) -> dict:
    return {"submission_id": job.get("submission_id"), "job_id": job.get("job_id"),
            "type": job.get("type"), "entrypoint": job.get("entrypoint"),
            "status": job.get("status"), "error_type": job.get("error_type"),
            "driver_exit_code": job.get("driver_exit_code"),
            "start_time": _epoch(job.get("start_time")), "end_time": _epoch(job.get("end_time")),
            "driver": job.get("driver") or {}}


def short_entrypoint(entrypoint) -> str:
    """The job's command, as a finding names it: the Python a job usually is starts at its
    script (`python /a/b/train.py --x 1` -> `train.py --x 1`), at most 80 characters."""
    words = str(entrypoint or "").split()
    if len(words) > 1 and re.search(r"(^|/)python[\d.]*$", words[0]):
        words = [words[1].rsplit("/", 1)[-1]] + words[2:]
    return _short(" ".join(words), 80)


def job_name(job: dict) -> str:
    return job.get("submission_id") or f"job {job.get('job_id') or '?'}"


def _named_actor(driver_tbs: list[dict], lines: list[str]) -> dict:
    """What the driver's own last exception says about the actor it came from."""
    named: dict = {}
    for tb in reversed(driver_tbs):
        text = tb["type"] + ": " + tb["message"]
        m = _ACTOR_ID.search(text) or _UNAVAILABLE.search(text)
        if m:
            named["actor_id"] = m.group(1)
            for key, rx in (("pid", _PID), ("class_name", _CLASS), ("ip", _IP)):
                found = rx.search(text)
                if found:
                    named[key] = int(found.group(1)) if key == "pid" else found.group(1)
            named["driver_exception"] = {"type": _base(tb["type"]),
                                         "message": _first_lines(tb["message"], 2)}
            return named
    if driver_tbs:
        tb = driver_tbs[-1]
        named["driver_exception"] = {"type": _base(tb["type"]),
                                     "message": _first_lines(tb["message"], 2)}
    # RLlib's own line before it raises: "Ray error (... actor_id: X ...), taking actor 1 out of service."
    for line in lines[-400:]:
        m = _ACTOR_ID.search(line)
        if m and "actor_id" not in named:
            named["actor_id"] = m.group(1)
    return named


def _job_actors(job: dict, facts: _Facts) -> list[dict]:
    jid = job.get("job_id")
    return [a for a in facts.actors if jid and a.get("job_id") == jid]


def _pick_actor(job: dict, named: dict, facts: _Facts) -> dict | None:
    """The actor the failure came from: the one the driver names, else the first of the job's
    actors to die of something other than its owner's end or ray.kill."""
    actor = facts.actor_by_id.get(named.get("actor_id"))
    if actor:
        return actor
    dying = [a for a in _job_actors(job, facts) if a.get("state") == "DEAD"
             and (a.get("death_cause") or {}).get("reason") not in _QUIET]
    dying.sort(key=lambda a: facts.actor_end(a) or float("inf"))
    if dying:
        return dying[0]
    if named.get("actor_id"):  # named by the driver but not in the actor list (evicted, or logs)
        return {"actor_id": named["actor_id"], "class_name": named.get("class_name"),
                "pid": named.get("pid"), "node_id": None, "state": "DEAD"}
    return None


def _worker_lines(job: dict, actor: dict | None, named: dict) -> tuple[list[str], dict | None]:
    """The lines the chain's worker left: its own log from worker_logs, else what the driver
    relayed from it (`(Cls pid=N) ...`)."""
    pid = (actor or {}).get("pid") or named.get("pid")
    aid = (actor or {}).get("actor_id") or named.get("actor_id")
    for entry in job.get("worker_logs") or []:
        if (aid and entry.get("actor_id") == aid) or (pid and entry.get("pid") == pid
                                                      and (not actor or not actor.get("node_id")
                                                           or entry.get("node_id") in (None, actor.get("node_id")))):
            return list(entry.get("lines") or []), entry
    return [], None


def chain_of(job: dict, facts: _Facts, data: dict) -> dict:
    view = _job_view(job)
    lines = list(job.get("driver_log_tail") or [])
    message_lines = str(job.get("message") or "").splitlines()
    tbs = parse_tracebacks(lines) or parse_tracebacks(message_lines)
    driver_tbs = [tb for tb in tbs if tb.get("source") is None]
    named = _named_actor(driver_tbs, lines or message_lines)
    actor = _pick_actor(job, named, facts)
    worker_lines, log_entry = _worker_lines(job, actor, named)
    pid = (actor or {}).get("pid") or named.get("pid")
    relayed = [tb for tb in tbs if (tb.get("source") or {}).get("pid") == pid] if pid else []
    remote = parse_tracebacks(worker_lines) + relayed
    exc = user_exception(remote) or user_exception(tbs)
    not_recorded = []
    if not view.get("entrypoint"):
        release = (data.get("jobs") or {}).get("ray_version")
        not_recorded.append("the job's entrypoint: " + (
            f"the job-driver log of Ray {release or 'this release'} does not print it"
            if (data.get("source") or {}).get("kind") == "logs" else "Ray did not record it"))
    chain = {"job": view, "links": [], "not_recorded": not_recorded, "claimed": [],
             "exception": exc, "worker": None, "node": None,
             "driver_exception": named.get("driver_exception"),
             "worker_log": {"file": (log_entry or {}).get("file"),
                            "lines": len(worker_lines)} if log_entry else None}
    if actor:
        node_id = actor.get("node_id")
        chain["worker"] = {"class_name": actor.get("class_name") or named.get("class_name"),
                           "actor_id": actor.get("actor_id"), "pid": pid, "node_id": node_id,
                           "ip": (facts.nodes.get(node_id) or {}).get("ip") or named.get("ip"),
                           "state": actor.get("state")}
    _classify(chain, job, actor, facts, data)
    return chain


def _link(chain: dict, time_s, what: str) -> None:
    chain["links"].append({"time": time_s, "what": what})


def _classify(chain: dict, job: dict, actor: dict | None, facts: _Facts, data: dict) -> None:
    view, exc = chain["job"], chain["exception"]
    cause = (actor or {}).get("death_cause") or {}
    worker = facts.worker_of(actor) if actor else None
    node_id = (actor or {}).get("node_id")
    node = facts.nodes.get(node_id) if node_id else None
    who = _who(chain)
    end_actor = facts.actor_end(actor) if actor else None
    detail = (worker or {}).get("exit_detail") or cause.get("message") or ""
    if view.get("start_time"):
        entry = _short(view.get("entrypoint"), 120)
        _link(chain, view["start_time"], f"job {job_name(view)} started" + (f": {entry}" if entry else ""))
    kind, summary = "unknown", None
    if job.get("error_type") == "RUNTIME_ENV_SETUP_FAILURE" or cause.get("kind") == "runtime_env_failed_context":
        kind = "runtime_env"
        text = cause.get("message") or job.get("message") or ""
        summary = f"the runtime_env could not be set up{(' for ' + who) if actor else ''}: {_last_line(text)}"
        _link(chain, end_actor or view.get("end_time"), summary)
    elif node and not node.get("alive") and (cause.get("reason") == "NODE_DIED" or not exc
                                             or _base(exc.get("type", "")) in WRAPPERS):
        kind = "node_died"
        chain["node"] = {"node_id": node_id, "ip": node.get("ip"), "death_reason": node.get("death_reason"),
                         "death_message": node.get("death_message"), "end_time": _epoch(node.get("end_time"))}
        summary = (f"node {facts.node_label(node_id)} died under {who}: "
                   f"{node.get('death_reason') or 'death reason not recorded'}"
                   + (f" ({_short(node.get('death_message'), 120)})" if node.get("death_message") else ""))
        _link(chain, _epoch(node.get("end_time")), f"node {facts.node_label(node_id)} died: "
              f"{node.get('death_reason') or '?'} {_short(node.get('death_message'), 160)}".rstrip())
        if not node.get("end_time"):
            chain["not_recorded"].append("the node's time of death (Ray keeps none for it here)")
        if end_actor:
            _link(chain, end_actor, f"{who} died with its node")
    elif (worker or {}).get("exit_type") == "NODE_OUT_OF_MEMORY" or cause.get("kind") == "oom_context":
        kind = "oom"
        summary = f"Ray's memory monitor killed {who} on node {facts.node_label(node_id)}: {_short(detail, 200)}"
        _link(chain, end_actor, summary)
    elif exc and exc["type"] in _IMPORT_ERRORS:
        kind = "code_missing"
        module = _MODULE.search(exc.get("message") or "")
        others = sorted({facts.node_label(a.get("node_id")) for a in _job_actors(job, facts)
                         if a.get("class_name") == (actor or {}).get("class_name")
                         and a.get("node_id") and a.get("node_id") != node_id})
        chain["code_missing"] = {"module": module.group(1) if module else None,
                                 "node_id": node_id, "nodes_that_imported": others}
        summary = (f"{exc['type']}: {exc['message']} in {who} on node {facts.node_label(node_id)}"
                   + (f" (the same class started on {len(others)} other node(s))" if others else "")
                   + ": the user's code is not installed on that node")
        _link(chain, end_actor, f"{who} could not import the user's code: {exc['type']}: {exc['message']}")
    elif exc and (exc.get("frame") or not _is_signal(detail)):
        kind = "user_error"
        where = frame_text(exc.get("frame"))
        summary = (f"{exc['type']}: {exc['message']}" + (f" at {where}" if where else "")
                   + (f", raised in {who}" if actor else "")
                   + (f" on node {facts.node_label(node_id)}" if node_id else ""))
        _link(chain, None, f"the user's code raised {exc['type']}: {exc['message']}"
              + (f" ({where})" if where else ""))
        if actor and not worker and cause.get("reason") in _QUIET:
            # Ray 2.40: the runner raised to the driver and lived on until the job ended
            _link(chain, end_actor, f"{who} ended with the job: {cause.get('reason')} {_short(detail, 160)}".strip())
        elif actor and (worker or cause):
            _link(chain, end_actor, f"{who} exited after it: "
                  f"{(worker or {}).get('exit_type') or cause.get('reason') or ''} {_short(detail, 160)}".strip())
        if not exc.get("frame"):
            chain["not_recorded"].append("no frame of the user's own code in the traceback")
    elif _is_signal(detail) or "connection error code" in detail:
        kind = "killed" if "connection error code" in detail or "SIGKILL" in detail else "signal"
        summary = (f"{who} on node {facts.node_label(node_id)} was killed without a word "
                   f"({_short(detail, 140)}): SIGKILL by the kernel's OOM killer, a person or a supervisor"
                   if kind == "killed" else f"{who} on node {facts.node_label(node_id)} died of a signal: {_short(detail, 160)}")
        _link(chain, end_actor, summary)
        chain["not_recorded"].append("Ray records no signal number for a killed worker: check the "
                                     "host's `dmesg` for OOM kills")
    elif cause.get("reason") == "OWNER_DIED":
        kind = "owner_died"
        summary = f"{who} died because its owner died: {_short(cause.get('message'), 200)}"
        _link(chain, end_actor, summary)
    if summary is None:
        last = (chain.get("driver_exception") or {})
        text = (f"{last.get('type')}: {last.get('message')}" if last else _last_line(job.get("message")))
        summary = f"the job failed: {_short(text, 240)}" if text else "the job failed; Ray recorded no reason"
        if not job.get("driver_log_tail"):
            chain["not_recorded"].append(job.get("driver_log_note") or "the driver's log was not readable")
    if kind not in ("node_died",) and chain.get("driver_exception") and kind != "unknown":
        d = chain["driver_exception"]
        _link(chain, None, f"the driver raised {d['type']}: {_short(d['message'], 160)}")
    code = job.get("driver_exit_code")
    _link(chain, view.get("end_time"), f"job {job_name(view)} FAILED"
          + (f" (driver exit code {code})" if code not in (None, "") else ""))
    chain["root"] = {"kind": kind, "summary": summary}
    if actor and actor.get("node_id") and actor.get("pid"):
        chain["claimed"].append([actor["node_id"], actor["pid"]])
    _order(chain)


def _order(chain: dict) -> None:
    """Links oldest first; a link without a time keeps its place after the one before it."""
    last = None
    for link in chain["links"]:
        if link["time"] is None:
            link["time_known"] = False
            link["sort"] = last if last is not None else 0
        else:
            link["sort"] = last = link["time"]
    chain["links"].sort(key=lambda link: link["sort"])
    for link in chain["links"]:
        link.pop("sort", None)


def _who(chain: dict) -> str:
    w = chain.get("worker")
    if not w:
        return "a worker"
    return (f"{w.get('class_name') or 'actor'} (actor {str(w.get('actor_id') or '?')[:12]}, "
            f"pid {w.get('pid') or '?'})")


def _is_signal(detail: str) -> bool:
    return bool(detail) and ("signal" in detail.lower() or "SIGSEGV" in detail or "SIGABRT" in detail)


def _short(text, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[:limit] + " ..."


def _last_line(text) -> str:
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def claimed_workers(data: dict) -> set[tuple]:
    """(node id, pid) of the workers failed jobs' chains explain (their crash is the job's
    story, not a system error): the worker whose code raised or could not import the user's
    code, and every other worker of the job that died with it (from the first death of the
    chain on; one that died earlier is a crash of its own)."""
    from rldoctor.worker_exits import Ends

    out = set()
    chains = failed_jobs(data)
    if not chains:
        return out
    ends, facts = Ends(data), _Facts(data)
    for chain in chains:
        if chain["root"]["kind"] in ("user_error", "code_missing"):
            out.update(tuple(pair) for pair in chain["claimed"])
        job = chain["job"]
        since = _root_time(chain, facts)
        for w in facts.dead:
            if ends.job_of(w) != job.get("job_id") or not job.get("job_id"):
                continue
            died = _epoch(w.get("end_time_ms"))
            if since is None or died is None or died >= since - 1:
                out.add((w.get("node_id"), w.get("pid")))
    return out


def _root_time(chain: dict, facts: _Facts) -> float | None:
    """When the failure began: the root worker's death, else its node's, else a minute before
    the job's end."""
    root = chain.get("worker") or {}
    w = facts.worker_by_pid.get((root.get("node_id"), root.get("pid"))) if root.get("pid") else None
    actor = facts.actor_by_id.get(root.get("actor_id")) if root.get("actor_id") else None
    for t in ((w or {}).get("end_time_ms"), facts.actor_end(actor) if actor else None,
              (chain.get("node") or {}).get("end_time")):
        if _epoch(t) is not None:
            return _epoch(t)
    end = _epoch(chain["job"].get("end_time"))
    return end - 60 if end is not None else None


# -- the timeline ------------------------------------------------------------------------------

TIMELINE_LIMIT = 50


# The timeline's kind of a line of Ray's (the log_lines section's `kind`).
_LOG_KINDS = {"crash": "crash", "exception": "exception", "oom": "oom_kill",
              "node-removed": "node_dead", "heartbeat": "node_dead", "agent": "agent_failed",
              "runtime-env": "runtime_env_failed", "gcs": "gcs_lost"}


def timeline_events(data: dict, limit: int = TIMELINE_LIMIT) -> list[dict]:
    """The events of an incident, oldest first: `{time, kind, subject, message}`.

    Node deaths, worker and actor deaths with their cause, actor restarts, OOM kills, job status
    changes, runtime_env failures; the last `limit` events plus every event of a failed job's
    window (its start to its end). Messages are written only for the events kept (a cluster
    may have tens of thousands of dead actors)."""
    facts = _Facts(data)
    events: list[tuple] = []  # (time, kind, subject, message maker, its argument)

    def add(time_s, kind, subject, maker, arg):
        events.append((time_s, kind, subject, maker, arg))

    for n in facts.nodes.values():
        if n.get("alive") is False:
            add(_epoch(n.get("end_time")), "node_dead", f"node:{n.get('node_id')}", _node_text, n)
    seen_workers = set()
    for a in facts.actors:
        if (a.get("class_name") or "").startswith("JobSupervisor"):
            continue
        if a.get("state") == "DEAD":
            cause = a.get("death_cause") or {}
            if cause.get("reason") in ("RAY_KILL", "OUT_OF_SCOPE", "REF_DELETED"):
                continue
            w = facts.worker_of(a)
            if w:
                seen_workers.add((w.get("node_id"), w.get("pid")))
            kind = ("oom_kill" if cause.get("kind") == "oom_context"
                    or (w or {}).get("exit_type") == "NODE_OUT_OF_MEMORY" else
                    "runtime_env_failed" if cause.get("kind") == "runtime_env_failed_context" else
                    "actor_dead")
            add(facts.actor_end(a), kind, f"actor:{a.get('actor_id')}", _actor_text, (a, w))
        if int(a.get("num_restarts") or 0) > 0:
            add(None, "actor_restarted", f"actor:{a.get('actor_id')}", _restart_text, a)
    from rldoctor.worker_exits import Ends

    ends = Ends(data)
    for w in facts.dead:
        if (w.get("node_id"), w.get("pid")) in seen_workers or str(w.get("exit_type") or "").startswith("INTENDED"):
            continue
        asked = ends.asked_for(w)
        kind = ("oom_kill" if w.get("exit_type") == "NODE_OUT_OF_MEMORY" else
                "worker_ended" if asked else "worker_dead")
        add(_epoch(w.get("end_time_ms")), kind, f"node:{w.get('node_id')}", _worker_text,
            dict(w, asked_for=asked) if asked else w)
    for job in (data.get("jobs") or {}).get("jobs") or []:
        name = job_name(job)
        start, end = _epoch(job.get("start_time")), _epoch(job.get("end_time"))
        if start:
            add(start, "job_started", f"job:{name}", lambda _, name=name: f"job {name} started", None)
        if end and job.get("status") in ENDED:
            add(end, "job_" + job["status"].lower(), f"job:{name}", _job_text, job)
        if job.get("error_type") == "RUNTIME_ENV_SETUP_FAILURE":
            add(end, "runtime_env_failed", f"job:{name}",
                lambda _, name=name: f"job {name}: runtime_env setup failed", None)
    for ended in ((data.get("autoscaler") or {}).get("terminated_nodes") or []):
        add(_epoch(ended.get("ts")), "node_removed",
            f"node:{ended.get('node_id') or ended.get('ip')}",
            lambda t: (f"the autoscaler terminated node {(t.get('node_id') or t.get('id') or '?')[:12]} "
                       f"({t.get('ip')}): {t.get('reason')}"), ended)
    for e in facts.events:
        label = e.get("label") or ""
        kind = ("oom_kill" if label == "Out of Memory" else "node_dead" if label == "RAY_NODE_REMOVED"
                else "worker_dead" if label == "RAY_WORKER_FAILURE" else None)
        if kind:
            subject = f"node:{e['node_id']}" if e.get("node_id") else "cluster"
            add(_epoch(e.get("time")), kind, subject,
                lambda ev, label=label: ev.get("message") or label, e)
    for hit in ((data.get("log_lines") or {}).get("items") or [])[:200]:
        if not isinstance(hit, dict) or hit.get("consequence") or hit.get("time") is None:
            continue  # Ray's own lines (rldoctor.raylog.catalogue), in the logs' time
        names = hit.get("names") or {}
        subject = (f"node:{names['node_id']}" if names.get("node_id") else
                   f"ip:{names['ip']}" if names.get("ip") else f"file:{hit.get('file')}")
        add(_epoch(hit.get("time")), _LOG_KINDS.get(hit.get("kind"), "log_line"), subject,
            lambda h: f"{h.get('cause')} ({str(h.get('file') or '').rsplit('/', 1)[-1]})", hit)
    events = _dedup(events)
    timed = sorted((e for e in events if e[0] is not None), key=lambda e: e[0])
    windows = [(c["job"].get("start_time") or 0, c["job"].get("end_time") or 0)
               for c in failed_jobs(data)]
    keep = set(range(max(0, len(timed) - limit), len(timed)))
    for i, e in enumerate(timed):
        if any(lo - 60 <= e[0] <= hi + 60 for lo, hi in windows):
            keep.add(i)
    chosen = [timed[i] for i in sorted(keep)] + [e for e in events if e[0] is None][:10]
    return [{"time": t, "kind": kind, "subject": subject,
             "message": _short(maker(arg) if arg is not None else maker(None), 300)}
            for t, kind, subject, maker, arg in _bind(chosen, facts)]


def _bind(chosen, facts):
    """Give the message makers that need the node labels their facts."""
    for t, kind, subject, maker, arg in chosen:
        if maker in (_node_text, _actor_text, _worker_text):
            yield t, kind, subject, (lambda a, m=maker: m(a, facts)), arg
        else:
            yield t, kind, subject, maker, arg


def _node_text(n, facts) -> str:
    return (f"node {facts.node_label(n.get('node_id'))} died: {n.get('death_reason') or '?'}"
            + (f" ({_short(n.get('death_message'), 160)})" if n.get("death_message") else ""))


def _actor_text(pair, facts) -> str:
    a, w = pair
    cause = a.get("death_cause") or {}
    return (f"{a.get('class_name')} (actor {str(a.get('actor_id'))[:12]}, pid {a.get('pid')}) died on "
            f"node {facts.node_label(a.get('node_id'))}: {cause.get('reason') or cause.get('kind') or '?'}"
            f" {_short((w or {}).get('exit_detail') or cause.get('message'), 160)}")


def _restart_text(a) -> str:
    return (f"{a.get('class_name')} (actor {str(a.get('actor_id'))[:12]}) restarted "
            f"{a.get('num_restarts')} time(s), now {a.get('state')}")


def _worker_text(w, facts) -> str:
    from rldoctor.worker_exits import driver_job

    job = driver_job(w.get("worker_id"))
    who = f"the driver of job {job} (pid {w.get('pid') or '?'})" if job else f"worker pid {w.get('pid')}"
    if w.get("asked_for"):  # an end someone asked for: why, then what Ray recorded
        return (f"{who} on node {facts.node_label(w.get('node_id'))} ended, no crash: "
                f"{w['asked_for']} ({w.get('exit_type')} {_short(w.get('exit_detail'), 100)})")
    return (f"{who} on node {facts.node_label(w.get('node_id'))} exited: "
            f"{w.get('exit_type')} {_short(w.get('exit_detail'), 160)}")


def _job_text(job) -> str:
    name = job_name(job)
    return (f"job {name} {job['status']}"
            + (f": {_short(clean(_last_line(job.get('message'))), 160)}" if job["status"] == FAILED else ""))


def _dedup(events: list[tuple]) -> list[tuple]:
    seen, out = set(), []
    for e in events:
        key = (e[1], e[2], round(e[0] or 0))
        if key in seen:
            continue
        seen.add(key)
        out.append(e)
    return out
