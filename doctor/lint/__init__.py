"""`rldoctor lint`: read training scripts, notebooks and cluster YAML without running them.

The lint reader (`rldoctor.lint.document`) turns source files into the `lint`
section of a snapshot-like document: per file, the facts the rules need (calls,
keyword arguments, dict configs, imports, attributes, YAML data) with their
locations. The rules are checks of the `code` area in `rldoctor.lint.rules` (doctor/lint/rules/),
pure functions of that section, like every other check.

Nothing here imports ray or torch for Python files. Ray is imported only to
validate cluster YAML with Ray's own schema and validator, and to read the
names Ray knows (`_system_config` keys, `RAY_` settings) when a file uses one.
"""
