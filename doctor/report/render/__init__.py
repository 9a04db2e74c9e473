"""Renderers: a plain map from format name to a function Report -> str; the map is the
list of formats (`FORMATS`, the commands' --format choices)."""

from rldoctor.report.render.json import render_json
from rldoctor.report.render.markdown import render_markdown
from rldoctor.report.render.table import render_table

RENDERERS = {"table": render_table, "json": render_json, "markdown": render_markdown}
# The --format choices of `check`, `smoke-train` and `collect`: a renderer added here is one.
FORMATS = tuple(RENDERERS)
