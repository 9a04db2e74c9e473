"""The env's contract, stepped on one node: RLD905 (spaces, step API, rewards, episode ends)
and RLD906 (a step too slow for the runner to fill a fragment within sample_timeout_s)."""

from __future__ import annotations

from rldoctor.checks.preflight._plan import node_name, plan, section, subject
from rldoctor.registry import check, fail, warn

# The fixes of RLD905's findings, by case; PROBLEM_CASE names the case of each problem kind
# the probe reports.
CONTRACT_FIXES = {
    "step() does not return Gymnasium's 5-tuple": (
        "Return Gymnasium's 5-tuple from `step()`: `obs, reward, terminated, truncated, "
        "info` (old gym's `done` splits into `terminated` and `truncated`), or wrap an "
        "old env with `gymnasium.wrappers.EnvCompatibility` / shimmy."),
    "reset() does not return (obs, info)": (
        "Return `obs, info` from `reset(seed=None, options=None)`, as Gymnasium does."),
    "a reward is not a finite number": (
        "Return a finite float reward on every step: a NaN or inf reward makes the loss "
        "NaN at the first update (RLD607 after the fact)."),
    "an observation lies outside observation_space": (
        "Make the observations match `observation_space` (dtype, shape, "
        "bounds): RLlib builds its model and connectors from the space."),
    "the env has no spaces": (
        "Set `self.observation_space` and `self.action_space` in the env's "
        "`__init__`."),
    "the env raised while it was stepped": (
        "Fix the error the env raised while it was stepped; the line is its own."),
    "no episode ends": (
        "Give the env an end: `gymnasium.wrappers.TimeLimit(env, max_episode_steps=N)` "
        "or `max_episode_steps` in its registration, or return `truncated=True`; with "
        "`batch_mode=\"complete_episodes\"` a runner waits for an end that never comes."),
    "the observation space is a Dict or Tuple": (
        "RLlib's default model takes flat observations: add the "
        "`FlattenObservations` connector (`config.env_runners(env_to_module_connector="
        "lambda env, spaces, device: FlattenObservations())`) or a custom RLModule."),
}
PROBLEM_CASE = {"step-api": "step() does not return Gymnasium's 5-tuple",
                "reset-api": "reset() does not return (obs, info)",
                "reward": "a reward is not a finite number",
                "obs-outside-space": "an observation lies outside observation_space",
                "no-spaces": "the env has no spaces", "raised": "the env raised while it was stepped",
                "never-ends": "no episode ends", "dict-space": "the observation space is a Dict or Tuple"}
SEVERE = {"step-api", "reset-api", "reward", "no-spaces", "raised", "obs-outside-space"}


@check("RLD905", "env-contract", area="preflight", lifecycle="preview", requires=("preflight",),
       fixes=CONTRACT_FIXES)
def env_contract(snap, params):
    """The env breaks what RLlib expects of it: spaces, Gymnasium's step API, finite rewards, episodes that end.

    Symptom:
        Env runners fail at their first `sample()` with `ValueError: too many values to
        unpack (expected 5)`, `not enough values to unpack`, an observation `not in
        observation_space`, the model cannot be built for a `Dict` space, losses turn NaN at
        the first update, or `The batch for module_id default_policy is empty!` because no
        episode ever ends.

    Cause:
        RLlib's env runners call Gymnasium's API: `reset()` returns `(obs, info)`, `step()`
        returns `(obs, reward, terminated, truncated, info)`, observations lie in
        `observation_space`, and episodes end (terminated or truncated). An env written for
        old gym (a 4-tuple with `done`), a space that does not match the arrays returned, a
        NaN reward, or an env with no time limit breaks the training after it is submitted.
    """
    sect = section(snap)
    contract = sect.get("contract")
    if not contract or not contract.get("ok"):
        return
    where = sect.get("contract_node")
    subj = subject(where) if where else "cluster"
    on = f" (stepped on {node_name(snap, where)})" if where else ""
    env = snap.field("preflight", "plan", "env", "name") or "the env"
    for problem in contract.get("problems") or []:
        kind = problem.get("kind")
        yield (fail if kind in SEVERE else warn)(
            subj, f"{env}: {problem.get('detail')}{on}",
            {"kind": kind, "step": problem.get("step"),
             "observation_space": contract.get("observation_space"),
             "action_space": contract.get("action_space")},
            CONTRACT_FIXES[PROBLEM_CASE.get(kind, PROBLEM_CASE["raised"])].format())
    if contract.get("observation_space") in ("Dict", "Tuple"):
        yield warn(subj, f"{env}: a {contract['observation_space']} observation space, which "
                   f"RLlib's default model cannot build without flattening{on}",
                   {"observation_space": contract["observation_space"]},
                   CONTRACT_FIXES[PROBLEM_CASE["dict-space"]].format())
    steps = contract.get("steps") or 0
    if steps and not contract.get("episodes_ended") and not contract.get("max_episode_steps") \
            and not any(p.get("kind") in SEVERE for p in contract.get("problems") or []):
        settings = plan(snap).get("settings") or {}
        complete = settings.get("batch_mode") == "complete_episodes"
        yield (fail if complete else warn)(
            subj, f"{env}: no episode ended in {steps} steps and the env has no time limit"
            f"{on}" + ("; with batch_mode complete_episodes no batch is ever full" if complete else ""),
            {"steps": steps, "max_episode_steps": None, "batch_mode": settings.get("batch_mode")},
            CONTRACT_FIXES[PROBLEM_CASE["never-ends"]].format())


SLOW_FIXES = {"a rollout fragment takes longer than (or close to) sample_timeout_s": (
    "Raise `sample_timeout_s` (`config.env_runners(sample_timeout_s=...)`) above the "
    "{need:.0f} s a fragment takes, lower `rollout_fragment_length` (or "
    "`num_envs_per_env_runner`), or make the env's step faster; otherwise each "
    "`sample()` is cut off and RLlib reports `The batch for module_id default_policy "
    "is empty!`.")}
_SLOW = "a rollout fragment takes longer than (or close to) sample_timeout_s"


@check("RLD906", "env-too-slow", area="preflight", lifecycle="preview", requires=("preflight",),
       params={"warn_ratio": 0.5}, fixes=SLOW_FIXES)
def env_too_slow(snap, params):
    """An env whose step is too slow for an env runner to fill a rollout fragment within sample_timeout_s.

    Symptom:
        Training iterations return empty or tiny batches, `The batch for module_id
        default_policy is empty!`, or `sample()` calls time out and env runners are
        reported unhealthy, while the env works when stepped by hand.

    Cause:
        Each env runner steps `num_envs_per_env_runner` envs one after the other until it
        has `rollout_fragment_length` steps of each; RLlib stops waiting after
        `sample_timeout_s`. A step of 0.1 s with a fragment of 2000 needs 200 s, far past the
        default 60 s.
    """
    sect = section(snap)
    contract = sect.get("contract") or {}
    settings = plan(snap).get("settings") or {}
    step_s, fragment = contract.get("step_s"), settings.get("rollout_fragment_length")
    timeout = settings.get("sample_timeout_s")
    if not step_s or not fragment or not timeout:
        return
    envs = int(settings.get("num_envs_per_env_runner") or 1)
    need = float(step_s) * int(fragment) * envs
    where = sect.get("contract_node")
    evidence = {"step_s": step_s, "rollout_fragment_length": fragment,
                "num_envs_per_env_runner": envs, "fragment_s": round(need, 2),
                "sample_timeout_s": timeout, "steps_measured": contract.get("steps")}
    text = (f"one step takes {float(step_s) * 1000:.1f} ms on {node_name(snap, where)}: a fragment "
            f"of {fragment} steps x {envs} env(s) takes {need:.0f} s against sample_timeout_s "
            f"{float(timeout):g} s")
    if need > float(timeout):
        yield fail(subject(where) if where else "cluster", text, evidence,
                   SLOW_FIXES[_SLOW].format(need=need))
    elif need > float(timeout) * float(params["warn_ratio"]):
        yield warn(subject(where) if where else "cluster", text + " (little margin)", evidence,
                   SLOW_FIXES[_SLOW].format(need=need))
