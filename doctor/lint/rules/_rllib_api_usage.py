"""Find the rows of the stale-name table (`_rllib_api_table`) in one file's facts.

The facts (`rldoctor.lint.python_facts`) say what is called, assigned and
imported; this module knows RLlib: which receivers are AlgorithmConfig objects
(a chain rooted at `PPOConfig()`, `X.get_default_config()`, a name assigned from
one, or, in a file that uses RLlib, a name such as `config` calling config
methods), which are Algorithm objects (`config.build_algo()`, `PPO(...)`,
`Algorithm.from_checkpoint`, in RLlib files names such as `algo` and `trainer`),
which dicts are dict configs (arguments of
`tune.run(config=...)`, `Tuner(param_space=...)`, `update_from_dict`,
`from_dict`, and the names passed there), and which code runs only on the old
API stack. Each match is a `Usage`: the row, where it is, the message, the
replacement written out for this call and, for mechanical rows, the edits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from rldoctor import words
from rldoctor.lint.rules._config_dicts import ConfigDicts, closure
from rldoctor.lint.rules.table import (CONFIG_METHODS, GENERATED_IMPORT as _GENERATED_IMPORT, HISTORY_ROWS, ROWS,
                                       SIGNATURE_ROWS, Row)
from rldoctor.lint.rules._rllib_values import filter_verdict, inert_verdict

CONFIG_CLASSES = {"AlgorithmConfig"} | {f"{a}Config" for a in words.ALGORITHMS}
RLLIB_TRAINABLES = set(words.ALGORITHMS) | {"A2C", "A3C", "PG", "DDPG", "TD3", "APEX", "APEX_DDPG", "ES", "ARS",
                                      "R2D2", "SimpleQ", "QMIX", "MADDPG", "AlphaZero", "MAML", "SlateQ"}
_CONFIG_NAME = re.compile(r"(^|_)(config|cfg|conf)$|^(algo|ppo|base|my)_?config", re.I)
_ALGO_NAME = re.compile(r"(^|_)(algo|algorithm|trainer|agent)s?$", re.I)
_CALLBACK_BASES = ("DefaultCallbacks", "RLlibCallback", "DefaultCallback")
_EPISODE_METHODS = ("on_episode_start", "on_episode_step", "on_episode_end", "on_episode_created")
_OLD_STACK_MARKERS = ("old_api_stack",)
_NEW_STACK_MARKERS = ("enable_rl_module_and_learner", "enable_env_runner_and_connector_v2",
                      "new_api_stack")
_METRIC_KWARGS = ("metric", "checkpoint_score_attribute", "checkpoint_score_attr")
_DISTINCTIVE = set(CONFIG_METHODS) | {"exploration", "learner", "update_from_dict"}  # guessed receivers
_RETURNS_SELF = set(CONFIG_METHODS) | {"copy", "update_from_dict", "from_dict", "exploration"}
_NOT_ALGO_CONFIGS = {"RunConfig", "TuneConfig", "CheckpointConfig", "ScalingConfig", "FailureConfig",
                     "SyncConfig", "DataConfig", "ResumeConfig", "DefaultModelConfig", "ModelConfig",
                     "DictConfig", "LoggingConfig", "Config", "BackendConfig"}
_RESULT_METHODS = {"get_best_trial": 0, "get_best_result": 0, "get_best_config": 0, "get_best_logdir": 0,
                   "get_best_checkpoint": 1, "get_trial_checkpoints_paths": 1, "dataframe": 0}
_ENV_RUNNERS_ACCESS = re.compile(r"""(\[\s*["']env_runners["']\s*\]|\.get\(\s*["']env_runners["'][^()]*(\(\))?[^()]*\))\s*$""")
_BY_SHAPE: dict[str, list[Row]] = {}
for _row in (*ROWS, *SIGNATURE_ROWS, *HISTORY_ROWS):
    _BY_SHAPE.setdefault(_row.shape, []).append(_row)
TRAINERS = {r.old for r in _BY_SHAPE["name"] if r.old.endswith("Trainer")}  # PPOTrainer, ...


def _algorithm_class(name: str) -> bool:
    return _last(name) in words.ALGORITHMS or _last(name) in TRAINERS or _last(name) == "Algorithm"


@dataclass
class Usage:
    row: Row
    span: list[int]
    message: str
    replacement: str
    severity: str
    edits: list[dict] = field(default_factory=list)
    evidence: dict = field(default_factory=dict)


def _last(name: str | None) -> str:
    return (name or "").split(".")[-1]


def _q(value) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _edit(span: list[int], old: str, new: str) -> dict:
    return {"line": span[0], "col": span[1], "end_line": span[2], "end_col": span[3],
            "old": old, "new": new}


class FileUsages:
    """All stale usages in one file (a `lint.files[]` record with `python` facts)."""

    def __init__(self, record: dict, ray_modules: dict | None = None, reached: dict | None = None):
        self.record = record
        self.ray_modules = ray_modules or {}
        self.reached = reached or {}  # object id -> where another module hands it to RLlib
        self.facts = record["python"]
        self.calls = self.facts["calls"]
        self.by_chain: dict[int, list[dict]] = {}
        for call in self.calls:
            self.by_chain.setdefault(call["chain"], []).append(call)
        self._inner: dict[int, tuple[list[dict], int]] = {}  # call id -> (chain innermost first, index)
        for chain in self.by_chain.values():
            inner = list(reversed(chain))
            for i, call in enumerate(inner):
                self._inner[call["id"]] = (inner, i)
        self._is_config: dict[tuple[int, bool], bool] = {}
        self.old_stack_file = any(m in record["path"] for m in _OLD_STACK_MARKERS)
        self.imports = self.facts["imports"]
        self.aliases = {}  # local name -> module or module.name it stands for
        for imp in self.imports:
            if imp["name"] is None:
                local = imp["asname"] or imp["module"].split(".")[0]
                self.aliases[local] = imp["module"] if imp["asname"] else local
            else:
                self.aliases[imp["asname"] or imp["name"]] = f"{imp['module']}.{imp['name']}"
        self.star_import = any(imp["name"] == "*" for imp in self.imports)
        # local name -> the import that binds it, for modules that are not Ray's (the
        # project's own, which the project pass follows across the files given)
        self.imported_names = {(imp["asname"] or (imp["name"] or imp["module"].split(".")[0])): imp
                               for imp in self.imports
                               if imp["name"] != "*" and (imp["level"] or imp["module"].split(".")[0] != "ray")}
        self._config_functions: set[str] = set()
        self._emitted: set[tuple] = set()
        self.switch_offs = [c for c in self.calls if c["name"] == "api_stack" and any(
            kw["name"] == "enable_rl_module_and_learner" and kw["value"] is False for kw in c["kwargs"])]
        self.rllib_file = self._mentions_rllib()
        self.config_names = self._config_names()
        self.algo_names = self._algo_names()
        self.out: list[Usage] = []

    # -- what things are ----------------------------------------------------------------------
    def _resolve(self, dotted: str | None) -> str:
        if not dotted:
            return ""
        head, _, rest = dotted.partition(".")
        full = self.aliases.get(head, head)
        return f"{full}.{rest}" if rest else full

    def _mentions_rllib(self) -> bool:
        """Is this RLlib code at all (so that a name such as `config` may be an AlgorithmConfig)?"""
        if any(imp["module"].startswith("ray.rllib") for imp in self.imports):
            return True
        names = {r.old for r in _BY_SHAPE["name"]} | CONFIG_CLASSES
        if any(f["name"] in names for f in self.facts["free_names"]):
            return True
        return any(call["method"] in ("rollouts", "env_runners", "fault_tolerance", "rl_module",
                                      "api_stack", "learners") for call in self.calls)

    def algorithm_class(self, name: str) -> bool:
        return _algorithm_class(name)

    def rllib_trainable(self, call: dict) -> bool | None:
        """Does this tune.run(...) / Tuner(...) train an RLlib algorithm? None: the file cannot say
        (`tune.run(args.algo, ...)`)."""
        first = call["args"][0] if call["args"] else next(
            (kw for kw in call["kwargs"] if kw["name"] in ("run_or_experiment", "trainable")), None)
        if first is None:
            return False
        if first["literal"]:
            return isinstance(first["value"], str) and first["value"] in RLLIB_TRAINABLES
        name = (first.get("ref") if "ref" in first else first.get("name")) or first.get("call_func") or ""
        resolved = self._resolve(name)
        if (resolved.startswith("ray.rllib") or _algorithm_class(name)
                or _last(name) in ("algo_class", "get_trainable_cls", "algo_class_name")):
            return True
        if name in (self.facts.get("functions") or []):
            return False  # a function trainable of this file
        local_class = next((c for c in self.facts["classes"] if c["name"] == name), None)
        if local_class is not None:
            return any(_algorithm_class(b) or self._resolve(b).startswith("ray.rllib") for b in local_class["bases"])
        values = [v for v in first.get("values") or [] if isinstance(v, str)]
        if values and any(v in RLLIB_TRAINABLES for v in values):
            return True
        if values and first.get("values_complete"):
            return False
        made_by = [self.calls[a["call"]] for a in self.facts["assignments"]
                   if a["kind"] == "call" and a["target"] == name and "call" in a]
        if any(self._resolve(c["func"]).startswith("ray.rllib") or c["name"] == "get_trainable_cls"
               for c in made_by if c["func"]):
            return True
        if first.get("call_func") or (first.get("literal") is False and not name):
            return None
        return None

    def trains_rllib(self, call: dict | None) -> bool:
        """Do results of this call come from RLlib? tune.run/Tuner by their trainable,
        RunConfig/TuneConfig/CheckpointConfig by the Tuner they are passed to, else the file."""
        seen = 0
        while call is not None and seen < 4:
            name = _last(call["func"]) if call["func"] else ""
            if name in ("run", "run_experiments", "Tuner"):
                verdict = self.rllib_trainable(call)
                if verdict is None:
                    from rldoctor.lint.rules._config_dicts import rllib_keys

                    config = next((k for k in call["kwargs"] if k["name"] in ("config", "param_space")), None)
                    ids = closure(self.facts, (config or {}).get("objects") or [])
                    return len(rllib_keys(self.facts, ids)) >= 2 or self.rllib_file
                return verdict
            parent = call.get("arg_of")
            origin = self._made_by(call["receiver"]) if not parent and call["receiver"] else None
            call = self.calls[parent["call"]] if parent else origin  # `analysis = tune.run(...)`
            seen += 1
        return self.rllib_file

    def _made_by(self, name: str) -> dict | None:
        """The call a name is assigned from (`results = tuner.fit()` -> `tuner.fit()`), followed
        to the Tuner when it is a `.fit()`."""
        made = next((self.calls[a["call"]] for a in self.facts["assignments"]
                     if a["kind"] == "call" and a["target"] == name and "call" in a), None)
        if made is not None and made["name"] == "fit" and made["receiver"] and made["receiver"] != name:
            return self._made_by(made["receiver"]) or made
        return made

    def _config_like(self, name: str | None, call: dict | None = None) -> bool:
        """A name such as `config` or `ppo_config` calling an AlgorithmConfig builder method."""
        if not name or not self.rllib_file or not _CONFIG_NAME.search(_last(name)):
            return False
        return call is None or call["name"] in _DISTINCTIVE

    def _inner_first(self, call: dict) -> tuple[list[dict], int]:
        return self._inner.get(call["id"], ([call], 0))

    def receiver_is_config(self, call: dict, strict: bool = False, names: set[str] | None = None) -> bool:
        """Is `call` a method called on an AlgorithmConfig? `strict`: only when that is proven
        (a config class, a name assigned from one), not guessed from a name like `config`."""
        if call["method"] is None:
            return False
        names = self.config_names if names is None else names
        calls, i = self._inner_first(call)
        if i == 0:
            root = call["root"]
            return root in names or (not strict and self._config_like(root, call))
        return self.produces_config(calls[i - 1], strict, names)

    def produces_config(self, call: dict, strict: bool = False, names: set[str] | None = None) -> bool:
        """Does `call` return an AlgorithmConfig (`PPOConfig()`, `.training(...)`, `.copy()`)?"""
        if call["method"] is None:
            last = _last(self._resolve(call["func"]))
            if last in CONFIG_CLASSES:
                return True
            if call["func"] in self._config_functions:
                return True
            chain = self.by_chain.get(call["chain"], [])
            return (self.rllib_file and last.endswith("Config") and last not in _NOT_ALGO_CONFIGS
                    and sum(1 for c in chain if c["method"] in CONFIG_METHODS) >= (2 if strict else 1))
        if call["name"] == "get_default_config":
            return True
        if call["name"] in ("from_dict", "from_state") and _last(call["receiver"]) in CONFIG_CLASSES:
            return True
        if call["name"] in _RETURNS_SELF:
            return self.receiver_is_config(call, strict, names)
        chain = self.by_chain.get(call["chain"], [])
        root = _last(self._resolve(chain[0]["root_call"])) if chain and chain[0]["root_call"] else ""
        if root.endswith("Config") and root not in CONFIG_CLASSES and root not in _NOT_ALGO_CONFIGS and \
                call["name"] not in ("build", "build_algo", "to_dict", "get", "items", "keys", "values"):
            return self.receiver_is_config(call, strict, names)  # a subclass's own builder method
        return False

    def _config_names(self) -> set[str]:
        # an RLlib file's config imported by a name such as `ppo_config` from the project's own
        # module (`from experiments.ppo_config import ppo_idl_config`): its source is not given
        names: set[str] = {local for local, imp in self.imported_names.items()
                           if self.rllib_file and imp["name"] and _CONFIG_NAME.search(local)
                           and not local.isupper()}
        self._config_functions: set[str] = set()
        for _ in range(3):
            for r in self.facts.get("returns") or []:
                function = r["scope"].split(".")[-1]
                if (r["call"] is not None and self.produces_config(self.calls[r["call"]], True, names)) or \
                        (r["name"] and r["name"] in names and r["scope"] != "<module>"):
                    self._config_functions.add(function)
            for a in self.facts["assignments"]:
                if a["kind"] == "call" and self.produces_config(self.calls[a["call"]], True, names):
                    names.add(a["target"])
                elif a["kind"] == "name" and a.get("name") in names:
                    names.add(a["target"])
        return names

    def _algo_names(self) -> set[str]:
        names: set[str] = set()
        for a in self.facts["assignments"]:
            if a["kind"] != "call":
                continue
            call = self.calls[a["call"]]
            resolved = self._resolve(call["func"])
            if call["name"] in ("build", "build_algo") and self.receiver_is_config(call):
                names.add(a["target"])
            elif call["method"] is None and (_algorithm_class(resolved) or resolved.startswith("ray.rllib")):
                names.add(a["target"])
            elif call["name"] == "from_checkpoint":
                names.add(a["target"])
        return names

    def is_config(self, call: dict) -> bool:
        key = (call["id"], False)
        if key not in self._is_config:
            self._is_config[key] = self.receiver_is_config(call)
        return self._is_config[key]

    def is_algo(self, receiver: str | None) -> bool:
        if not receiver:
            return False
        return receiver in self.algo_names or (self.rllib_file and bool(_ALGO_NAME.search(_last(receiver))))

    def algorithm_of(self, call: dict) -> str | None:
        for c in self.by_chain.get(call["chain"], []):
            root = _last(c["root_call"])
            if root.endswith("Config") and root != "AlgorithmConfig":
                return root[:-len("Config")].upper()
        # `config = PPOConfig()` (or `config = config.training(...)` after it), then `config.x(...)`
        root, line = call.get("root"), call["span"][0]
        for _ in range(10):
            made = sorted((a for a in self.facts["assignments"] if a["target"] == root and a["kind"] == "call"
                           and a["line"] < line and a["scope"] == call.get("scope", a["scope"])),
                          key=lambda a: a["line"])
            if not root or not made:
                return None
            first = self._inner_first(self.calls[made[-1]["call"]])[0][0]
            if first["method"] is None:
                last = _last(self._resolve(first["func"]))
                return last[:-len("Config")].upper() if last in CONFIG_CLASSES and last != "AlgorithmConfig" \
                    else None
            root, line = first.get("root"), made[-1]["line"]
        return None

    # -- old API stack ------------------------------------------------------------------------
    @staticmethod
    def _conditions_old(conditions: list[dict]) -> bool:
        for cond in conditions:
            test = cond["test"]
            if any(m in test for m in _OLD_STACK_MARKERS) and cond["positive"]:
                return True
            if any(m in test for m in _NEW_STACK_MARKERS) and not cond["positive"]:
                return True
        return False

    def _chain_old(self, chain: int | None, receiver: str | None, conditions: list[dict]) -> bool:
        """Does this chain, or the config it works on, switch the new API stack off (where the
        switch-off is in effect: same branch or an enclosing one)?"""
        in_effect = [c for c in self.switch_offs if c["conditions"] == conditions[:len(c["conditions"])]]
        if not in_effect:
            return False
        in_chain = self.by_chain.get(chain, []) if chain is not None else []
        if any(c["chain"] == chain for c in in_effect):
            return True
        names = {c["root"] for c in in_chain if c["root"]} | {c["assigned_to"] for c in in_chain if c["assigned_to"]}
        if receiver:
            names.add(receiver)
        for c in in_effect:
            whole = self.by_chain.get(c["chain"], [c])  # `x = PPOConfig().api_stack(...).framework(...)`
            if any(x["root"] in names or x["receiver"] in names or x["assigned_to"] in names for x in whole):
                return True
        return False

    def old_stack(self, fact: dict, chain: int | None = None, receiver: str | None = None) -> bool:
        conditions = fact.get("conditions") or []
        if self.old_stack_file or self._conditions_old(conditions):
            return True
        return (chain is not None or receiver is not None) and self._chain_old(chain, receiver, conditions)

    # -- emitting ---------------------------------------------------------------------------------
    def _severity(self, row: Row, value=None, literal: bool = False) -> str:
        if literal and row.inert and value in row.inert and row.severity == "fail":
            return "warn"
        return row.severity

    def _says(self, row: Row) -> str:
        if row.behaviour == "raises" and row.error:
            kind, words = row.error
            lead = f"raises {kind}" if kind != "Exception" else "raises"
            return (f"{row.says}: {words}" if row.says else f"{lead}: {words}")
        if row.says:
            return row.says
        return {"warns": "still works, with a DeprecationWarning (it will raise in a later Ray)",
                "ignored": "is accepted and silently ignored", "works": "still works",
                "translated": "is still translated silently; the deprecated name goes in a later Ray",
                "breaks": "fails at first use", "never-fires": "never matches"}[row.behaviour]

    def emit(self, row: Row, span: list[int], usage: str, replacement: str, severity: str | None = None,
             edits: list[dict] | None = None, says: str | None = None, **evidence) -> None:
        marker = (row.id, tuple(span))
        if marker in self._emitted:
            return
        self._emitted.add(marker)
        message = f"{usage} {says if says is not None else self._says(row)}"
        self.out.append(Usage(row, span, message, replacement or row.fix, severity or row.severity,
                              edits or [], {"row": row.id, "behaviour": row.behaviour,
                                            "old": row.old, "new": row.new, **evidence,
                                            "fix": (replacement, row.fix)}))  # RLD801's fix_of

    # -- shapes -------------------------------------------------------------------------------------
    def _rebuilt_call(self, call: dict, method: str) -> str:
        parts = [a["source"] for a in call["args"]]
        renames = {r.old: r.new for r in _BY_SHAPE["kwarg"] if method in r.where and r.mechanical}
        for kw in call["kwargs"]:
            parts.append(f"{renames.get(kw['name'], kw['name'])}={kw['source']}")
        return f".{method}({', '.join(p.replace(chr(10), ' ') for p in parts)})"

    def methods(self) -> None:
        for call in self.calls:
            if call["method"] is None:
                continue
            for row in _BY_SHAPE["method"]:
                if call["name"] != row.old or not self.receiver_is_config(call, strict=row.old == "build"):
                    continue
                if row.stack == "new" and self.old_stack(call, call["chain"], call["receiver"]):
                    continue
                replacement = self._rebuilt_call(call, row.new) if row.new and row.old != "build" \
                    else (f".{row.new}()" if row.new else "")
                edits = [_edit(call["name_span"], row.old, row.new)] if row.mechanical else []
                self.emit(row, call["name_span"], f"`.{row.old}()`", replacement, edits=edits)

    def kwargs(self) -> None:
        for call in self.calls:
            if call["method"] is None or not self.is_config(call):
                continue
            present = {kw["name"] for kw in call["kwargs"]}
            algo = self.algorithm_of(call)
            for kw in call["kwargs"]:
                for row in _BY_SHAPE["kwarg"]:
                    if kw["name"] != row.old or call["method"] not in row.where:
                        continue
                    if row.algo and algo and algo not in (row.algo, "APPO"):
                        continue
                    if row.algo and algo is None and row.id.startswith("history-"):
                        continue  # an algorithm's own keyword: only where the algorithm is known
                    if row.stack == "new" and self.old_stack(call, call["chain"], call["receiver"]):
                        continue
                    self._kwarg(row, call, kw, present)
            noted: set[int] = set()
            for row in _BY_SHAPE["arg_value"]:
                if call["method"] not in row.where:
                    continue
                value = next((a for a in call["args"][:1]), None) or next(
                    (kw for kw in call["kwargs"] if kw["name"] == row.old), None)
                if value is None:
                    continue
                verdict = filter_verdict(row, value, self._says(row))
                if verdict is None or (verdict[0] == "info" and call["id"] in noted):
                    continue
                if verdict[0] == "info":
                    noted.add(call["id"])
                if row.stack == "new" and self.old_stack(call, call["chain"], call["receiver"]):
                    continue
                if row.algo and algo and algo not in (row.algo, "APPO", "IMPALA"):
                    continue
                shown = _q(value["value"]) if value["literal"] else value["source"]
                self.emit(row, value["span"] if "value_span" not in value else value["value_span"],
                          f"`.{call['method']}({shown})`", f'.{call["method"]}("{row.new}")',
                          severity=verdict[0], says=verdict[1], value=value["value"])

    def _kwarg(self, row: Row, call: dict, kw: dict, present: set[str]) -> None:
        severity, note = inert_verdict(row, kw, self._says(row))
        if row.id == "kwarg-training-model" and any(
                c["name"] == "rl_module" and any(k["name"] == "model_config" for k in c["kwargs"])
                for c in self.by_chain.get(call["chain"], [])):
            severity = "warn"  # the model is configured the new way too; this one is dead code
        source = kw["source"].replace("\n", " ")
        if row.new and row.moves_to:
            replacement = f".{row.moves_to}({row.new}={source})"
        elif row.new:
            replacement = f"{row.new}={source}"
        else:
            replacement = ""
        edits = []
        if row.mechanical and row.new and not row.moves_to and row.new not in present:
            edits = [_edit(kw["span"], row.old, row.new)]
        self.emit(row, kw["span"], f"`{row.old}=` in `.{call['method']}()`", replacement,
                  severity=severity, edits=edits, says=note,
                  value=kw["value"] if kw["literal"] else kw["source"])

    def stores(self) -> None:
        rows = {r.old: r for r in _BY_SHAPE["attr_store"]}
        for attr in self.facts["attributes"]:
            row = rows.get(attr["attr"])
            if row is None or attr["ctx"] != "store" or not attr["receiver"]:
                continue
            if not (attr["receiver"] in self.config_names or self._config_like(attr["receiver"])):
                continue
            if row.stack == "new" and self.old_stack(attr, receiver=attr["receiver"]):
                continue
            self._store(row, attr["span"], f"`{attr['receiver']}.{row.old} = ...`",
                        f"{attr['receiver']}.{row.new} = ..." if row.new else "", attr)
        for sub in self.facts["subscripts"]:  # config.model["fcnet_hiddens"] = ... on an AlgorithmConfig
            receiver = sub["receiver"] or ""
            head, _, attr = receiver.rpartition(".")
            row = rows.get(attr)
            if sub["ctx"] != "store" or row is None or row.old != "model" or not head or \
                    not (head in self.config_names or self._config_like(head)):
                continue
            if self.old_stack(sub, receiver=head):
                continue
            self.emit(row, sub["span"][:2] + [sub["span"][0], sub["span"][1] + len(receiver)],
                      f'`{receiver}["{sub["key"]}"] = ...`', f'`{head}.rl_module(model_config={{"{sub["key"]}": ...}})`')
        for sub in self.facts["subscripts"]:
            row = rows.get(sub["key"])
            if row is None or sub["ctx"] != "store" or sub["receiver"] not in self.config_names:
                continue
            if row.stack == "new" and self.old_stack(sub, receiver=sub["receiver"]):
                continue
            self._store(row, sub["key_span"], f'`{sub["receiver"]}["{row.old}"] = ...` on an AlgorithmConfig',
                        f'{sub["receiver"]}.{row.new} = ...' if row.new else "", sub)

    def _store(self, row: Row, span: list[int], usage: str, replacement: str, fact: dict) -> None:
        stored = fact.get("stored") or {}
        severity, note = inert_verdict(row, stored, self._says(row))
        edits = [_edit(span, row.old, row.new)] if row.mechanical and row.new and "key_span" not in fact else []
        self.emit(row, span, usage, replacement, severity=severity, edits=edits, says=note)

    # -- dict configs -----------------------------------------------------------------------------
    def _is_sink(self, call: dict, kw: str | None, pos: int | None) -> bool:
        func = self._resolve(call["func"]) if call["func"] else ""
        name = call["name"] or ""
        if kw == "config" and func.endswith(("tune.run", "tune.run_experiments")):
            return self.rllib_trainable(call)
        if kw == "config" and _algorithm_class(func):
            return True
        if kw == "param_space" and name == "Tuner":
            return self.rllib_trainable(call)
        if pos == 0 and name in ("update_from_dict", "from_dict") and call["method"]:
            return True
        if pos == 0 and _algorithm_class(func) and not call["method"]:
            return True
        return False

    def _sink_names(self) -> set[str]:
        names = set()
        for call in self.calls:
            for i, arg in enumerate(call["args"]):
                if arg.get("name") and self._is_sink(call, None, i):
                    names.add(arg["name"])
            for kw in call["kwargs"]:
                if kw.get("ref") and self._is_sink(call, kw["name"], None):
                    names.add(kw["ref"])
        return names - self.config_names

    def dict_configs(self) -> None:
        sinks = self._sink_names()
        config_dicts: set[int] = set()
        for d in self.facts["dicts"]:
            arg_of = d["arg_of"]
            if arg_of and self._is_sink(self.calls[arg_of["call"]], arg_of["kw"], arg_of["pos"]):
                config_dicts.add(d["id"])
            elif d["bound_to"] in sinks:
                config_dicts.add(d["id"])
            elif arg_of and self.calls[arg_of["call"]]["name"] == "update" and \
                    self.calls[arg_of["call"]]["receiver"] in sinks:
                config_dicts.add(d["id"])
        for d in self.facts["dicts"]:  # evaluation_config sub-dicts hold config keys too
            parent = d.get("parent")
            if parent and parent["dict"] in config_dicts and parent["key"] == "evaluation_config":
                config_dicts.add(d["id"])
        for d in self.facts["dicts"]:
            if d["id"] not in config_dicts:
                continue
            old = self.old_stack(d) or any(k["key"] == "enable_rl_module_and_learner" and k["value"] is False
                                           for k in d["keys"])
            for key in d["keys"]:
                self._dict_key(key["key"], key["span"], key, old)
        for sub in self.facts["subscripts"]:
            if sub["ctx"] == "store" and sub["receiver"] in sinks:
                stored = sub.get("stored") or {}
                self._dict_key(sub["key"], sub["key_span"], stored, self.old_stack(sub), item=sub["receiver"])
        self._flowed_dicts()

    def _flowed_dicts(self) -> None:
        """Keys of the dict objects that reach RLlib through variables, copies and helpers."""
        sorted_dicts = self.dicts = ConfigDicts(self).sort()
        objects = self.facts.get("objects") or []
        for group, guessed in ((sorted_dicts.configs, False), (sorted_dicts.guessed, True)):
            ids = sorted(group)
            old_config = any(k["key"] == "enable_rl_module_and_learner" and k.get("value") is False
                             for i in ids for k in objects[i]["keys"])
            for i in ids:
                for entry in objects[i]["keys"]:
                    item = None
                    if entry["how"] in ("item", "setdefault"):
                        path = "".join(f'["{p}"]' for p in [entry["key"]] + entry.get("path", []))
                        item = f'{entry.get("target") or "config"}{path}'
                    sink = group.get(i) if isinstance(group, dict) else None
                    self._dict_key(entry["key"], entry["span"], entry,
                                   old_config or self.old_stack(entry), item=item, guessed=guessed,
                                   reached_from=(sink or {}).get("reached_from"))

    def _dict_key(self, key: str, span: list[int], facts: dict, old_stack: bool,
                  item: str | None = None, guessed: bool = False, reached_from: str | None = None) -> None:
        source = facts.get("source", "")
        for row in _BY_SHAPE["dict_key"]:
            if key != row.old or (row.stack == "new" and old_stack):
                continue
            if row.values:
                verdict = filter_verdict(row, facts, self._says(row))
                if verdict is None:
                    continue
                severity, note = verdict
            else:
                severity, note = inert_verdict(row, facts, self._says(row))
            if item and "[" in item:
                usage = f"`{item} = ...`"
            else:
                usage = f'`{item}["{key}"] = ...`' if item else f'`"{key}"` in a dict config'
            if guessed:
                usage = usage.replace("in a dict config", "in a dict that looks like an RLlib config") \
                    if not item else usage + " (a dict that looks like an RLlib config)"
                severity = "warn" if severity == "fail" else severity
            replacement = (f'"{row.new}": {source or "..."}' if row.new and not item else
                           f'{item.split("[")[0]}["{row.new}"] = {source or "..."}' if row.new else "")
            if row.id == "key-framework-tf":
                replacement = '"framework": "torch"'
            edits = [_edit(span, row.old, row.new)] if row.mechanical and row.new else []
            extra = {}
            if reached_from:  # built here, handed to RLlib by another module of the files given
                usage += f" (handed to RLlib at {reached_from})"
                extra["reached_from"] = reached_from
            self.emit(row, span, usage, replacement, severity=severity, edits=edits, says=note, **extra)

    # -- imports and names --------------------------------------------------------------------------
    def imports_and_names(self) -> None:
        module_rows = _BY_SHAPE["module"]
        name_rows = {r.old: r for r in _BY_SHAPE["name"]}
        renamed_names: set[str] = set()
        modules_done: set[tuple] = set()
        for imp in self.imports:
            if imp["guarded"]:
                continue  # a fallback import inside try/except ImportError is deliberate
            module = imp["module"]
            statement = (tuple(imp["span"]), module)
            for row in module_rows:
                if statement in modules_done:
                    break
                if module == row.old or module.startswith(row.old + "."):
                    modules_done.add(statement)
                    span = imp["module_span"] or imp["span"]
                    new_module = row.new + module[len(row.old):] if row.new else ""
                    edits = [_edit(span, row.old, row.new)] if row.mechanical and imp["module_span"] else []
                    self.emit(row, span, f"`{module}`", f"`{new_module}`" if new_module else "",
                              edits=edits)
            row = name_rows.get(imp["name"] or "")
            if row and module.startswith(row.where):
                edits = []
                uses = []
                if row.mechanical and row.new and imp["name_span"]:
                    edits.append(_edit(imp["name_span"], row.old, row.new))
                    if not imp["asname"]:
                        renamed_names.add(row.old)
                        uses = [u for u in self.facts["ray_name_loads"] if u["name"] == row.old]
                self.emit(row, imp["name_span"] or imp["span"], f"`from {module} import {row.old}`",
                          f"`{row.new}`" if row.new else "", edits=edits,
                          says=self._name_says(row, module))
                for use in uses:  # each use is renamed on its own line, as its own finding
                    self.emit(row, use["span"], f"`{row.old}` (imported on line {imp['span'][0]})",
                              f"`{row.new}`", edits=[_edit(use["span"], row.old, row.new)],
                              says=f"is renamed {row.new} with its import: {self._name_says(row, module)}")
                modules_done.add((tuple(imp["span"]), module, imp["name"]))
        self.missing_imports(modules_done)
        seen_free: set[str] = set()
        for free in [] if self.star_import else self.facts["free_names"]:
            row = name_rows.get(free["name"])
            if row is None:
                continue
            self.emit(row, free["span"], f"`{row.old}`",
                      f"`{row.new}` (`from ray.rllib.algorithms.{row.new.lower()} import {row.new}`)"
                      if row.new else "",
                      says=f"is not defined here, and no longer exists in RLlib: "
                           f"{row.says or 'ray.rllib.agents was removed'}")
            seen_free.add(free["name"])
        for attr in self.facts["attributes"]:
            full = self._resolve(f"{attr['receiver']}.{attr['attr']}") if attr["receiver"] else ""
            for row in module_rows:
                if full == row.old:
                    self.emit(row, attr["span"], f"`{row.old}`", "")
            row = name_rows.get(attr["attr"])
            if row and attr["receiver"] and full.startswith(tuple(w + "." for w in row.where)):
                self.emit(row, attr["span"], f"`{attr['receiver']}.{row.old}`",
                          f"`{attr['receiver']}.{row.new}`" if row.new else "",
                          edits=[_edit(attr["span"], row.old, row.new)] if row.mechanical and row.new else [],
                          says=self._name_says(row, full.rpartition(".")[0], attribute=True))

    def _gone_module(self, module: str) -> str | None:
        """The first part of `module` the installed Ray has no module for, or None."""
        parts = module.split(".")
        index = self.ray_modules if self.ray_modules and not self.ray_modules.get("error") else {}
        for i in range(2, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if index.get(prefix, {}).get("exists") is False:
                return prefix
            if any(r.old == prefix and r.behaviour == "raises" for r in _BY_SHAPE["module"]):
                return prefix
        return None

    def _name_says(self, row: Row, module: str, attribute: bool = False) -> str:
        """What Python raises for a name row where it is used: the import of a module that is gone
        fails with ModuleNotFoundError before the name is looked at, a name read off a module
        object is an AttributeError, `from module import name` an ImportError."""
        gone = self._gone_module(module)
        if gone:
            return (f"raises ModuleNotFoundError: No module named '{gone}' (the whole module is gone, "
                    f"not only {row.old})")
        if attribute:
            return f"raises AttributeError: module '{module}' has no attribute '{row.old}'"
        return self._says(row)

    # -- Algorithm objects --------------------------------------------------------------------------
    def algorithms(self) -> None:
        attr_rows = {r.old: r for r in _BY_SHAPE["algo_attr"]}
        call_rows = {r.old: r for r in _BY_SHAPE["algo_call"]}
        for attr in self.facts["attributes"]:
            row = attr_rows.get(attr["attr"])
            if row is None or attr["ctx"] != "load" or not self.is_algo(attr["receiver"]):
                continue
            if row.stack == "new" and self.old_stack(attr, receiver=attr["receiver"]):
                continue
            self.emit(row, attr["span"], f"`{attr['receiver']}.{row.old}`",
                      f"`{attr['receiver']}.{row.new}`",
                      edits=[_edit(attr["span"], row.old, row.new)] if row.mechanical else [])
        for call in self.calls:
            row = call_rows.get(call["name"] or "")
            if row is None or call["method"] is None or not self.is_algo(call["receiver"]):
                continue
            if row.stack == "new" and self.old_stack(call, receiver=call["receiver"]):
                continue
            replacement = f"`{call['receiver']}.{row.new}(...)`" if row.new else \
                row.fix.replace("algo.", f"{call['receiver']}.")  # written out for this receiver
            self.emit(row, call["name_span"], f"`{call['receiver']}.{row.old}()`", replacement,
                      edits=[_edit(call["name_span"], row.old, row.new)] if row.mechanical else [])

    # -- result keys ----------------------------------------------------------------------------------
    def _stop_key(self, row: Row | None, key: dict) -> None:
        if row is None:
            return
        self.emit(row, key["span"], f'stop condition `"{row.old}"`', f'"{row.new}"',
                  says="never fires: new-stack results have no such key, so Tune logs "
                       "\"Stopping criterion ... not found in result dict!\" once and the "
                       "run goes on until it is stopped by hand",
                  edits=[_edit(key["span"], row.old, row.new)])

    def _metric_arg(self, call: dict, rows: dict) -> None:
        """`analysis.get_best_trial("episode_reward_mean")`, `get_best_checkpoint(trial, "...")`."""
        at = _RESULT_METHODS.get(call["name"] or "")
        if at is None or not call["method"] or at >= len(call["args"]):
            return
        arg = call["args"][at]
        row = rows.get(arg["value"]) if arg["literal"] and isinstance(arg["value"], str) else None
        if row is None or self.old_stack(call) or not self.trains_rllib(call):
            return
        self.emit(row, arg["span"], f'`{call["name"]}("{row.old}")`', f'"{row.new}"',
                  says="names a metric the results never have: Tune finds no trial or checkpoint by it "
                       "(or raises that the metric is missing)",
                  edits=[_edit(arg["span"], row.old, row.new)])

    def results(self) -> None:
        """Result keys: another trainable's results may well have them, so only RLlib's count."""
        rows = {r.old: r for r in _BY_SHAPE["result_key"]}
        stop_names = {}
        for call in self.calls:
            for kw in call["kwargs"]:
                if kw["name"] == "stop" and kw.get("ref"):
                    stop_names[kw["ref"]] = call
        for d in self.facts["dicts"]:
            arg_of = d["arg_of"]
            if arg_of and arg_of["kw"] == "stop":
                owner = self.calls[arg_of["call"]]
            elif d["bound_to"] in stop_names:
                owner = stop_names[d["bound_to"]]
            else:
                continue
            if self.old_stack(d) or not self.trains_rllib(owner):
                continue
            for key in d["keys"]:
                self._stop_key(rows.get(key["key"]), key)
        objects = self.facts.get("objects") or []
        for i, owner in sorted(getattr(self, "dicts", None).stops.items() if getattr(self, "dicts", None) else ()):
            for key in objects[i]["keys"]:
                if not self._conditions_old(key.get("conditions") or []) and not self.old_stack_file:
                    self._stop_key(rows.get(key["key"]), key)
        for call in self.calls:
            self._metric_arg(call, rows)
            for kw in call["kwargs"]:
                row = rows.get(kw["value"]) if kw["literal"] and isinstance(kw["value"], str) else None
                if row is None or kw["name"] not in _METRIC_KWARGS or self.old_stack(call) or \
                        not self.trains_rllib(call):
                    continue
                if kw["name"] == "metric":
                    says = ("is a metric the results never have: Tune raises \"Trial returned a result "
                            "which did not include the specified metric(s)\" at the first result")
                else:
                    says = ("names a score the results never have: Tune keeps the newest checkpoints "
                            "instead of the best, and logs \"Result dict has no key\"")
                self.emit(row, kw["value_span"], f'`{kw["name"]}="{row.old}"`', f'"{row.new}"',
                          says=says, edits=[_edit(kw["value_span"], row.old, row.new)])
            if call["name"] == "get" and call["method"] and call["args"] and call["args"][0]["literal"] \
                    and self.rllib_file:
                row = rows.get(call["args"][0]["value"]) if isinstance(call["args"][0]["value"], str) else None
                if row and (_ENV_RUNNERS_ACCESS.search(call.get("receiver_source") or "")
                            or call["receiver"] in {a["target"] for a in self.facts["assignments"]
                                                    if _ENV_RUNNERS_ACCESS.search(a.get("value_source") or "")}):
                    row = rows.get("env_runners/" + row.old)
                    if row is not None:
                        self.emit(row, call["args"][0]["span"], f'`...get("{row.old.split("/")[-1]}")` under '
                                  '"env_runners"', f'"{row.new.split("/")[-1]}"',
                                  says="always gives the default: new-stack env_runners results call it "
                                       f"{row.new.split('/')[-1]}")
                    continue
                if row and not self.old_stack(call):
                    *outer, inner = row.new.split("/")
                    lookup = "".join(f'.get("{p}", {{}})' for p in outer) + f'.get("{inner}")'
                    self.emit(row, call["args"][0]["span"], f'`{call["receiver"]}.get("{row.old}")`',
                              f'`{call["receiver"]}{lookup}`',
                              says="always gives the default: new-stack results have no such key")
        runner_names = {a["target"] for a in self.facts["assignments"]
                        if _ENV_RUNNERS_ACCESS.search(a.get("value_source") or "")}
        for sub in self.facts["subscripts"]:
            row = rows.get(sub["key"])
            if row is None or sub["ctx"] != "load" or self.old_stack(sub) or not self.rllib_file:
                continue
            if _ENV_RUNNERS_ACCESS.search(sub.get("receiver_source") or "") or sub["receiver"] in runner_names:
                row = rows.get("env_runners/" + row.old)
                if row is not None:
                    inner = row.new.split("/")[-1]
                    self.emit(row, sub["key_span"], f'`{sub["receiver_source"]}["{sub["key"]}"]`',
                              f'`{sub["receiver_source"]}["{inner}"]`',
                              says=f"raises KeyError (new-stack env_runners results call it {inner})")
                continue
            path = "".join(f'["{p}"]' for p in row.new.split("/"))
            receiver = sub["receiver"] or sub["receiver_source"]
            self.emit(row, sub["key_span"], f'`{receiver}["{row.old}"]`', f"`{receiver}{path}`",
                      says="raises KeyError (new-stack results have no such key)")

    # -- Tune / Ray core / Serve keyword arguments ------------------------------------------------------
    def _func_matches(self, call: dict, where: tuple[str, ...]) -> bool:
        func = call["func"] or ""
        resolved = self._resolve(func)
        for target in where:
            if "." in target:
                if func == target or resolved == "ray." + target or resolved == target or \
                        resolved.endswith("." + target) and resolved.startswith("ray."):
                    return True
            elif func == target and resolved.startswith("ray."):
                return True
        return False

    def call_kwargs(self) -> None:
        rows = _BY_SHAPE["call_kwarg"]
        for call in self.calls:
            checkpoint = {}
            for kw in call["kwargs"]:
                for row in rows:
                    if kw["name"] != row.old or not self._func_matches(call, row.where):
                        continue
                    if row.id.startswith("tune-") and row.behaviour == "warns":
                        checkpoint[row.new] = kw["source"]
            replacement_cc = ", ".join(f"{k}={v}" for k, v in checkpoint.items())
            for kw in call["kwargs"]:
                for row in rows:
                    if kw["name"] != row.old or not self._func_matches(call, row.where):
                        continue
                    severity, note = inert_verdict(row, kw, self._says(row))
                    if row.id.startswith("tune-") and row.behaviour == "warns":
                        replacement = f"checkpoint_config=tune.CheckpointConfig({replacement_cc})"
                    elif row.id in ("tune-local_dir", "runconfig-local_dir", "ray-init-redis_address"):
                        replacement = f"{row.new}={kw['source']}"
                    elif row.id == "ray-remote-object_store_memory" and call.get("decorates") == "function":
                        self.emit(row, kw["span"], f"`{call['func']}({row.old}=...)` on a task",
                                  "", severity="fail", says="raises ValueError: Setting "
                                  "'object_store_memory' is not implemented for tasks")
                        continue
                    else:
                        replacement = ""
                    self.emit(row, kw["span"], f"`{row.old}=` in `{call['func']}()`", replacement,
                              severity=severity, says=note)

    def run_configs(self) -> None:
        """`Tuner(run_config=air.RunConfig(...))`: Ray wants ray.tune's RunConfig there."""
        for row in _BY_SHAPE["run_config_class"]:
            for call in self.calls:
                if call["name"] != "Tuner":
                    continue
                for kw in call["kwargs"]:
                    if kw["name"] != "run_config":
                        continue
                    made = kw.get("call_func")
                    if not made and kw.get("ref"):
                        made = next((self.calls[a["call"]]["func"] for a in self.facts["assignments"]
                                     if a["kind"] == "call" and a["target"] == kw["ref"] and "call" in a), None)
                    resolved = self._resolve(made) if made else ""
                    module, _, cls = resolved.rpartition(".")
                    if cls == row.old and module in row.where:
                        self.emit(row, kw["span"], f"`run_config={made}(...)` from `{module}`",
                                  f"`{row.new}`", where=module)

    # -- imports the installed Ray no longer has (read from its files) ------------------------------
    def missing_imports(self, done: set[tuple]) -> None:
        index = self.ray_modules
        if not index or index.get("error"):
            return
        row = _GENERATED_IMPORT
        for imp in self.imports:
            module = imp["module"]
            if imp["guarded"] or imp["level"] or not (module == "ray" or module.startswith("ray.")):
                continue
            if any(c["test"].endswith("TYPE_CHECKING") and c["positive"] for c in imp.get("conditions") or []):
                continue  # only read by type checkers, never imported when the code runs
            statement = (tuple(imp["span"]), module, imp["name"])
            if statement in done or (tuple(imp["span"]), module) in done:
                continue  # the table has a row for this import, with its replacement
            parts = module.split(".")
            missing = next((".".join(parts[:i]) for i in range(2, len(parts) + 1)
                            if index.get(".".join(parts[:i]), {}).get("exists") is False), None)
            span = imp["module_span"] or imp["span"]
            if missing:
                marker = (tuple(imp["span"]), missing)
                if marker in done:
                    continue
                done.add(marker)
                self.emit(row, span, f"`{module}`", "",
                          says=f"raises ModuleNotFoundError: No module named '{missing}' (the installed Ray "
                               f"has no such module)", module=missing)
                continue
            name = imp["name"]
            entry = index.get(module) or {}
            if name and name != "*" and (entry.get("names") or {}).get(name) is False:
                self.emit(row, imp["name_span"] or imp["span"], f"`from {module} import {name}`", "",
                          says=f"raises ImportError: cannot import name '{name}' from '{module}' (the "
                               f"installed Ray no longer has it)", module=module, name=name)
            elif name and name in (entry.get("deprecated") or {}):
                new = entry["deprecated"][name]
                local = imp["asname"] or name
                used = any(c["func"] == local for c in self.calls)
                self.emit(row, imp["name_span"] or imp["span"], f"`{name}` from `{module}`",
                          f"`{new}`" if new else "",
                          severity="fail" if used else "warn",
                          says=f"is marked deprecated with error=True in the installed Ray: "
                               f"{'calling it here raises' if used else 'any call of it raises'} "
                               f"ValueError" + (f" (use {new})" if new else ""), module=module, name=name)

    def missing_attributes(self) -> None:
        """`tune.track`, `ppo.DEFAULT_CONFIG`: attributes of ray modules the installed Ray lacks."""
        from rldoctor.lint.ray_modules import module_aliases, resolve

        index = self.ray_modules
        if not index or index.get("error"):
            return
        aliases = module_aliases(self.imports)
        taken = {marker[1] for marker in self._emitted}
        for attr in self.facts["attributes"]:
            if attr["ctx"] != "load" or tuple(attr["span"]) in taken:
                continue
            module = resolve(aliases, attr["receiver"])
            entry = index.get(module or "") or {}
            if not entry.get("exists") or (entry.get("names") or {}).get(attr["attr"]) is not False:
                continue
            self.emit(_GENERATED_IMPORT, attr["span"], f"`{attr['receiver']}.{attr['attr']}`", "",
                      says=f"raises AttributeError: module '{module}' has no attribute '{attr['attr']}' "
                           "(the installed Ray no longer has it)", module=module, name=attr["attr"])

    # -- callbacks -----------------------------------------------------------------------------------
    def callbacks(self) -> None:
        if not self.rllib_file:
            return
        arg_rows = {r.old: r for r in _BY_SHAPE["callback_arg"]}
        attr_rows = {r.old: r for r in _BY_SHAPE["episode_attr"]}
        callback_scopes = set()
        for cls in self.facts["classes"]:
            bases = [_last(b) for b in cls["bases"]]
            is_callback = any(b in _CALLBACK_BASES or b.endswith(("Callbacks", "Callback")) for b in bases)
            if not is_callback or self.old_stack(cls):
                continue
            for method in cls["methods"]:
                if method["name"] not in _EPISODE_METHODS:
                    continue
                callback_scopes.add(f"{cls['name']}.{method['name']}")
                required = [p for p in method["params"] if p["name"] in arg_rows and not p["default"]]
                if not required:
                    continue
                row = arg_rows[required[0]["name"]]
                names = ", ".join(p["name"] for p in required)
                signature = (f"def {method['name']}(self, *, episode, env_runner=None, metrics_logger=None, "
                             "env=None, env_index=None, rl_module=None, **kwargs)")
                says = "; ".join(arg_rows[p["name"]].says for p in required)
                self.emit(row, required[0]["span"], f"`{method['name']}()` requires {names}:", signature,
                          says=says, params=[p["name"] for p in required])
        for attr in self.facts["attributes"]:
            row = attr_rows.get(attr["attr"])
            if row is None or attr["receiver"] != "episode" or attr["scope"] not in callback_scopes:
                continue
            new = row.new if row.new.startswith(("len(", "metrics_logger.")) else f"episode.{row.new}"
            self.emit(row, attr["span"], f"`episode.{row.old}`", f"`{new}`")

    # -- Tune analyses, metrics loggers, callbacks' signatures, Algorithm constructors ------------
    def _analysis_names(self) -> set[str]:
        """Names bound to what `tune.run(...)` returns, or to an ExperimentAnalysis(...)."""
        names = set()
        for a in self.facts["assignments"]:
            if a["kind"] != "call" or a.get("call") is None:
                continue
            call = self.calls[a["call"]]
            resolved = self._resolve(call["func"])
            if resolved in ("ray.tune.run", "ray.tune.tune.run", "ray.tune.run_experiments") or \
                    _last(resolved) == "ExperimentAnalysis":
                names.add(a["target"])
        return names

    def history_objects(self) -> None:
        """Methods Ray removed or deprecated on a Tune ExperimentAnalysis and an RLlib MetricsLogger."""
        analysis_rows = {r.old: r for r in _BY_SHAPE.get("analysis_call", [])}
        logger_rows = {r.old: r for r in _BY_SHAPE.get("logger_call", [])}
        kwarg_rows = _BY_SHAPE.get("logger_kwarg", [])
        analyses = self._analysis_names()
        for call in self.calls:
            receiver = call["receiver"]
            if not receiver or call["method"] is None:
                continue
            row = analysis_rows.get(call["name"] or "")
            if row and receiver in analyses:
                self.emit(row, call["name_span"], f"`{receiver}.{row.old}()` on the ExperimentAnalysis "
                          "tune.run returns", f"`{receiver}.{row.new}(...)`" if row.new else "")
            if _last(receiver) not in ("metrics_logger", "metrics"):
                continue
            if self.old_stack(call) or not self.rllib_file:
                continue
            row = logger_rows.get(call["name"] or "")
            if row:
                self.emit(row, call["name_span"], f"`{receiver}.{row.old}()`",
                          f"`{receiver}.{row.new}(...)`" if row.new else "")
            for row in kwarg_rows:
                if call["name"] not in row.where:
                    continue
                for kw in call["kwargs"]:
                    if kw["name"] == row.old:
                        given = next((k for k in call["kwargs"] if k["name"] == "reduce"), None)
                        reduce = given["value"] if given and given.get("literal") else None
                        if reduce in (None, "ema"):
                            continue  # without reduce= (or with "ema") an EMA is what it logs
                        self.emit(row, kw["span"], f"`{receiver}.{call['name']}(..., reduce={reduce!r}, "
                                  f"{row.old}=...)`", 'reduce="ema"')

    def mapping_functions(self) -> None:
        """`policy_mapping_fn` that cannot take the new stack's two arguments (agent_id, episode):
        the old stack's (agent_id, episode, worker, **kw), or a one-argument function of Ray 0.x
        (`lambda agent_id: ...`), in a `.multi_agent()` call or a dict config's "multiagent"."""
        rows = _BY_SHAPE.get("mapping_fn_signature", [])
        signatures = self.facts.get("signatures") or {}
        for row in rows:
            for call in self.calls:
                for kw in call["kwargs"]:
                    if kw["name"] != row.old:
                        continue
                    signature = kw.get("signature") or signatures.get(kw.get("ref") or "")
                    if _misfit(signature) is None or self.old_stack(call, call["chain"], call["receiver"]):
                        continue
                    span = kw["value_span"] if kw.get("signature") else kw["span"]
                    name = "lambda" if kw.get("signature") else kw["ref"]
                    self._emit_mapping_fn(row, span, name, signature)
            stored = {sub["stored"]["dict"] for sub in self.facts["subscripts"]
                      if sub["ctx"] == "store" and sub["key"] == "multiagent" and (sub.get("stored") or {}).get("dict")
                      is not None}
            for d in self.facts["dicts"]:
                parent = d.get("parent") or {}
                if (parent.get("key") != "multiagent" and d["id"] not in stored) or self.old_stack(d):
                    continue
                for key in d["keys"]:
                    if key["key"] != row.old:
                        continue
                    signature = key.get("signature") or signatures.get(key.get("name") or "")
                    if _misfit(signature) is not None:
                        name = "lambda" if key.get("signature") else key["name"]
                        self._emit_mapping_fn(row, key["value_span"], name, signature, dict_key=True)

    def _emit_mapping_fn(self, row: Row, span: list[int], name: str, signature: dict,
                         dict_key: bool = False) -> None:
        usage = f'`"{row.old}": {name}`' if dict_key else f"`{row.old}={name}`"
        if _misfit(signature) == "one":
            self.emit(row, span, f"{usage} takes ({', '.join(signature['params'])}):", row.new,
                      says="one argument, and the new stack calls it with two, (agent_id, episode): "
                           "TypeError in the env runner at the first episode")
        else:
            self.emit(row, span, f"{usage} takes ({', '.join(signature['required'])}):", row.new)

    def algorithm_constructors(self) -> None:
        """`PPO(config=config, env="CartPole-v1")`, `Algorithm(config, env)`: the env argument."""
        for row in _BY_SHAPE.get("algo_init_env", []):
            for call in self.calls:
                if call["method"] is not None and call["receiver"] not in (None,):
                    pass
                resolved = self._resolve(call["func"])
                if not (_last(resolved) in words.ALGORITHMS or _last(resolved) in TRAINERS
                        or _last(resolved) == "Algorithm"):
                    continue
                if call["name"] in ("from_checkpoint", "get_default_config"):
                    continue
                kw = next((k for k in call["kwargs"] if k["name"] == "env"), None)
                span = kw["span"] if kw else (call["args"][1]["span"] if len(call["args"]) >= 2 else None)
                if span is None:
                    continue
                self.emit(row, span, f"`{call['func']}(..., env=...)`", row.fix)

    def run(self) -> list[Usage]:
        self.methods()
        self.kwargs()
        self.stores()
        self.dict_configs()
        self.imports_and_names()
        self.algorithms()
        self.results()
        self.call_kwargs()
        self.run_configs()
        self.missing_attributes()
        self.callbacks()
        self.history_objects()
        self.mapping_functions()
        self.algorithm_constructors()
        return self.out


def _misfit(signature: dict | None) -> str | None:
    """Why a mapping function cannot be called as fn(agent_id, episode): "third" (it requires a
    third argument), "one" (it takes only one), or None (it fits, or it is not known here)."""
    if not signature or signature["var_args"]:
        return None
    if len(signature["required"]) > 2:
        return "third"
    if len(signature.get("params") or signature["required"]) < 2:
        return "one"
    return None


def experiment_usages(record: dict) -> list[tuple[dict, Row, dict]]:
    """(yaml document, row, key) for RLlib experiment YAML: stale config keys and stop keys."""
    found = []
    key_rows = _BY_SHAPE["dict_key"]
    result_rows = {r.old: r for r in _BY_SHAPE["result_key"]}
    for doc in record.get("yaml") or []:
        for experiment in doc.get("experiments") or []:
            for key in experiment["config_keys"]:
                for row in key_rows:
                    if key["key"] == row.old and (not row.values or key.get("value") in row.values):
                        found.append((doc, row, key))
            for key in experiment["stop_keys"]:
                if key["key"] in result_rows:
                    found.append((doc, result_rows[key["key"]], key))
    return found
