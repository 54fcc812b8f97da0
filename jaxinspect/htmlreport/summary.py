"""One compilation as a compact HTML block for a notebook cell (``Inspection._repr_html_``).

The report's data (``ReportData``) rendered small: the headline cards, the hottest ops, the
folded graph and the buffers live at the peak. A notebook shows the block inside its own
page, next to other outputs and other summaries, so:

- everything is inline (style, script, data): it renders in Jupyter, Colab and VS Code with
  no network;
- every element id starts with the summary's own id, its style rules all sit under that id
  (the report's stylesheet, rewritten by :func:`scoped_css`), and its script finds its own
  root and hands the report's graph script a lookup that adds the prefix: two summaries,
  or the same cell run twice, stay independent, and the notebook's page is left alone.
"""

from __future__ import annotations

import json
import re
import uuid
from functools import cache
from html import escape
from pathlib import Path

from jaxinspect.htmlreport.data import ReportData
from jaxinspect.htmlreport.graphpage import graph_section
from jaxinspect.htmlreport.render import cards_html, cost_note, headline_cards
from jaxinspect.htmlreport.tables import op_table, peak_table
from jaxinspect.renderers.units import format_bytes

_ASSETS = Path(__file__).with_name("assets")
#: Rows of the hot-ops table and of the buffers table.
TOP_OPS = 10
TOP_BUFFERS = 10
#: Rules of the report's page that have no place in a notebook cell (its frame, the
#: details panel, the chart tooltip).
_PAGE_ONLY = re.compile(r"^(body|header|nav|main|aside|#close|#tip)\b")
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_ID = re.compile(r"#([A-Za-z][\w-]*)")
#: Sized for a cell: the report's graph view may fill the window, a cell's stays small.
_CELL_CSS = (
    "{root}{{font:13px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d2330;"
    "background:#fafbfc;border:1px solid #dde2ea;border-radius:6px;padding:8px 12px;"
    "max-width:100%;box-sizing:border-box}}"
    "{root} h4{{margin:10px 0 4px;font-size:14px}}{root} .jxs-head{{font-weight:600}}"
    "{root} .jxs-head span{{font-weight:400;color:#555}}"
    "{root} .scroll{{max-height:300px}}{root} #{uid}-graph-view{{max-height:420px}}"
    "{root} table.sortable th{{cursor:default}}{root} .jxs-clicked{{font:12px ui-monospace,"
    "Menlo,Consolas,monospace;color:#333;min-height:1.4em;overflow-wrap:anywhere}}"
)


def render_summary(data: ReportData, uid: str | None = None) -> str:
    """The summary block; ``uid`` (a fresh random id unless given) prefixes every id."""
    uid = uid or f"jxs-{uuid.uuid4().hex[:12]}"
    src = data.source
    device = f"{len(src.devices)} × {src.device_kind} ({src.backend})"
    body = [
        f'<div class="jxs-head">jaxinspect · {escape(src.composition or src.function_name)} '
        f"<span>{escape(src.target)} · {escape(device)} · jax {escape(src.jax_version)}"
        "</span></div>",
        cards_html(headline_cards(data)),
        f'<p class="note">{escape(cost_note(data))}</p>',
        f"<h4>Hot ops (the {TOP_OPS} largest by FLOPs)</h4>",
        op_table(data.cost, TOP_OPS, f"{uid}-ops"),
        "<h4>Graph</h4>",
        graph_section(data.graph, f"{uid}-", "its shape and source line (shown under it)"),
        '<div class="jxs-clicked"></div>',
        "<h4>Memory at the peak</h4>",
        _memory(data, uid),
    ]
    script = _script().replace("__UID__", json.dumps(uid))
    return (
        f'<div class="jxs" id="{uid}"><style>{scoped_css(_css(), uid)}</style>'
        f"{''.join(body)}<script>{script}</script></div>"
    )


def _memory(data: ReportData, uid: str) -> str:
    report = data.memory
    if report is None or report.peak is None:
        why = "" if report is None else "; ".join(w for _, w in report.unavailable)
        return f'<p class="note">No buffer assignment: {escape(why)}</p>'
    peak = report.peak
    shown = min(TOP_BUFFERS, len(peak.buffers))
    note = (
        f"{format_bytes(peak.peak_bytes)} live at step {peak.peak_step} "
        f"({peak.peak_instruction}); the {shown} largest of {len(peak.buffers)} buffers."
    )
    return f'<p class="note">{escape(note)}</p>' + peak_table(peak, f"{uid}-peak", TOP_BUFFERS)


def scoped_css(css: str, uid: str) -> str:
    """``css`` applying inside the element ``#uid`` only: each selector under ``#uid``, each
    ``#name`` in it as ``#uid-name``; the page-level rules left out.

    For the report's stylesheet (plain rules, no at-rules or nesting)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    rules = []
    for match in _RULE.finditer(css):
        selectors = [s.strip() for s in match.group(1).split(",")]
        kept = [
            f"#{uid} " + _ID.sub(lambda m: f"#{uid}-{m.group(1)}", s)
            for s in selectors
            if not _PAGE_ONLY.match(s)
        ]
        if kept:
            rules.append(f"{','.join(kept)}{{{match.group(2)}}}")
    return "".join(rules) + _CELL_CSS.format(root=f"#{uid}", uid=uid)


@cache
def _css() -> str:
    return (_ASSETS / "report.css").read_text()


@cache
def _script() -> str:
    graph = (_ASSETS / "graph.js").read_text()
    return (_ASSETS / "summary.js").read_text().replace("/*GRAPH_JS*/", graph)
