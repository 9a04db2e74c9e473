"""The public path of the check API, for plugins and the README's example:

    from rldoctor.registry import check, warn, fail, info, note, finding

It is rldoctor.engine.registry, re-exported; built-in checks use it too.
"""

from rldoctor.engine.registry import (  # noqa: F401  (re-exported)
    CHECKS_PACKAGE, CODE_RE, DOC_SECTIONS, ENTRY_POINT_GROUP, LINT_AREA, NAME_RE, Check, Registry,
    builtin_checks, builtin_modules, check, fail, finding, info, load_registry, note, parse_doc,
    warn)
