"""The lint rules: one module per code (rld801, rld802, rld803), checks of the `code` area.

Each rule is a `@check(..., area="code", requires=("lint",))`, a pure function of the
`lint` section that `rldoctor.lint.document` reads from source files. The registry finds
the rules here as it finds the checks of `rldoctor.checks`: every module whose name does
not start with "_" holds checks; `table` is RLD801's row table (old usage, what Ray does
with it, the replacement), the `_helpers` interpret the readers' facts for one rule.
"""
