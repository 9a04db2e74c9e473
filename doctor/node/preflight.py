"""What `rldoctor preflight` reads on each node, in the runtime_env the training's workers would have.

Pickled by value (`register`): the standard library and ray only. The user's packages (numpy,
gymnasium, torch, the env's own) are looked up by name at run time on the node, never imported
here at module level, and an import that fails is an answer, not an exception.

`node_view(plan, node_id)` runs once per node (a zero-CPU task pinned to it): Python, the
versions of the packages the training imports, whether the env's code imports and the env
builds there, the storage marker it writes, and what a GPU worker there would see.
`storage_seen(path, token)` lists the markers a node sees; `storage_cleanup` removes its own.
`env_contract(plan)` steps the env on one node: reset, a few hundred steps, timed.
"""

from __future__ import annotations

MARKER_PREFIX = ".rldoctor-preflight-"
CONTRACT_STEPS = 300
CONTRACT_BUDGET_S = 3.0
GPU_PROBE_TIMEOUT_S = 30.0


def _last_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:400]


def _version_of(name: str) -> dict:
    """A distribution's version from its metadata, and where the module would come from."""
    import importlib.metadata as metadata
    import importlib.util

    found: dict = {"version": None, "origin": None}
    try:
        found["version"] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
    except Exception:  # a broken dist-info is not this probe's failure
        pass
    try:
        spec = importlib.util.find_spec(name)
        found["origin"] = getattr(spec, "origin", None) if spec else None
    except (ImportError, ValueError):
        pass
    return found


def _module_digest(name: str) -> str | None:
    """A short digest of a module's source file: a package without a version still shows
    when its code differs between nodes."""
    import hashlib
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) if spec else None
    if not origin or not origin.endswith(".py"):
        return None
    try:
        with open(origin, "rb") as f:
            return hashlib.sha256(f.read(1 << 20)).hexdigest()[:12]
    except OSError:
        return None


def packages_here(names: list[str], own: str | None) -> dict:
    import platform

    found = {"python": {"version": platform.python_version(), "origin": None}}
    for name in names:
        found[name] = _version_of(name)
    if own:
        import sys

        entry = _version_of(own)
        loaded = sys.modules.get(own)
        if entry["version"] is None and loaded is not None:
            version = getattr(loaded, "__version__", None)
            entry["version"] = str(version) if version is not None else None
        entry["digest"] = _module_digest(own)
        found[own] = entry
    return found


def _env_context(plan: dict):
    config = dict((plan.get("env") or {}).get("env_config") or {})
    try:
        from ray.rllib.env.env_context import EnvContext

        return EnvContext(config, worker_index=1, num_workers=1)
    except Exception:
        return config


def build_env(plan: dict):
    """The env as an env runner would make it: (env, None) or (None, {stage, error})."""
    import base64
    import importlib

    spec = plan.get("env") or {}
    kind = spec.get("kind")
    try:
        if kind == "pickled":
            import ray.cloudpickle

            maker = ray.cloudpickle.loads(base64.b64decode(spec["payload"]))
        elif kind == "gym_id":  # RLlib's own dependency, looked up by name on the node
            gymnasium = importlib.import_module("gymnasium")
            maker = None
        else:
            return None, {"stage": "resolve", "error": f"no env in the config ({kind})"}
    except BaseException as exc:  # the env's module is missing here, or its own import fails
        return None, {"stage": "import", "error": _last_line(exc)}
    try:
        if maker is not None:
            env = maker(_env_context(plan))
        else:
            env = gymnasium.make(spec["name"], **dict(spec.get("env_config") or {}))
    except BaseException as exc:
        stage = "resolve" if type(exc).__name__ in ("NameNotFound", "NamespaceNotFound",
                                                    "VersionNotFound", "UnregisteredEnv") else "build"
        if isinstance(exc, ImportError):
            stage = "import"
        return None, {"stage": stage, "error": _last_line(exc)}
    return env, None


def _mount_of(path: str) -> dict:
    """The mount that holds `path` here (its file system type and mount point)."""
    import os

    best = {"mount_point": None, "fs_type": None}
    try:
        real = os.path.realpath(path)
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                point = left.split()[4]
                if (real == point or real.startswith(point.rstrip("/") + "/")) and \
                        len(point) >= len(best["mount_point"] or ""):
                    best = {"mount_point": point, "fs_type": right.split()[0] if right else None}
    except (OSError, IndexError):
        pass
    return best


def storage_write(path: str, token: str, node_id: str) -> dict:
    """Write this node's marker under `path` (making the folder if it is missing, as Tune
    does); what stopped it, if anything."""
    import os

    out: dict = {"path": path, "created": False, **_mount_of(path)}
    try:
        if not os.path.isdir(path):
            os.makedirs(path, exist_ok=True)
            out["created"] = True
            out.update(_mount_of(path))
        with open(os.path.join(path, f"{MARKER_PREFIX}{token}-{node_id}"), "w") as f:
            f.write(node_id)
        out["written"] = True
    except OSError as exc:
        out["written"] = False
        out["error"] = _last_line(exc)
    return out


def storage_seen(path: str, token: str) -> list[str]:
    """The node ids whose markers this node sees under `path`."""
    import os

    head = f"{MARKER_PREFIX}{token}-"
    try:
        return sorted(name[len(head):] for name in os.listdir(path) if name.startswith(head))
    except OSError:
        return []


def storage_cleanup(path: str, token: str, node_id: str, created: bool) -> None:
    """Remove this node's marker; with `created`, the folder too once it is empty (called
    again after every node removed its marker)."""
    import os

    try:
        os.remove(os.path.join(path, f"{MARKER_PREFIX}{token}-{node_id}"))
    except OSError:
        pass
    if created:
        try:
            os.rmdir(path)  # only when empty: nothing of the user's is touched
        except OSError:
            pass


def gpus_here(want: int) -> dict:
    """What this worker sees (CUDA_VISIBLE_DEVICES as Ray set it for a zero-GPU task), and what
    a worker that Ray gives `want` GPUs would see: torch's device count in a fresh process
    whose CUDA_VISIBLE_DEVICES is the ids Ray hands out (0..want-1, or the first of the
    node's own list when the node was started with one)."""
    import json
    import os
    import subprocess
    import sys

    out: dict = {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                 "driver": None, "nvidia_smi": None}
    try:
        with open("/proc/driver/nvidia/version") as f:
            out["driver"] = f.readline().strip()[:200]
    except OSError:
        pass
    import shutil

    out["nvidia_smi"] = shutil.which("nvidia-smi")
    ids = [str(i) for i in range(max(want, 1))]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(ids))
    code = ("import json\ntry:\n import torch\n print(json.dumps({'torch': torch.__version__, "
            "'cuda_build': torch.version.cuda, 'available': torch.cuda.is_available(), "
            "'count': torch.cuda.device_count()}))\nexcept ImportError as e:\n"
            " print(json.dumps({'torch': None, 'error': str(e)}))\n")
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=GPU_PROBE_TIMEOUT_S)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        out["as_gpu_worker"] = json.loads(lines[-1]) if lines else {
            "error": (done.stderr.strip().splitlines() or ["no answer"])[-1][:300]}
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        out["as_gpu_worker"] = {"error": _last_line(exc)}
    out["as_gpu_worker"]["cuda_visible_devices"] = ",".join(ids)
    return out


def node_view(plan: dict, node_id: str) -> dict:
    """Everything preflight reads on one node, each part bounded and failing on its own."""
    import time

    started = time.monotonic()
    view: dict = {"node_id": node_id}
    env, failure = build_env(plan)  # first: a package without metadata then has __version__
    view["packages"] = packages_here(list(plan.get("packages") or []), plan.get("env_package"))
    if failure is None:
        view["env"] = {"ok": True, "type": f"{type(env).__module__}.{type(env).__qualname__}"}
        try:
            env.close()
        except BaseException:
            pass
    else:
        view["env"] = {"ok": False, **failure}
    storage = plan.get("storage") or {}
    if storage.get("local_path"):
        view["storage"] = storage_write(storage["local_path"], storage["token"], node_id)
    if plan.get("gpu_probe"):
        view["gpus"] = gpus_here(int(plan.get("gpu_probe") or 1))
    view["seconds"] = round(time.monotonic() - started, 3)
    return view


def _space_name(space) -> str:
    return type(space).__name__ if space is not None else "none"


def _finite(value) -> bool:
    import math

    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def env_contract(plan: dict) -> dict:
    """Reset and step the env (random actions) for at most CONTRACT_STEPS steps or
    CONTRACT_BUDGET_S seconds: the spaces against what it returns, the step API, rewards,
    episode ends and the time per step."""
    import time

    env, failure = build_env(plan)
    if failure is not None:
        return {"ok": False, **failure}
    out: dict = {"ok": True, "problems": []}
    problems = out["problems"]
    try:
        obs_space = getattr(env, "observation_space", None)
        act_space = getattr(env, "action_space", None)
        out["observation_space"] = _space_name(obs_space)
        out["action_space"] = _space_name(act_space)
        spec = getattr(env, "spec", None)
        out["max_episode_steps"] = getattr(spec, "max_episode_steps", None)
        if obs_space is None or act_space is None:
            problems.append({"kind": "no-spaces", "detail": "the env has no observation_space "
                             "or action_space attribute"})
            return out
        began = time.monotonic()
        first = env.reset()
        out["reset_s"] = round(time.monotonic() - began, 4)
        if not (isinstance(first, tuple) and len(first) == 2):
            problems.append({"kind": "reset-api", "detail": "reset() returned "
                             f"{type(first).__name__}"
                             + (f" of {len(first)}" if isinstance(first, tuple) else "")
                             + ", not Gymnasium's (obs, info)"})
            return out
        obs = first[0]
        if not _contains(obs_space, obs):
            problems.append({"kind": "obs-outside-space", "step": 0,
                             "detail": f"reset()'s observation {_short(obs)} is not in "
                             f"observation_space {_short(obs_space)}"})
        steps = episodes = length = longest = 0
        step_time = 0.0
        deadline = time.monotonic() + CONTRACT_BUDGET_S
        while steps < CONTRACT_STEPS and time.monotonic() < deadline:
            action = act_space.sample()
            t0 = time.monotonic()
            result = env.step(action)
            step_time += time.monotonic() - t0
            steps += 1
            length += 1
            if not isinstance(result, tuple) or len(result) != 5:
                problems.append({"kind": "step-api", "step": steps,
                                 "detail": "step() returned "
                                 + (f"a {len(result)}-tuple" if isinstance(result, tuple)
                                    else type(result).__name__)
                                 + ", not Gymnasium's (obs, reward, terminated, truncated, info)"})
                break
            obs, reward, terminated, truncated, _info = result
            if not _finite(reward):
                if not any(p["kind"] == "reward" for p in problems):
                    problems.append({"kind": "reward", "step": steps,
                                     "detail": f"step {steps} returned the reward {reward!r}"})
            if not any(p["kind"] == "obs-outside-space" for p in problems) and \
                    not _contains(obs_space, obs):
                problems.append({"kind": "obs-outside-space", "step": steps,
                                 "detail": f"step {steps}'s observation {_short(obs)} is not "
                                 f"in observation_space {_short(obs_space)}"})
            if terminated or truncated:
                episodes += 1
                longest = max(longest, length)
                length = 0
                env.reset()
        out.update({"steps": steps, "episodes_ended": episodes,
                    "longest_episode": max(longest, length), "open_episode_steps": length,
                    "step_s": round(step_time / steps, 6) if steps else None,
                    "stepped_s": round(step_time, 3)})
    except BaseException as exc:
        problems.append({"kind": "raised", "detail": _last_line(exc)})
    finally:
        try:
            env.close()
        except BaseException:
            pass
    return out


def _contains(space, obs) -> bool:
    try:
        return bool(space.contains(obs))
    except BaseException:
        return False


def _short(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def run_here(func, *args):
    """The task that runs one of this module's reads in the job's runtime_env."""
    return func(*args)


def register() -> None:
    """Pickle this module's functions by value, so nodes need not have rldoctor."""
    import sys

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
