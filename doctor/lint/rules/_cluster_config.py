"""RLD802: what is wrong with a cluster launcher YAML, explained, with the fix written out.

The collector asked the installed Ray (`prepare_config` + `validate_config`, the
functions `ray up` runs before it contacts a provider); this module turns
Ray's errors and warnings into findings at the right line, writes out the
replacement for legacy `head_node`/`worker_nodes` sections for this very file,
and adds what Ray does not check: a Ray pinned in the setup commands that is
not the Ray the client and driver run, `min_workers` that cannot be met,
`worker_ips` against `max_workers` for on-premise clusters, keys given twice,
and node types no PPO actor fits on.
"""

from __future__ import annotations

import difflib
import re
import shlex

from rldoctor.lint.rules._cluster_fixes import FIXES
from rldoctor.lint.rules._problem import Problem

LEGACY = ("head_node", "worker_nodes")
COMMAND_LISTS = ("initialization_commands", "setup_commands", "head_setup_commands",
                 "worker_setup_commands", "head_start_ray_commands", "worker_start_ray_commands")
_RAY_PIN = re.compile(r"""(?<![\w.-])(["']?)ray(\[[^\]\s]*\])?\s*==\s*([0-9][0-9A-Za-z.+-]*)\1""")
_RAY_WHEEL = re.compile(r"ray-([0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.]*)-cp")
_RAY_REQUIREMENT = re.compile(r"ray(\[[^\]\s]*\])?")
_PIP_INSTALL = re.compile(r"\bpip3?\s+install\b")
_RAY_IMAGE = re.compile(r"rayproject/ray(?:-ml)?:([0-9][0-9A-Za-z.]*|latest|nightly)")
_LOCAL_START_HEAD = "ulimit -c unlimited; ray start --head --port=6379 --autoscaling-config=~/ray_bootstrap_config.yaml"
_LOCAL_START_WORKER = "ray start --address=$RAY_HEAD_IP:6379"


def where(doc: dict, pointer: str) -> tuple[int, int]:
    """(line, column from 1) of a JSON pointer, or of its nearest located ancestor."""
    locations = doc.get("locations") or {}
    probe = pointer
    while probe:
        if probe in locations:
            return tuple(locations[probe])
        probe = probe.rsplit("/", 1)[0]
    return doc.get("line", 1), 1


def _legacy_resources(section: dict) -> dict:
    for key in ("Resources", "resources"):
        if isinstance(section.get(key), dict):
            return section[key]
    return {}


def _start_flags(resources: dict) -> str:
    flags = []
    for key, value in resources.items():
        if key == "CPU":
            flags.append(f"--num-cpus={value}")
        elif key == "GPU":
            flags.append(f"--num-gpus={value}")
        elif key == "memory":
            flags.append(f"--memory={value}")
        elif key == "object_store_memory":
            flags.append(f"--object-store-memory={value}")
        else:
            flags.append(f"--resources='{{\"{key}\": {value}}}'")
    return " ".join(flags)


def legacy_replacement(data: dict, prepared: dict | None) -> str:
    """The 2.x form of this file's legacy sections, as YAML to paste."""
    head = data.get("head_node") if isinstance(data.get("head_node"), dict) else {}
    worker = data.get("worker_nodes") if isinstance(data.get("worker_nodes"), dict) else {}
    provider = data.get("provider") if isinstance(data.get("provider"), dict) else {}
    min_workers = worker.get("min_workers", data.get("min_workers"))
    max_workers = worker.get("max_workers", data.get("max_workers"))
    if provider.get("type") == "local":
        ips = provider.get("worker_ips") or []
        if isinstance(max_workers, int) and ips and max_workers > len(ips):
            max_workers = len(ips)
        head_cmds = (prepared or {}).get("head_start_ray_commands") or ["ray stop", _LOCAL_START_HEAD]
        worker_cmds = (prepared or {}).get("worker_start_ray_commands") or ["ray stop", _LOCAL_START_WORKER]
        head_flags, worker_flags = _start_flags(_legacy_resources(head)), _start_flags(_legacy_resources(worker))
        lines = ["# delete head_node and worker_nodes: an on-premise cluster's nodes are "
                 "provider.head_ip and provider.worker_ips, and Ray counts their CPUs itself"]
        if min_workers is not None:
            lines.append(f"min_workers: {min_workers}")
        if max_workers is not None:
            lines.append(f"max_workers: {max_workers}")
        if head_flags:
            lines.append("head_start_ray_commands:")
            lines += [f"  - {c}" + (f" {head_flags}" if "ray start" in c else "") for c in head_cmds]
        if worker_flags:
            lines.append("worker_start_ray_commands:")
            lines += [f"  - {c}" + (f" {worker_flags}" if "ray start" in c else "") for c in worker_cmds]
        return "\n".join(lines)
    lines = ["head_node_type: head", "available_node_types:", "  head:"]
    head_config = {k: v for k, v in head.items() if k not in ("Resources", "resources")}
    lines += [f"    resources: {_flow(_legacy_resources(head))}", f"    node_config: {_flow(head_config)}"]
    lines += ["  worker:", f"    resources: {_flow(_legacy_resources(worker))}"]
    worker_config = {k: v for k, v in worker.items()
                     if k not in ("Resources", "resources", "min_workers", "max_workers")}
    lines.append(f"    node_config: {_flow(worker_config)}")
    if min_workers is not None:
        lines.append(f"    min_workers: {min_workers}")
    if max_workers is not None:
        lines.append(f"    max_workers: {max_workers}")
    return "\n".join(lines)


def _flow(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return str(value)


def _commands(data: dict):
    """(pointer, command) for every shell command the launcher runs."""
    for key in COMMAND_LISTS:
        for i, cmd in enumerate(data.get(key) or [] if isinstance(data.get(key), list) else []):
            if isinstance(cmd, str):
                yield f"/{key}/{i}", cmd
    types = data.get("available_node_types")
    if isinstance(types, dict):
        for name, spec in types.items():
            if not isinstance(spec, dict):
                continue
            for key in ("initialization_commands", "worker_setup_commands"):
                for i, cmd in enumerate(spec.get(key) or [] if isinstance(spec.get(key), list) else []):
                    if isinstance(cmd, str):
                        yield f"/available_node_types/{name}/{key}/{i}", cmd


def _ray_pins(data: dict, ray_version: str) -> list[Problem]:
    out = []
    for pointer, cmd in _commands(data):
        for match in _RAY_PIN.finditer(cmd):
            pinned = match.group(3)
            if pinned == ray_version:
                continue
            extras = match.group(2) or ""
            fixed = cmd[:match.start()] + f'"ray{extras}=={ray_version}"' + cmd[match.end():]
            out.append(Problem(
                "fail", pointer,
                f"installs Ray {pinned} on every node (setup commands run on the head too), while "
                f"this machine runs Ray {ray_version}: the cluster runs another Ray than the client "
                "that launches it, and a driver started from here fails with \"RuntimeError: "
                f"Version mismatch: The cluster was started with: Ray: {pinned}\" (RLD102)",
                FIXES["setup_commands pin another Ray than the client's"].format(fixed=fixed), fixed, {"pinned": pinned, "client_ray": ray_version}))
        for match in _RAY_WHEEL.finditer(cmd):
            if match.group(1) != ray_version:
                out.append(Problem("fail", pointer, f"installs a Ray {match.group(1)} wheel, while this "
                                   f"client and the driver run Ray {ray_version}",
                                   FIXES["setup_commands install another Ray's wheel"].format(
                                       ray_version=ray_version), "",
                                   {"pinned": match.group(1), "client_ray": ray_version}))
    docker = data.get("docker") if isinstance(data.get("docker"), dict) else {}
    out += _unpinned_installs(data, docker, ray_version)
    for key in ("image", "head_image", "worker_image"):
        image = docker.get(key)
        match = _RAY_IMAGE.search(image) if isinstance(image, str) else None
        if not match:
            continue
        tag = match.group(1)
        if tag in ("latest", "nightly"):
            out.append(Problem("warn", f"/docker/{key}", f"`{image}` floats: the nodes run whatever "
                               f"Ray that tag points to when they start, not necessarily {ray_version}",
                               FIXES["the image's tag floats"].format(ray_version=ray_version),
                               f"rayproject/ray:{ray_version}", {"image": image}))
        elif not tag.startswith(ray_version):
            out.append(Problem("fail", f"/docker/{key}", f"`{image}` runs Ray {tag} on every node, "
                               f"while this client and the driver run Ray {ray_version}",
                               FIXES["the image runs another Ray than the client's"].format(ray_version=ray_version),
                               f"rayproject/ray:{ray_version}",
                               {"image": image, "client_ray": ray_version}))
    return out


def _unpinned_installs(data: dict, docker: dict, ray_version: str) -> list[Problem]:
    """`pip install ray[...]` with no version: the nodes install whatever Ray is newest when they
    start. Harmless only where an image already pins Ray and pip is not told to upgrade."""
    images = [docker.get(k) for k in ("image", "head_image", "worker_image") if isinstance(docker.get(k), str)]
    pinned_image = any((m := _RAY_IMAGE.search(i)) and m.group(1) not in ("latest", "nightly") for i in images)
    out = []
    for pointer, cmd in _commands(data):
        for part in re.split(r"&&|\|\||;|\|", cmd):
            if not _PIP_INSTALL.search(part):
                continue
            try:
                words = shlex.split(part)
            except ValueError:
                continue
            upgrade = any(w in ("-U", "--upgrade") for w in words)
            if pinned_image and not upgrade:
                continue
            for word in words[words.index("install") + 1:] if "install" in words else []:
                match = _RAY_REQUIREMENT.fullmatch(word)
                if not match:
                    continue
                fixed = cmd.replace(word, f'"ray{match.group(1) or ""}=={ray_version}"', 1)
                out.append(Problem(
                    "warn", pointer,
                    f"`pip install {word}` names no Ray version: every node installs whatever Ray is "
                    f"newest when it starts, not necessarily the {ray_version} this client runs, and a "
                    "driver started from here then fails with \"Version mismatch\" (RLD102)",
                    FIXES["`pip install` names no Ray version"].format(fixed=fixed), fixed,
                    {"requirement": word, "client_ray": ray_version}))
    return out


def _workers(data: dict, verdict: dict) -> list[Problem]:
    out = []
    provider = data.get("provider") if isinstance(data.get("provider"), dict) else {}
    warnings = verdict.get("warnings") or []

    def ray_says(word: str) -> str:
        said = next((w for w in warnings if word in w), "")
        return f" (`ray up` says: \"{said}\")" if said else ""

    if provider.get("type") == "local" and "coordinator_address" not in provider:
        ips = provider.get("worker_ips")
        if isinstance(ips, list):
            n = len(ips)
            max_workers = data.get("max_workers")
            if isinstance(max_workers, int) and max_workers > n:
                out.append(Problem("warn", "/max_workers",
                                   f"max_workers is {max_workers} but provider.worker_ips lists {n} "
                                   f"machine(s): an on-premise cluster only uses the listed machines, "
                                   f"so at most {n} worker(s) ever join" + ray_says("greater than"),
                                   FIXES["max_workers is above the machines listed on premise"].format(
                                       n=n, more=max_workers - n), f"max_workers: {n}"))
            elif isinstance(max_workers, int) and max_workers < n:
                out.append(Problem("warn", "/max_workers",
                                   f"max_workers is {max_workers} but provider.worker_ips lists {n} "
                                   f"machines: only {max_workers} of them join" + ray_says("less than"),
                                   FIXES["max_workers is below the machines listed on premise"].format(n=n),
                                   f"max_workers: {n}"))
            min_workers = data.get("min_workers")
            if isinstance(min_workers, int) and min_workers > n:
                out.append(Problem("warn", "/min_workers",
                                   f"min_workers is {min_workers} but only {n} machine(s) are listed",
                                   FIXES["min_workers is above the machines listed on premise"].format(n=n),
                                   f"min_workers: {n}"))
            head = provider.get("head_ip")
            if head and head in ips:
                out.append(Problem("fail", "/provider/worker_ips",
                                   f"the head {head} is also listed in worker_ips: the launcher would "
                                   "start a second raylet on the head machine",
                                   FIXES["the head is listed in worker_ips"].format()))
            duplicates = sorted({ip for ip in ips if ips.count(ip) > 1})
            if duplicates:
                out.append(Problem("warn", "/provider/worker_ips",
                                   f"{', '.join(map(str, duplicates))} listed more than once",
                                   FIXES["a machine is listed twice"].format()))
    types = data.get("available_node_types")
    if isinstance(types, dict):
        total_min = 0
        for name, spec in types.items():
            if not isinstance(spec, dict):
                continue
            low, high = spec.get("min_workers", 0), spec.get("max_workers")
            if isinstance(low, int):
                total_min += low
            if isinstance(low, int) and isinstance(high, int) and low > high:
                out.append(Problem("fail", f"/available_node_types/{name}/min_workers",
                                   f"node type {name}: min_workers {low} is above its max_workers {high}; "
                                   "the autoscaler can never satisfy both",
                                   FIXES["a node type's min_workers is above its max_workers"].format(high=high)))
        top = data.get("max_workers")
        already = any("sum of `min_workers`" in e.get("message", "") for e in verdict.get("errors") or [])
        if isinstance(top, int) and total_min > top and not already:
            out.append(Problem("fail", "/max_workers",
                               f"the node types' min_workers add up to {total_min}, above max_workers "
                               f"{top}: Ray refuses it (\"The specified global `max_workers` is smaller "
                               "than the sum of `min_workers` of all the available node types.\")",
                               FIXES["the node types' min_workers add up to more than max_workers"].format(
                                   total_min=total_min),
                               f"max_workers: {total_min}"))
    return out


_RLLIB_WORDS = re.compile(r"rllib|ray-ml|\b(ppo|appo|impala|dqn|sac|marwil|dreamerv3)\b", re.I)


def about_rllib(data) -> bool:
    """Is this cluster file about an RLlib training (its setup commands, images, entrypoints)?
    Resource advice meant for RLlib trainings is given only then: a general-purpose cluster
    with a 0-CPU head is what Ray's docs recommend."""
    import json

    return bool(_RLLIB_WORDS.search(json.dumps(data, default=str)))


def _ppo_fit(data: dict, rllib: bool) -> list[Problem]:
    """Node types whose declared resources no PPO actor can use (advice: info, RLlib clusters only)."""
    out = []
    if not rllib:
        return out
    types = data.get("available_node_types")
    if not isinstance(types, dict):
        return out
    for name, spec in types.items():
        resources = spec.get("resources") if isinstance(spec, dict) else None
        if not isinstance(resources, dict) or "CPU" not in resources:
            continue
        cpu, gpu = resources.get("CPU") or 0, resources.get("GPU") or 0
        if isinstance(cpu, (int, float)) and cpu < 1 and not gpu:
            out.append(Problem("info", f"/available_node_types/{name}/resources",
                               f"node type {name} offers CPU: {cpu} and no GPU: no PPO actor fits on it "
                               "(the algorithm, every env runner and every learner ask for 1 CPU by "
                               "default; a GPU learner asks for a GPU)",
                               FIXES["no PPO actor fits on a node type"].format()))
    return out


def _unexpected(doc: dict, error: dict) -> list[Problem]:
    out = []
    for key in error.get("unexpected") or []:
        if key in LEGACY:
            continue
        pointer = f"{error['pointer']}/{key}"
        allowed = error.get("allowed") or []
        near = difflib.get_close_matches(key, allowed, n=1, cutoff=0.7)
        fix = (FIXES["a key is not in Ray's schema but close to one that is"].format(near=near[0]) if near
               else FIXES["a key is not in Ray's schema"].format())
        out.append(Problem("fail", pointer, f"`{key}` is not a cluster config key, so `ray up` stops with "
                           f"\"{error['message']}\"", fix, near[0] if near else "",
                           {"ray_error": error["message"]}))
    return out


def cluster_problems(doc: dict, ray_version: str, rllib: bool | None = None) -> list[Problem]:
    data = doc["data"]
    if rllib is None:
        rllib = about_rllib(data)
    verdict = doc.get("cluster") or {}
    out: list[Problem] = []
    errors = verdict.get("errors") or []
    legacy_here = [k for k in LEGACY if k in data and data[k]]
    for key in LEGACY:
        if key in data and not data[key] and not legacy_here:
            dropped = [w for w in verdict.get("warnings") or [] if key in w]
            out.append(Problem("warn", f"/{key}",
                               f"empty legacy `{key}` section: Ray 2.x drops it with a warning"
                               + (f" (\"{dropped[0]}\")" if dropped else "")
                               + " and starts the nodes from `provider` (on premise: head_ip and worker_ips)",
                               FIXES["a legacy section is empty"].format(key=key), "", {"ray_warnings": dropped}))
    if legacy_here:
        said = [e["message"] for e in errors if any(k in e["message"] for k in LEGACY)]
        schema = [e["message"] for e in verdict.get("schema_errors") or []
                  if any(k in e["message"] for k in LEGACY)]
        words = "; ".join(dict.fromkeys(said + schema)) or "legacy sections"
        replacement = legacy_replacement(data, verdict.get("prepared"))
        out.append(Problem("fail", f"/{legacy_here[0]}",
                           f"legacy {' and '.join(legacy_here)} section(s): `ray up` rejects this file "
                           f"(\"{words}\")",
                           FIXES["the file has legacy (Ray 1.x) sections"].format(replacement=replacement), replacement,
                           {"ray_errors": said, "schema_errors": schema}))
        for key in legacy_here[1:]:  # each legacy section is reported on its own line
            out.append(Problem("fail", f"/{key}",
                               f"`{key}` is a Ray 1.x section: `ray up` rejects it like `{legacy_here[0]}`",
                               FIXES["a second legacy section is there"].format(first=legacy_here[0]),
                               "", {"ray_errors": said, "schema_errors": schema}))
    for error in errors:
        if any(k in error["message"] for k in LEGACY) and not error.get("unexpected"):
            continue
        if error.get("validator") == "additionalProperties":
            out += _unexpected(doc, error)
            continue
        if "sum of `min_workers`" in error["message"]:
            provider = data.get("provider") if isinstance(data.get("provider"), dict) else {}
            ips = provider.get("worker_ips")
            if provider.get("type") == "local" and isinstance(ips, list) and "min_workers" not in data:
                fix = FIXES["Ray refuses max_workers under the min_workers, on premise with no min_workers"].format(
                    ips=len(ips), low=min(len(ips), data.get('max_workers', len(ips))))
            else:
                fix = FIXES["Ray refuses max_workers under the min_workers"].format()
            out.append(Problem("fail", "/max_workers", f"`ray up` stops: \"{error['message']}\"", fix))
            continue
        out.append(Problem("fail", error.get("pointer") or "",
                           f"`ray up` stops: \"{error['message']}\"",
                           FIXES["Ray's validator rejects a value"].format(),
                           evidence={"stage": error.get("stage")}))
    out += _ray_pins(data, ray_version)
    out += _workers(data, verdict)
    out += _ppo_fit(data, rllib)
    from rldoctor.lint.rules._ray_start import command_problems

    locations = doc.get("locations") or {}
    for pointer, command in _commands(data):
        for problem in command_problems(pointer, command):
            at = locations.get(f"{pointer}#{problem.evidence.get('flag')}")
            if at:  # a command over several lines: the flag's own line
                problem.evidence.update(line=at[0], column=at[1])
            out.append(problem)
    for dup in doc.get("duplicates") or []:
        out.append(Problem("warn", dup["pointer"],
                           f"`{dup['pointer'].rsplit('/', 1)[-1]}` appears twice in one mapping (first on "
                           f"line {dup['first_line']}); `ray up` silently keeps this later value",
                           FIXES["a key is written twice in one mapping"].format(), evidence={"line": dup["line"], "column": dup["column"]}))
    return out
