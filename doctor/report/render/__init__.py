"""Renderers: one module per output format, each declaring its renderer `Report -> str` with
`@output_format` (formats.py), found in this package; the maps below are what is found
(`FORMATS`, the commands' --format choices). `rldoctor lint` has its own map: its
compiler-style text, then every report format but the cluster table. Every command takes both
`table` and `text` for its human format (check's table, lint's compiler lines).

    table.py, markdown.py, json.py, lint_text.py   one module per format
    formats.py    the declaration (`@output_format`) and the search
    text.py, overview.py, training.py   the text they share: lines, the cluster overview, the
                  Training part"""

from rldoctor.report.render.formats import found, renderers

RENDERERS = renderers(found())  # table, json, markdown, then `text` (the table)
# The --format choices of `check`, `smoke-train` and `collect`: a format declared here is one.
FORMATS = tuple(RENDERERS)
# The --format choices of `lint`: its own text (one finding a line), then the report formats
LINT_RENDERERS = renderers(found(), lint=True)  # text, json, markdown, then `table` (lint's text)
LINT_FORMATS = tuple(LINT_RENDERERS)
