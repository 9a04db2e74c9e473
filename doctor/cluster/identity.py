"""Which algorithm and env a training runs, when no RLlib actor says so.

An algorithm that runs as an actor (under Tune) names itself in its repr
(`PPO(env=CartPole-v1; env-runners=2; ...)`, read by rldoctor.cluster.training). A bare
`algo = config.build_algo(); algo.train()` loop runs the algorithm inside the driver
process: no actor of the cluster carries its name. What the cluster shows instead, read
without calling into the training (a call would queue behind the hang being diagnosed):

- the job's entrypoint: `rllib train --algo PPO --env CartPole-v1` (`--run` before 2.x);
- the driver's stack (py-spy, taken by the probe of the driver's node): each RLlib algorithm
  defines its `training_step` in `ray/rllib/algorithms/<name>/<name>.py`, so a frame such as
  `PPO.training_step` names it, and with `num_learners=0` the driver also runs the learner
  (`PPOTorchLearner.compute_loss_for_module` in `algorithms/ppo/torch/`);
- the driver's script (the `.py` file of its command line, resolved against its working
  directory), read on the driver's node by `script_facts`: the RLlib config class it builds
  (`PPOConfig()`) and the env its `.environment(...)` names. Only those two names leave the
  node, never the script's text.

Each name found says where it came from (`identified_from`); what stays unknown says why
(`identity_unknown`). Standard library and ray only: `script_facts` runs on a node, and
this module travels by value (see `register`).
"""

from __future__ import annotations

import re

SCRIPT_MAX_BYTES = 512 * 1024
NAME_MAX = 100
_ALGO_FILE = re.compile(r"/rllib/algorithms/(?P<dir>\w+)/(?:(?P<file>\w+)\.py|torch/\w+\.py)$")
_LEARNER_SUFFIX = re.compile(r"(?:Torch|Tf)?Learner$")
_CONFIG_CALL = re.compile(r"\b(?P<algo>[A-Z][A-Za-z0-9]*)Config\s*\(")
_RLLIB_IMPORT = re.compile(r"from\s+ray\.rllib\.algorithms[\w.]*\s+import\s+\(?(?P<names>[^)\n]+)")
_ENVIRONMENT = re.compile(
    r"\.environment\(\s*(?:env\s*=\s*)?(?:(?P<quoted>[\"'][^\"'\n]{1,100}[\"'])|(?P<name>[A-Za-z_][\w.]*)\s*[,)])")
_TRAINABLE = re.compile(r"(?:Tuner|get_trainable_cls|tune\.run)\(\s*[\"'](?P<algo>[A-Z][A-Za-z0-9]*)[\"']")


def _short(value: str | None) -> str | None:
    return value[:NAME_MAX] if value else None


# -- the job's entrypoint ----------------------------------------------------------------------

def entrypoint_facts(entrypoint: str | None) -> dict:
    """{"algorithm", "env"} from `rllib train --algo X --env Y` (either may be missing)."""
    words = (entrypoint or "").split()
    names = [w.rsplit("/", 1)[-1] for w in words]
    if "rllib" not in names or "train" not in words:
        return {}
    found = {}
    for i, word in enumerate(words):
        flag, value = word, (words[i + 1] if i + 1 < len(words) else "")
        if "=" in word:
            flag, value = word.split("=", 1)
        if flag in ("--algo", "--run") and value:
            found["algorithm"] = _short(value.strip("\"'"))
        elif flag == "--env" and value:
            found["env"] = _short(value.strip("\"'"))
    return found


# -- the driver's stack --------------------------------------------------------------------------

def algorithm_in_stack(threads: list[dict]) -> str | None:
    """The RLlib algorithm class whose code a stack is in (`PPO.training_step` -> "PPO")."""
    learner = None
    for thread in threads or []:
        for frame in thread.get("frames") or []:
            match = _ALGO_FILE.search(frame.get("file") or "")
            function = frame.get("function") or ""
            if not match or "." not in function:
                continue
            owner = function.split(".")[0]
            if match.group("file") and match.group("file") == match.group("dir") and owner != "Algorithm":
                return _short(owner)  # algorithms/ppo/ppo.py: PPO.training_step
            stripped = _LEARNER_SUFFIX.sub("", owner)
            if learner is None and stripped != owner and stripped:
                learner = stripped  # algorithms/ppo/torch/ppo_torch_learner.py: PPOTorchLearner
    return _short(learner)


# -- the driver's script, read on its node ------------------------------------------------------

def _script_of(pid: int) -> str | None:
    """The .py file a Python process runs (`python [opts] path.py ...`), as an absolute path."""
    import os

    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as f:
            args = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        cwd = os.readlink(f"/proc/{int(pid)}/cwd")
    except (OSError, ValueError):
        return None
    for arg in args[1:]:
        if arg == "-m" or arg == "-c":
            return None
        if arg.startswith("-"):
            continue
        if arg.endswith(".py"):
            return os.path.join(cwd, arg)
        return None
    return None


def names_in_source(text: str) -> dict:
    """{"algorithm", "env"} a training script names: its RLlib config class and its env."""
    found: dict = {}
    imported = set()
    for match in _RLLIB_IMPORT.finditer(text):
        imported.update(n.strip().split(" as ")[0] for n in match.group("names").split(","))
    for match in _CONFIG_CALL.finditer(text):
        if match.group("algo") + "Config" in imported and match.group("algo") != "Algorithm":
            found["algorithm"] = _short(match.group("algo"))
            break
    if "algorithm" not in found:
        trainable = _TRAINABLE.search(text)
        if trainable:
            found["algorithm"] = _short(trainable.group("algo"))
    env = _ENVIRONMENT.search(text)
    if env:
        found["env"] = _short(env.group("quoted")[1:-1] if env.group("quoted") else env.group("name"))
    return found


def script_facts(pid: int) -> dict:
    """Run on the driver's node: {"script", "algorithm", "env"} or {"error"}; never raises."""
    path = _script_of(pid)
    if not path:
        return {"error": f"pid {pid} runs no .py script (python -m, -c, or not Python)"}
    try:
        with open(path, "rb") as f:
            text = f.read(SCRIPT_MAX_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        return {"error": f"cannot read the driver's script {path}: {exc.strerror or exc}"}
    return {"script": path, **names_in_source(text)}


def register() -> None:
    """Pickle this module's functions by value, so nodes need not have rldoctor."""
    import sys

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


# -- putting it together ------------------------------------------------------------------------

def _fill(training: dict, facts: dict, source: str) -> None:
    for key in ("algorithm", "env"):
        if facts.get(key) and not training.get(key):
            training[key] = facts[key]
            training.setdefault("identified_from", {})[key] = source


def _missing(training: dict) -> bool:
    return not training.get("algorithm") or not training.get("env")


def identify(section: dict, fleet, budget, stack_timeout_s: float = 2.0) -> None:
    """Fill `algorithm` and `env` of the driver-run trainings of `section` that lack them."""
    import time

    from rldoctor.cluster import stacks
    from rldoctor.cluster.fleet import ask

    started = time.perf_counter()
    for training in section.get("trainings") or []:  # what rldoctor.cluster.training found
        from_repr = training.get("configured_from") == "the algorithm's own repr"
        for key in ("algorithm", "env"):
            if training.get(key):
                training.setdefault("identified_from", {})[key] = (
                    "the algorithm's own repr" if from_repr else "the algorithm actor's class")
    wanted = [t for t in section.get("trainings") or [] if _missing(t)]
    for training in wanted:
        _fill(training, entrypoint_facts((training.get("job") or {}).get("entrypoint")),
              "the job's entrypoint")
    drivers = {t["id"]: t["driver"] for t in wanted if _missing(t)
               and (t.get("driver") or {}).get("node_id") and (t.get("driver") or {}).get("pid")}
    why: dict[str, list[str]] = {}
    if drivers:
        targets = [{"node_id": d["node_id"], "pid": d["pid"], "label": "driver"} for d in drivers.values()]
        dumps = stacks.capture(fleet, targets, budget, stack_timeout_s)
        if getattr(fleet, "actors", None):  # probes to run script_facts on (a fleet may have none)
            register()
        calls = {key: (d["node_id"], "call_here", script_facts, int(d["pid"]))
                 for key, d in drivers.items()}
        scripts = ask(fleet, calls, budget.left(stack_timeout_s + 1.0))
        for training in wanted:
            driver = drivers.get(training["id"])
            if not driver:
                continue
            dump = dumps.get(f"{driver['node_id']}:{int(driver['pid'])}") or {}
            if dump.get("status") == "ok":
                _fill(training, {"algorithm": algorithm_in_stack(dump.get("threads"))},
                      "the driver's stack")
            else:
                why.setdefault(training["id"], []).append(
                    f"the driver's stack: {dump.get('error') or 'not taken'}")
            answer = scripts.get(training["id"])
            facts = answer.value if answer is not None and answer.ok else \
                {"error": getattr(answer, "error", None) or "the driver's node did not answer"}
            if facts.get("error"):
                why.setdefault(training["id"], []).append(f"the driver's script: {facts['error']}")
            _fill(training, facts, "the driver's script")
    for training in wanted:
        if not _missing(training):
            continue
        reasons = why.get(training["id"]) or (
            ["the driver runs on no node of the cluster (or its pid is unknown)"]
            if training.get("runs_in") == "driver" else [])
        training["identity_unknown"] = "; ".join(reasons) or "nothing the cluster shows names it"
    if wanted:
        section["identify_s"] = round(time.perf_counter() - started, 3)
