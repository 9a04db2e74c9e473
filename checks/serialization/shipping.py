"""What RLlib ships to every env runner, and whether Ray can ship it: RLD501, RLD502.

Both checks read the snapshot section `targets`, filled by `rldoctor check
--target MODULE:ATTR` (rldoctor.inputs.targets): per target, the objects that
travel (the target itself; for an AlgorithmConfig the whole config plus a
registered env creator), whether `ray.cloudpickle` could pickle each one, the
member paths that broke it, and the pickled sizes.

A target rldoctor could not import (or resolve) gives no findings of its own: it
turns both checks into status `error` whose detail names the target and the
exception's last line. The runner reports a check either as findings or as an
error, never both, so while one target is broken the findings of the others in
the same run are withheld; the detail says how many. Fix the import or drop that
`--target`, and run again.
"""

from __future__ import annotations

from rldoctor.registry import check, fail, warn
from rldoctor.words import size

_MIB = 2**20


class TargetNotInspected(Exception):
    """A --target that could not be imported or resolved; the check reports error."""


def _inspected(snap) -> list[dict]:
    """The targets that were inspected; raise when any could not be."""
    targets = list(snap["targets"] or [])
    broken = [t for t in targets if t.get("status") != "ok"]
    if broken:
        parts = []
        for t in broken:
            where = f" (at {t['location']})" if t.get("location") else ""
            what = "could not be imported" if t.get("stage") == "import" else f"failed at {t.get('stage')}"
            parts.append(f"target {t['target']} {what}: {t.get('error')}{where}")
        others = len(targets) - len(broken)
        tail = (f"; findings for the other {others} target(s) are withheld until it imports"
                if others else "")
        raise TargetNotInspected("; ".join(parts) + tail)
    return targets


def _what(obj: dict) -> str:
    """'env_creator', 'config', or 'callbacks class MetricsCallbacks'."""
    same = obj["role"].replace(" ", "_") == obj["name"]
    return obj["name"] if same else f"{obj['role']} {obj['name']}"


def _mib(n: int) -> str:
    return size(n)


def _category(type_name: str) -> str:
    low = type_name.lower()
    if any(k in low for k in ("lock", "condition", "semaphore", "event", "barrier")) and \
            low.split(".")[0] in ("_thread", "threading", "multiprocessing", "_multiprocessing"):
        return "lock"
    if "socket" in low or low.startswith(("ssl.", "http.client", "urllib3", "grpc", "requests",
                                          "redis", "pymongo", "psycopg", "sqlite3", "boto")):
        return "connection"
    if low.startswith(("_io.", "io.")) or "textiowrapper" in low or "buffered" in low:
        return "file"
    if low in ("generator", "coroutine", "async_generator", "frame"):
        return "generator"
    if low.startswith(("torch.", "tensorflow.")) and ("writer" in low or "cuda" in low):
        return "device"
    return "other"


# RLD501's fix: where the object sits (a class attribute, a closure, a global), what to do
# with its kind of object, then how to check again; each piece a case.
PICKLE_FIXES = {
    "the object is a class attribute of a class shipped by value": (
        "`{hop}` is a class attribute of {holder}, a class Ray ships by value (as it does every "
        "class of a training script), so the object made at import travels with it; make it an "
        "instance attribute instead."),
    "the creator is a closure": (
        "The creator is a closure: the object was made once on the driver, in the function that "
        "built the creator, and every copy of the creator carries it."),
    "the code refers to a module-level object": (
        "The code refers to a module-level object; Ray ships a script's functions and classes by "
        "value, module-level objects they use included."),
    "the member that cannot be pickled is a lock": (
        "Create the lock where it is used: in the env's (or callbacks') `__init__` or on first "
        "use, so each env runner makes its own; not at import or in the closure. A lock made on "
        "the driver cannot travel."),
    "the member that cannot be pickled is a connection or a client": (
        "Open the connection inside the env's or callbacks' `__init__`, or on first use (an "
        "attribute that starts as None and is filled the first time it is needed), not at import "
        "or in the closure. Pass only plain data (host, port, URL) through `env_config`."),
    "the member that cannot be pickled is an open file": (
        "Open the file inside the env's `__init__` or on first use, and pass its path through "
        "`env_config`; an open file handle cannot travel."),
    "the member that cannot be pickled is a generator": (
        "Make the generator (or iterator) inside the env's `__init__` or `reset()`; a running "
        "generator cannot be pickled."),
    "the member that cannot be pickled is a device handle or a writer": (
        "Create it inside `__init__` on the env runner or learner (a SummaryWriter, a CUDA "
        "handle) instead of on the driver."),
    "the member that cannot be pickled is another kind of object": (
        "Create it inside the env's `__init__` or on first use, not at import or in the closure, "
        "and pass only plain data (paths, hosts, numbers) through `env_config`."),
    "the object has been changed (after any of the above)": (
        "Check again with `rldoctor check --target {target}`, or in Python with "
        "`ray.util.inspect_serializability({probe}, name=\"{name}\")`."),
}
_KIND_CASES = {kind: f"the member that cannot be pickled is {what}" for kind, what in (
    ("lock", "a lock"), ("connection", "a connection or a client"), ("file", "an open file"),
    ("generator", "a generator"), ("device", "a device handle or a writer"),
    ("other", "another kind of object"))}


def _where(labels: list[str], types: list[str]) -> list[str]:
    """What kind of hold the target has on the culprit, from its path: [its fix] or []."""
    hops = labels[1:]
    for i, hop in enumerate(hops):
        holder = types[i] if i < len(types) else ""
        if holder.startswith("class ") and not hop.startswith(("method '", "[")):
            return [PICKLE_FIXES["the object is a class attribute of a class shipped by value"].format(
                hop=hop, holder=holder.split('.')[-1])]
    if any(h.startswith("closure '") for h in hops):
        return [PICKLE_FIXES["the creator is a closure"].format()]
    if any(h.startswith("global '") for h in hops):
        return [PICKLE_FIXES["the code refers to a module-level object"].format()]
    return []


def _fix(obj: dict, culprit: dict, target: str) -> str:
    name, labels = obj["name"], culprit["labels"]
    if obj["role"] == "config" and len(labels) > 1 and labels[1].isidentifier():
        name = labels[1]  # Ray's inspector trips on an AlgorithmConfig's deprecated properties
        probe = f"{obj['name']}.{name}"
    else:
        probe = name
    return " ".join(_where(culprit["labels"], culprit.get("types") or []) + [
        PICKLE_FIXES[_KIND_CASES[_category(culprit["type"])]].format(),
        PICKLE_FIXES["the object has been changed (after any of the above)"].format(
            target=target, probe=probe, name=name)])


@check("RLD501", "not-serializable", area="serialization", requires=("targets",),
       fixes=PICKLE_FIXES)
def not_serializable(snap, params):
    """A user object (env creator, callbacks, config) that cannot be pickled, and the member that breaks it.

    Symptom:
        Building the algorithm fails with `TypeError: cannot pickle '_thread.lock' object`,
        `cannot pickle 'socket' object` or `ray.cloudpickle.dumps(<function ...>) failed`,
        raised by `register_env`, by `config.build_algo()` or when env runners start,
        often far from the line that made the object. On this RLlib the error can also
        surface as an unrelated-looking `ValueError` whose cause is the pickling error.

    Cause:
        RLlib ships the env creator (through Ray's env registry), the callbacks class and
        the whole AlgorithmConfig to every env runner, and Ray pickles them with
        cloudpickle. Closures, lambdas and everything defined in the training script
        travel by value, together with what they capture: a lock, a socket, an open
        file or a client object made on the driver (at import, or in the function that
        builds the creator) cannot be pickled.
    """
    for target in _inspected(snap):
        subject = f"target:{target['target']}"
        for obj in target.get("objects") or []:
            if obj.get("serializable"):
                continue
            culprits = obj.get("culprits") or [{"path": obj["name"], "labels": [obj["name"]],
                                                "type": obj.get("type", "?"),
                                                "error": obj.get("error", "")}]
            first = culprits[0]
            registered = (f" (registered with register_env as {obj['registered_as']!r}"
                          + (", which raises this at import" if obj.get("register_env_error") else "")
                          + ")") if obj.get("registered_as") else ""
            message = (f"{_what(obj)}{registered} cannot be pickled for the env "
                       f"runners: {first['path']} is a {first['type']} ({first['error']})")
            if len(culprits) > 1:
                message += "; also " + ", ".join(f"{c['path']} ({c['type']})" for c in culprits[1:])
            ray_view = obj.get("ray_inspect") or {}
            evidence = {
                "target": target["target"], "kind": target.get("kind"), "object": obj["name"],
                "type": obj.get("type"), "travels_by": obj.get("travels_by"),
                "error": obj.get("error"),
                "members": [{"path": c["path"], "type": c["type"], "error": c["error"],
                             "repr": c.get("repr", "")} for c in culprits],
                "ray_inspect_serializability": {
                    "paths": [f["path"] for f in ray_view.get("failures") or []],
                    "report": ray_view.get("report") or ray_view.get("error") or ""},
            }
            if obj.get("registered_as"):
                evidence["registered_as"] = obj["registered_as"]
                evidence["register_env_raises"] = obj.get("register_env_error")
            yield fail(subject, message, evidence, _fix(obj, first, target["target"]))


LARGE_FIXES = {"an object RLlib ships pickles large": (
    "RLlib ships {name} to every env runner and again on every restart. Move {what} out of it: "
    "pass a path or URL in `env_config` and load the data in the env's `__init__`, or "
    "`ray.put()` it once and pass the ObjectRef in `env_config` (`ray.get` it in `__init__`)."
)}


@check("RLD502", "large-closure", area="serialization", requires=("targets",),
       params={"max_bytes": 10 * _MIB}, fixes=LARGE_FIXES)
def large_closure(snap, params):
    """A user object whose serialized form is large.

    Symptom:
        Env runners are slow to start or restart and the object store holds a copy of the
        config per env runner; a restart storm multiplies it. Where Ray exports the object
        as a function or actor class it warns "The remote function ... is very large (N
        MiB). Check that its definition is not implicitly capturing a large array or other
        object in scope", and refuses above 100 MiB (FUNCTION_SIZE_ERROR_THRESHOLD).

    Cause:
        Something big rides along with what RLlib ships to every env runner: a numpy
        array, a dataset or a model in `env_config`, a large object captured by the env
        creator's closure, or a class attribute of a class shipped by value. Ray pickles
        it again for every env runner (and every restart).
    """
    limit = int(params["max_bytes"])
    for target in _inspected(snap):
        subject = f"target:{target['target']}"
        for obj in target.get("objects") or []:
            size = obj.get("size_bytes")
            if not obj.get("serializable") or size is None or size <= limit:
                continue
            largest = obj.get("largest_members") or []
            dominant = obj.get("dominant_member")
            message = f"{_what(obj)} pickles to {_mib(size)}, over the {_mib(limit)} limit"
            if dominant:
                message += (f"; {dominant['path']} ({dominant['type']}) holds "
                            f"{_mib(dominant['size_bytes'])} of it")
            elif largest:
                message += "; largest members: " + ", ".join(
                    f"{m['path']} ({m['type']}, {_mib(m['size_bytes'])})" for m in largest[:3])
            what = dominant["path"] if dominant else f"the largest members of {obj['name']}"
            fix = LARGE_FIXES["an object RLlib ships pickles large"].format(name=obj["name"], what=what)
            yield warn(subject, message,
                       {"target": target["target"], "object": obj["name"], "size_bytes": size,
                        "max_bytes": limit, "largest_members": largest[:6],
                        "dominant_member": dominant}, fix)
