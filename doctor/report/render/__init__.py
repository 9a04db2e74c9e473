"""Renderers: a plain map from format name to a function Report -> str; the map is the
list of formats (`FORMATS`, the commands' --format choices). `rldoctor lint` has its own
map: its compiler-style text, then every report renderer but the cluster table. Every command
takes both `table` and `text` for its human format (check's table, lint's compiler lines).

    table.py, markdown.py, json.py, lint_text.py   one module per format
    text.py, overview.py, training.py   the text they share: lines, the cluster overview, the
                  Training part"""

from rldoctor.report.render.json import render_json
from rldoctor.report.render.lint_text import render_lint_text
from rldoctor.report.render.markdown import render_markdown
from rldoctor.report.render.table import render_table

RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown,
             "text": render_table}  # one vocabulary: `text` and `table` are the human format
# The --format choices of `check`, `smoke-train` and `collect`: a renderer added here is one.
FORMATS = tuple(RENDERERS)
# The --format choices of `lint`: its own text (one finding a line), then the report formats
LINT_RENDERERS = {"text": render_lint_text,
                  **{k: v for k, v in RENDERERS.items() if k not in ("table", "text")},
                  "table": render_lint_text}  # `table`, as for check: lint's text
LINT_FORMATS = tuple(LINT_RENDERERS)
