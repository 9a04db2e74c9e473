"""RLD801: training code that uses RLlib or Tune names the pinned Ray removed, renamed or ignores.

Like every lint rule of this package, it reads the `lint` section that `rldoctor lint PATH ...` collects
(rldoctor.lint.document): per file, the calls, keyword arguments, dict configs,
imports and YAML data, with their locations. Lint rules belong to the `code` area,
which `rldoctor check` leaves to `rldoctor lint`. Every finding carries a
`location` ({path, line, column}); the replacement written out for the call at
hand is in `evidence["replacement"]`, and mechanical renames carry
`evidence["edits"]` for `--diff` and `--fix`.
"""

from __future__ import annotations

from rldoctor.lint.rules._lint_files import finding, lint_files, ray_version, sort_key
from rldoctor.registry import check

# The rules' helpers (the table of names, the matchers) are imported when a rule runs, so
# that `rldoctor check`, `list` and `explain`, which load every check, pay nothing for them.

# The fixes of RLD801's findings, by case (rldoctor.engine.registry). Each rule (a row of the
# table, rldoctor.lint.rules.table) carries its own fix as data (`Row.fix`, what `rldoctor
# explain RLD801/ID` prints), and each finding writes out the replacement for the line it is
# on; a finding's fix is one of these, or both.
FIXES = {
    "the finding writes out the replacement for its line": "{replacement}",
    "the rule's fix says more than that replacement": "{replacement}; {rule_fix}",
    "no replacement is written out for the line": "{rule_fix}",
}


def fix_of(replacement: str, rule_fix: str) -> str:
    """A Python usage's fix: its replacement, with its rule's own fix after it unless the
    replacement already says it."""
    if not replacement and not rule_fix:
        return ""  # nothing to say: no fix
    if not rule_fix or rule_fix in replacement:
        return FIXES["the finding writes out the replacement for its line"].format(replacement=replacement)
    if not replacement:
        return FIXES["no replacement is written out for the line"].format(rule_fix=rule_fix)
    return FIXES["the rule's fix says more than that replacement"].format(replacement=replacement,
                                                                        rule_fix=rule_fix)


def _rules():
    from rldoctor.lint.rules.table import rules

    return rules()


@check("RLD801", "deprecated-rllib-api", area="code", requires=("lint",), rules=_rules, fixes=FIXES)
def deprecated_rllib_api(snap, params):
    """Training code that uses RLlib or Tune names the pinned Ray removed, renamed or ignores.

    Symptom:
        Code copied from older tutorials fails at once, or runs and silently does something
        else than written. Failing at once: `ValueError: rollouts has been deprecated`,
        `TypeError: AlgorithmConfig.training() got an unexpected keyword argument
        'sgd_minibatch_size'`, `ModuleNotFoundError: No module named 'ray.rllib.agents'`.
        Silently different: `.resources(num_gpus=1)` trains on CPU, `{"sgd_minibatch_size":
        64}` in a dict config keeps the default minibatch size, `stop={"episode_reward_mean":
        195}` never stops, `algo.workers` is a bound method, `compute_single_action` fails
        inside the env runner.

    Cause:
        RLlib's new API stack (the default on Ray 2.60) renamed rollout workers to env
        runners, moved models to RLModules (`rl_module(model_config=...)`), learners to
        `learners(...)`, results to `env_runners/...` keys, and dropped the `Trainer`
        classes. Many old names still parse: keyword arguments kept for deprecation warn or
        raise, but dict configs and attributes accept any key and silently ignore it.

        Each finding's fix is the replacement it writes out for that very line (shown in
        brackets after the message), with the fix of its rule (`rldoctor explain RLD801/ID`).
        Renames that keep their meaning are applied by `rldoctor lint
        --fix` (`--diff` shows them first); anything that needs judgement is reported,
        never rewritten. Severity follows harm: silently ignored or never-firing is `fail`,
        raises is `fail`, still works but deprecated is `warn`. A dict config is reported
        key by key where each key is written, also when it reaches RLlib through
        variables, copies and helper functions, and across the files given (a module's
        DEFAULTS or make_config() that another module hands to Tune or RLlib is judged
        as a config there; "looks like an RLlib config" is kept for a dict that reaches no
        RLlib call in any of them); a setting whose value the file does not
        fix (`local_mode=args.local_mode`) is an `info` note saying what each value does.
        Imports the installed Ray no longer has are read from Ray's own files.
    """
    from rldoctor.lint.rules._project import reached
    from rldoctor.lint.rules._rllib_api_usage import FileUsages, experiment_usages

    version = ray_version(snap)
    found = []
    records = lint_files(snap, ("python", "notebook"))
    modules = snap["lint"].get("ray_modules")
    files = [FileUsages(record, modules) for record in records]
    usages = {u.record["path"]: u.run() for u in files}
    # The files given are one project: a dict config built in one module and handed to
    # RLlib in another is judged again in the module that builds it, as a config.
    sinks = {u.record["path"]: (u.imported_names, u.dicts.imported_sinks)
             for u in files if getattr(u, "dicts", None) and u.dicts.imported_sinks}
    by_path = {record["path"]: record for record in records}
    for path, objects in reached(records, sinks).items():
        usages[path] = FileUsages(by_path[path], modules, reached=objects).run()
    for record in records:
        for usage in usages[record["path"]]:
            line, col = usage.span[0], usage.span[1]
            evidence = {**usage.evidence, "replacement": usage.replacement, "edits": usage.edits,
                        "ray_version": version}
            fix = fix_of(*evidence.pop("fix"))
            found.append(finding(record, usage.severity, line, col, usage.message, fix, evidence))
    for record in lint_files(snap, ("yaml",)):
        for doc, row, key in experiment_usages(record):
            if row.shape == "result_key":
                message = (f'stop condition `{row.old}` never fires: new-stack results have no such key')
                replacement = row.new
            else:
                message = f"`{row.old}` in an experiment's config {row.says or row.behaviour}"
                replacement = f"{row.new}: ..." if row.new else row.fix
            severity = "warn" if row.inert and key.get("value") in row.inert else row.severity
            fix = (FIXES["the rule's fix says more than that replacement"].format(
                replacement=replacement, rule_fix=row.fix) if row.fix and row.fix != replacement else
                FIXES["the finding writes out the replacement for its line"].format(replacement=replacement))
            found.append(finding(record, severity, key["line"], max(key["column"] - 1, 0), message, fix,
                                 {"row": row.id, "behaviour": row.behaviour, "old": row.old,
                                  "new": row.new, "replacement": replacement, "edits": [],
                                  "ray_version": version}))
    return sorted(found, key=sort_key)
