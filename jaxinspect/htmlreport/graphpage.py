"""The report's graph section: controls, legend and the graph as JSON for assets/graph.js.

The page draws the graph itself (boxes sized to their labels, rows stacked, groups expanded
in place), so the file carries the folded structure and each group's precomputed rows, not
an SVG of every instruction: a 96-layer model's graph is one ``×96`` box until opened.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

from jaxinspect.htmlreport.embed import embedded_json
from jaxinspect.htmlreport.graph import METRICS, Graph
from jaxinspect.renderers.units import format_bytes, format_count, format_seconds

_LAYOUT = re.compile(r"\{[^{}]*\}")
#: Decades of the colour scale: the hottest op is full colour, 1/1000 of it the palest.
DECADES = 3
_TITLES = {"time": "measured time", "flops": "FLOPs", "bytes": "bytes accessed"}
_FORMATS: dict[str, Callable[[float], str]] = {
    "time": format_seconds,
    "flops": format_count,
    "bytes": format_bytes,
}


def graph_section(
    graph: Graph, prefix: str = "", clicked: str = "its jaxpr equation and source"
) -> str:
    """Search, colour choice, legend, zoom and the (script-drawn) graph.

    ``prefix`` starts every element id: a notebook page holds several summaries, each its
    own graph (graph.js then looks its elements up through a lookup that adds the prefix).
    ``clicked``: what a click on a node shows.
    """
    metrics = _metrics(graph)
    options = "".join(
        f'<option value="{i}"{" selected" if m["key"] == graph.weighted_by else ""}>'
        f"{escape(m['label'])}</option>"
        for i, m in enumerate(metrics)
    )
    data = embedded_json(_data(graph, metrics), compact=True)
    return (
        f'<p class="note">{len(graph.nodes)} instructions of the ENTRY computation, operands '
        "above their users, grouped by the function (or name scope) that made them; runs of "
        "identical groups (a model's layers) fold into one box marked ×N, a fusion opens onto "
        f"its fused computation (click ▸). Click a node for {escape(clicked)}.</p>"
        f'<div class="graph-bar"><input id="{prefix}graph-search" type="search" '
        'placeholder="find a node: name, opcode or source line" autocomplete="off">'
        f'<span id="{prefix}graph-hits"></span>'
        f'<label>colour by <select id="{prefix}graph-metric">{options}</select></label>'
        f'<span id="{prefix}graph-legend"></span>'
        '<span class="zoom">zoom <button type="button" data-zoom="0.8">−</button>'
        '<button type="button" data-zoom="1.25">+</button>'
        '<button type="button" data-zoom="1">1:1</button>'
        '<button type="button" data-zoom="fit">fit</button>'
        f'<button type="button" id="{prefix}graph-fold">fold all</button></span></div>'
        f'<div class="scroll" id="{prefix}graph-view"></div>'
        f'<script type="application/json" id="{prefix}graph-data">{data}</script>'
    )


def _metrics(graph: Graph) -> list[dict[str, Any]]:
    """The figures some node has, each with its largest node value and legend ticks."""
    out = []
    for at, key in enumerate(METRICS):
        top = max((n.values[at] or 0.0 for n in graph.nodes), default=0.0)
        if top <= 0:
            continue
        ticks = [
            [round(1 - d / DECADES, 4), ("≤ " if d == DECADES else "") + _FORMATS[key](top / 10**d)]
            for d in range(DECADES, -1, -1)
        ]
        out.append({"key": key, "label": _TITLES[key], "at": at, "max": top, "ticks": ticks})
    return out


def _data(graph: Graph, metrics: list[dict[str, Any]]) -> dict[str, Any]:
    by = next((i for i, m in enumerate(metrics) if m["key"] == graph.weighted_by), 0)
    return {
        "decades": DECADES,
        "metrics": metrics,
        "by": by,
        "nodes": [
            [
                n.name,
                _clip(n.label, 28),
                n.opcode,
                _short(n.shape),
                n.group,
                -1 if n.body is None else n.body,
                int(n.collective),
                _nums(n.values),
                n.source or "",
            ]
            for n in graph.nodes
        ],
        "groups": [
            [g.label, g.kind, g.count, g.parent, g.layout, list(g.children), _nums(g.values)]
            for g in graph.groups
        ],
        "layouts": [[[row, round(place, 2)] for row, place in layout] for layout in graph.layouts],
        "edges": [i for edge in graph.edges for i in edge],
        "bodies": [
            [
                list(b.labels),
                [_short(s) for s in b.shapes],
                [i for e in b.edges for i in e],
                [[row, round(place, 2)] for row, place in b.layout],
            ]
            for b in graph.bodies
        ],
    }


def _nums(values: Sequence[float | None]) -> list[float | None]:
    """Four significant digits: enough for a colour, and a smaller file."""
    return [None if v is None else float(f"{v:.4g}") for v in values]


def _short(shape: str) -> str:
    """``f32[2,64]{1,0}`` -> ``f32[2,64]``: the layout braces say nothing in a tooltip."""
    return _LAYOUT.sub("", shape)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
