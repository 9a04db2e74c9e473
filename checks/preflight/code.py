"""The user's code on every node: RLD902 (the env imports and builds where runners land) and
RLD903 (the packages the training imports differ between nodes)."""

from __future__ import annotations

from rldoctor.checks.preflight._plan import node_name, plan, runner_nodes, section, subject
from rldoctor.registry import check, fail, note, warn

STAGE_TEXT = {
    "import": "the env's code does not import",
    "resolve": "the env's name is not registered",
    "build": "the env raised while it was built",
    "probe": "the probe in the job's runtime_env did not run",
    "timeout": "the probe did not answer in time",
}
# The fixes of RLD902's findings, by case: a stage's words (STAGE_TEXT), or an env that
# cannot be shipped at all.
ENV_FIXES = {
    "the env cannot be pickled": (
        "Run `rldoctor check --target` on the env creator: it names the member that cannot be "
        "pickled (RLD501)."),
    "the env's code does not import": (
        "Ship the env's code with the job: `runtime_env={{'working_dir': '.'}}` or "
        "`{{'py_modules': [<your package>]}}` (or `pip`), or install the package on every "
        "node's image; try it with `rldoctor preflight TARGET --runtime-env '{{...}}'`."),
    "the env's name is not registered": (
        "Register the env where the env runners run: `register_env(\"{name}\", creator)` "
        "in the driver script before `build_algo()` (RLlib ships it), or put "
        "`gymnasium.register(...)` in the env package's `__init__` so that importing it "
        "on the node registers it, and set `config.environment(\"pkg.module:{name}\")`."),
    "the env raised while it was built": (
        "Fix what the env's constructor needs on that node (files, devices, environment "
        "variables, `env_config` keys); the line is the env's own error."),
    "the probe did not answer in time": (
        "The node was too slow to start a worker and answer (a busy host, or a "
        "runtime_env still installing); run preflight again, and look at that node's "
        "raylet.out if it stays silent."),
    "the probe in the job's runtime_env did not run": (
        "The job's runtime_env could not be set up on that node (a pip package or a "
        "working_dir that does not install there); fix the runtime_env, then run "
        "preflight again."),
}
# The fixes of RLD903's findings, by case.
SKEW_FIXES = {
    "numpy differs between nodes": (
        "Pin one numpy on every node (the image or `runtime_env={{'pip': "
        "['numpy=={version}']}}`): a batch or checkpoint pickled under one numpy major "
        "fails to load under the other (`No module named 'numpy._core'`)."),
    "Python differs between nodes": (
        "Start every node from the same Python release: Ray refuses workers whose Python "
        "differs from the driver's, and pickled code breaks across patch releases."),
    "another package differs between nodes": (
        "Pin {package}=={version} on every node (the image, or the job's "
        "`runtime_env={{'pip': [...]}}`), so that every env runner and learner runs the "
        "same code."),
}


@check("RLD902", "env-unavailable-on-node", area="preflight", lifecycle="preview", requires=("preflight",),
       fixes=ENV_FIXES)
def env_unavailable_on_node(snap, params):
    """A node where an env runner can land but the env's module does not import or the env does not build.

    Symptom:
        The training starts, then remote env runners die at creation: `ModuleNotFoundError:
        No module named 'my_envs'`, `gymnasium.error.NameNotFound: Environment `MyEnv`
        doesn't exist`, `RayActorError: The actor died unexpectedly before finishing this
        task`, and RLlib's `EnvRunnerGroup` gives up after its restarts.

    Cause:
        Each env runner builds the env on its own node, from what that node can import in the
        job's runtime_env: a package installed on the head only, a module beside the driver
        script that no `working_dir` ships, or an env registered with `gymnasium.register` in
        the driver only (RLlib ships `register_env` creators, never gymnasium's registry).
    """
    sect = section(snap)
    env = plan(snap).get("env") or {}
    if env.get("kind") == "unpicklable":
        yield fail("cluster", f"the env {env.get('name')} cannot be shipped to the env runners: "
                   f"{env.get('error')}", {"env": env.get("name")},
                   ENV_FIXES["the env cannot be pickled"].format())
        return
    landing = set(runner_nodes(snap))
    built = []
    for node_id, view in sorted((sect.get("nodes") or {}).items()):
        if node_id not in landing:
            continue
        if view.get("failed"):
            stage = "timeout" if str(view["failed"]).startswith(("no answer", "timeout")) else "probe"
            error = view["failed"]
        elif isinstance(view.get("env"), dict) and view["env"].get("ok") is False:
            stage, error = view["env"].get("stage") or "build", view["env"].get("error")
        else:
            if isinstance(view.get("env"), dict) and view["env"].get("ok"):
                built.append(node_id)
            continue
        name = env.get("name") or "?"
        yield (warn if stage == "timeout" else fail)(subject(node_id), f"{STAGE_TEXT.get(stage, stage)} on {node_name(snap, node_id)}"
                   f", where env runners can land: {error}",
                   {"env": name, "stage": stage, "error": error,
                    "runtime_env": sect.get("plan", {}).get("runtime_env") or {}},
                   ENV_FIXES.get(STAGE_TEXT.get(stage), ENV_FIXES[STAGE_TEXT["build"]]).format(name=name))
    if built:  # what was tried, in the check's detail: the nodes that answered
        yield note("cluster", f"the env {env.get('name') or '?'} imports and builds on "
                   f"{len(built)} of {len(landing)} node(s) where env runners can land",
                   {"nodes": [n[:8] for n in built]})


def _major(version: str | None) -> str | None:
    return version.split(".")[0] if version else None


@check("RLD903", "package-skew", area="preflight", lifecycle="preview", requires=("preflight",),
       fixes=SKEW_FIXES)
def package_skew(snap, params):
    """Packages the training imports (numpy, gymnasium, torch, Ray, the env's own, Python) that differ between nodes.

    Symptom:
        A checkpoint or a sample batch made on one node fails to load on another
        (`ModuleNotFoundError: No module named 'numpy._core'`, `_pickle.UnpicklingError`), an
        env behaves differently on some env runners, or only the workers of one node crash.

    Cause:
        Nodes started from different images or virtualenvs: numpy 2 on one node and numpy 1
        on another, a gymnasium or torch release that differs, the env's own package at
        another version (or other code), or a Python patch release that differs.
    """
    sect = section(snap)
    views = {n: v for n, v in (sect.get("nodes") or {}).items() if v.get("packages")}
    if len(views) < 2:
        return
    names = sorted({name for v in views.values() for name in v["packages"]})
    for name in names:
        by_version: dict[str, list[str]] = {}
        for node_id, view in sorted(views.items()):
            entry = view["packages"].get(name) or {}
            shown = entry.get("version") or (f"code {entry['digest']}" if entry.get("digest") else
                                             ("present, no version" if entry.get("origin") else "missing"))
            if entry.get("version") and entry.get("digest") and name == plan(snap).get("env_package"):
                shown = f"{entry['version']} (code {entry['digest']})"
            by_version.setdefault(shown, []).append(node_id)
        if len(by_version) < 2:
            continue
        if set(by_version) == {"missing"}:
            continue
        majority = max(by_version, key=lambda k: len(by_version[k]))
        parts = [f"{version} on {', '.join(node_name(snap, n) for n in nodes)}"
                 for version, nodes in sorted(by_version.items(), key=lambda kv: -len(kv[1]))]
        majors = {_major(v) for v in by_version if v[:1].isdigit()}
        severe = name == "python" or (name == "numpy" and len(majors) > 1) or "missing" in by_version
        odd = [n for v, nodes in by_version.items() if v != majority for n in nodes]
        what = "Python" if name == "python" else name
        key = {"numpy": "numpy differs between nodes", "python": "Python differs between nodes"}.get(
            name, "another package differs between nodes")
        yield (fail if severe else warn)(
            subject(odd[0]) if len(odd) == 1 else "cluster",
            f"{what} differs between nodes: {'; '.join(parts)}",
            {"package": name, "versions": {v: [n[:8] for n in nodes] for v, nodes in by_version.items()}},
            SKEW_FIXES[key].format(package=name, version=majority))
