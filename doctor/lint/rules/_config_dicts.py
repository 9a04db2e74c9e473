"""Dict configs followed through the file: which dict objects reach RLlib, and their keys.

`rldoctor.lint.value_flow` gives every dict object of a file, the keys written into
it (where they are written), what it includes (`{**base}`, `.update(base)`) and, for
every call argument, the objects it may be. This module decides which objects are
RLlib configs and which are Tune stop conditions:

- configs: `tune.run(trainable, config=...)` and `Tuner(trainable, param_space=...)`
  of an RLlib trainable (or of a trainable the file cannot name, when the dict has
  RLlib's own keys), `PPO(config=...)`, `update_from_dict(...)`, `from_dict(...)`,
  the `config` of an RLlib experiment in `tune.run_experiments({...})`; with the
  dicts they include and their `evaluation_config`;
- stop conditions: `stop=` of those calls and of a RunConfig handed to them;
- a dict that reaches none of them but carries at least three keys only RLlib
  configs have (a config module imported by the training script) is judged too,
  as a likely config, never above `warn`.
"""

from __future__ import annotations

RLLIB_KEYS = frozenset({
    "env_config", "rollout_fragment_length", "num_envs_per_worker", "sgd_minibatch_size", "num_sgd_iter",
    "train_batch_size", "multiagent", "framework", "observation_filter", "batch_mode", "num_rollout_workers",
    "exploration_config", "vf_clip_param", "kl_coeff", "num_gpus_per_worker", "num_cpus_per_worker",
    "evaluation_interval", "evaluation_config", "num_env_runners", "vf_share_layers", "horizon",
    "num_envs_per_env_runner", "entropy_coeff", "clip_param", "model", "num_workers", "num_gpus",
    "no_done_at_end", "timesteps_per_iteration", "min_iter_time_s", "metrics_smoothing_episodes",
    "lr_schedule", "entropy_coeff_schedule", "vf_loss_coeff", "use_gae", "explore", "callbacks",
})
_GUESS_AT = 3  # RLlib keys a dict needs to be judged without reaching RLlib in this file
_UNKNOWN_TRAINABLE_AT = 2  # ... to count as RLlib's when the trainable cannot be named
_EXPERIMENTS = ("tune.run_experiments", "run_experiments")


def closure(facts: dict, ids, children: tuple[str, ...] = ("evaluation_config",)) -> list[int]:
    """The objects `ids` stand for, with what they include and their nested config dicts."""
    objects = facts.get("objects") or []
    seen: set[int] = set()
    stack = list(ids)
    while stack:
        index = stack.pop()
        if index in seen or index >= len(objects):
            continue
        seen.add(index)
        obj = objects[index]
        stack += obj["includes"]
        for key in children:
            stack += obj["children"].get(key, [])
    return sorted(seen)


def rllib_keys(facts: dict, ids: list[int], also: frozenset = frozenset()) -> set[str]:
    objects = facts.get("objects") or []
    return {k["key"] for i in ids for k in objects[i]["keys"] if k["key"] in RLLIB_KEYS or k["key"] in also}


# With a trainable the file cannot name (`tune.run(trainable, config=cfg)` inside a helper, the
# trainable a parameter or `args.run`), an "env" key beside one of RLlib's own keys is RLlib's
# config: Tune hands "env" to nothing else.
_TRAINABLE_HINTS = frozenset({"env"})


def _arg(call: dict, kw: str | None = None, pos: int | None = None) -> dict | None:
    if kw is not None:
        found = next((k for k in call["kwargs"] if k["name"] == kw), None)
        if found is not None or pos is None:
            return found
    if pos is not None and pos < len(call["args"]):
        return call["args"][pos]
    return None


class ConfigDicts:
    """Sorts the file's dict objects into RLlib configs, stop conditions and likely configs."""

    def __init__(self, usages):
        self.u = usages
        self.facts = usages.facts
        self.configs: dict[int, dict] = {}  # object id -> the call it reaches (or None: guessed)
        self.stops: dict[int, dict] = {}
        self.guessed: set[int] = set()
        self.not_rllib: set[int] = set()
        self.imported_sinks: list[dict] = []  # config arguments made of imported names

    def _sink_config(self, call: dict) -> list[int]:
        """The objects a call takes as an RLlib config (none when it is not such a call)."""
        u = self.u
        func = u._resolve(call["func"]) if call["func"] else ""
        name = call["name"] or ""
        found: list[int] = []
        constructor = u.algorithm_class(func) and (call["method"] is None or func.startswith("ray.rllib"))
        for kw in ("config", "param_space"):
            if kw == "config" and not func.endswith(("tune.run", "tune.run_experiments")) and not constructor:
                continue
            if kw == "param_space" and name != "Tuner":
                continue
            arg = _arg(call, kw)
            if not arg or not arg.get("objects"):
                continue
            ids = closure(self.facts, arg["objects"])
            verdict = u.rllib_trainable(call) if name in ("run", "Tuner") or func.endswith("tune.run") else True
            if verdict is None:
                verdict = len(rllib_keys(self.facts, ids, _TRAINABLE_HINTS)) >= _UNKNOWN_TRAINABLE_AT
            if verdict:
                found += ids
            else:
                self.not_rllib.update(ids)  # another trainable's config: never guessed
        if call["method"] and name in ("update_from_dict", "from_dict") and call["args"]:
            found += closure(self.facts, call["args"][0].get("objects") or [])
        if constructor and call["args"] and not any(
                k["name"] == "config" for k in call["kwargs"]):
            found += closure(self.facts, call["args"][0].get("objects") or [])
        return found

    def _experiments(self, call: dict) -> None:
        arg = _arg(call, "experiments", 0)
        if not arg:
            return
        objects = self.facts.get("objects") or []
        for top in closure(self.facts, arg.get("objects") or [], ()):
            for spec_ids in objects[top]["children"].values():
                for spec in closure(self.facts, spec_ids, ()):
                    keys = {k["key"]: k for k in objects[spec]["keys"]}
                    run = keys.get("run")
                    config = closure(self.facts, objects[spec]["children"].get("config", []))
                    if run is None:
                        continue
                    trainable = run.get("value") if run.get("literal") else None
                    from rldoctor.lint.rules._rllib_api_usage import RLLIB_TRAINABLES

                    if trainable in RLLIB_TRAINABLES or (trainable is None and len(
                            rllib_keys(self.facts, config)) >= _UNKNOWN_TRAINABLE_AT):
                        for i in config:
                            self.configs.setdefault(i, call)
                        for i in closure(self.facts, objects[spec]["children"].get("stop", []), ()):
                            self.stops.setdefault(i, call)

    def sort(self) -> "ConfigDicts":
        u = self.u
        objects = self.facts.get("objects") or []
        for call in u.calls:
            for i in self._sink_config(call):
                self.configs.setdefault(i, call)
                imported = objects[i].get("imported") if i < len(objects) else None
                if imported:  # made in another module: the project pass follows it there
                    self.imported_sinks.append({"name": imported, "line": call["span"][0],
                                                "call": call.get("name") or call.get("func") or ""})
            if call["func"] and (call["func"] in _EXPERIMENTS or u._resolve(call["func"]).endswith(
                    "tune.run_experiments")):
                self._experiments(call)
            stop = _arg(call, "stop")
            if stop and stop.get("objects") and u.trains_rllib(call):
                for i in closure(self.facts, stop["objects"], ()):
                    self.stops.setdefault(i, call)
        for index, where in sorted((self.u.reached or {}).items()):  # another module passes it on
            for i in closure(self.facts, [index]):
                if i not in self.not_rllib:
                    self.configs.setdefault(i, {"reached_from": where})
        nested = {c for o in objects for ids in o["children"].values() for c in ids}
        included = {c for o in objects for c in o["includes"]}
        judged = set(self.configs) | set(self.stops) | self.not_rllib
        for obj in objects:
            if obj["id"] in judged or obj["id"] in nested or obj["id"] in included:
                continue
            ids = closure(self.facts, [obj["id"]])
            if len(rllib_keys(self.facts, ids)) >= _GUESS_AT and not judged & set(ids):
                self.guessed.update(ids)
        return self
