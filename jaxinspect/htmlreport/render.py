"""``ReportData`` as one self-contained HTML file: inline style, inline script, inline SVG.

Nothing is fetched: no external script, style, font or image (a test opens the file in a
browser with every network request failing). Texts are escaped; the data the script needs
(op details) is embedded as JSON in a ``<script type="application/json">`` element.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from jaxinspect.htmlreport.charts import histogram_svg, roofline_svg, timeline_svg
from jaxinspect.htmlreport.data import ReportData
from jaxinspect.htmlreport.embed import embedded_json
from jaxinspect.htmlreport.graphpage import graph_section
from jaxinspect.htmlreport.passtimes import pass_times_section
from jaxinspect.htmlreport.tables import (
    Cell,
    line_table,
    loop_table,
    op_table,
    peak_table,
    sortable_table,
)
from jaxinspect.renderers.units import format_bytes, format_count, format_seconds

_ASSETS = Path(__file__).with_name("assets")


def render_html(data: ReportData) -> str:
    """The report page."""
    from jaxinspect.pipeline.timing.quiet import frozen_heap

    # The report's data and all of jax set aside: a collection walks the page's own strings.
    with frozen_heap():
        return _page(data)


def _page(data: ReportData) -> str:
    src = data.source
    sections = [
        ("summary", "Summary", _summary(data)),
        ("graph", "Graph of the entry computation", graph_section(data.graph)),
        ("cost", "Cost per op", _cost_tables(data)),
        ("roofline", "Roofline", _roofline(data)),
        ("latency", "Latency", _latency(data)),
        ("memory", "Memory at the peak", _memory(data)),
        ("passes", "XLA passes", _passes(data)),
        ("stages", "Stage texts", _stages(data)),
    ]
    if src.collectives is not None and src.collectives.items:
        sections.insert(3, ("collectives", "Collectives", _collectives(data)))
    if data.pass_times is not None:  # report --passes-time
        times = pass_times_section(data.pass_times, data.unavailable)
        sections.insert(-1, ("pass-times", "Compile time by pass", times))
    nav = " · ".join(f'<a href="#{key}">{escape(title)}</a>' for key, title, _ in sections)
    body = "".join(
        f'<section id="{key}"><details open><summary><h2>{escape(title)}</h2></summary>'
        f"{html}</details></section>"
        for key, title, html in sections
    )
    stacks: dict[tuple[str, ...], int] = {}  # each distinct stack once: 96 layers share two
    ops = embedded_json(_op_details(data, stacks))
    contexts = embedded_json(
        {
            "lines": {key: [c.first, c.line, list(c.lines)] for key, c in data.contexts.items()},
            "stacks": [list(stack) for stack in stacks],
        }
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>jaxinspect report: {escape(src.target)}</title>"
        f"<style>{(_ASSETS / 'report.css').read_text()}</style></head><body>"
        f"<header><h1>jaxinspect report</h1>{_header(data)}<nav>{nav}</nav></header>"
        f'<aside id="details" hidden><button id="close" type="button">×</button>'
        f'<div id="details-body"></div></aside>'
        f"<main>{body}</main>"
        f'<script type="application/json" id="ops">{ops}</script>'
        f'<script type="application/json" id="sources">{contexts}</script>'
        f"<script>{(_ASSETS / 'graph.js').read_text()}</script>"
        f"<script>{(_ASSETS / 'report.js').read_text()}</script></body></html>\n"
    )


def _header(data: ReportData) -> str:
    src = data.source
    rows = [
        ("target", src.target),
        ("compiled", src.composition or src.function_name),
        ("devices", f"{len(src.devices)} × {src.device_kind} ({src.backend})"),
        ("jax / jaxlib", f"{src.jax_version} / {src.jaxlib_version}"),
    ]
    if src.topology:
        rows.append(("topology", f"{src.topology} (compiled here, not run)"))
    if src.caveat:  # a GPU compiled without one: kernel choices are not autotuned
        rows.append(("note", src.caveat))
    if src.mesh:
        rows.append(("mesh", " × ".join(f"{k}={v}" for k, v in src.mesh)))
    return _kv(rows)


def _summary(data: ReportData) -> str:
    src, t = data.source, data.source.timings
    html = cards_html(headline_cards(data))
    html += f'<p class="note">{escape(cost_note(data))}</p>'
    html += '<p class="note">The compile time includes writing XLA\'s pass dumps.</p>'
    if t.caveat is not None:  # beside the cached-call card it qualifies
        html += f'<p class="note caveat">Cached call: {escape(t.caveat)}.</p>'
    notes = [f"{path}: {why}" for path, why in (*src.unavailable, *data.unavailable)]
    if notes:
        html += "<details><summary>Values not available, and why</summary><ul>"
        html += "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul></details>"
    return html


def headline_cards(data: ReportData) -> list[tuple[str, str]]:
    """The summary's cards, (label, value): the report's and the notebook summary's."""
    memory, t = data.source.memory, data.source.timings
    flops, moved = _headline_cost(data)
    cards = [
        flops,
        moved,
        (
            "peak memory",
            "—"
            if data.memory is None or data.memory.peak is None
            else format_bytes(data.memory.peak.peak_bytes),
        ),
        ("compile", "—" if t.compile_s is None else format_seconds(t.compile_s)),
        (
            "cached call",
            "—" if t.cached_call is None else format_seconds(t.cached_call.median_s),
        ),
    ]
    if memory is not None and memory.capacity_bytes is not None:
        fits = "fits" if memory.fits else "does not fit"
        cards.append(("device memory", f"{format_bytes(memory.capacity_bytes)} ({fits})"))
    return cards


def cards_html(cards: Sequence[tuple[str, str]]) -> str:
    """The cards as boxes, value above label."""
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card"><div class="v">{escape(v)}</div>'
            f'<div class="k">{escape(k)}</div></div>'
            for k, v in cards
        )
        + "</div>"
    )


def _headline_cost(data: ReportData) -> tuple[tuple[str, str], tuple[str, str]]:
    """The FLOPs and bytes cards: jaxinspect's loop-aware totals (each loop body times its
    trip count), labelled; XLA's count-loops-once figures are in the note under them."""
    cost = data.cost
    total = cost.program.loop_aware
    label = "assumed trips" if cost.assumed_trips else "loop-aware"
    prefix = "≥ " if cost.program.lower_bound else ""
    return (
        (f"FLOPs ({label})", prefix + format_count(total.flops)),
        (f"bytes accessed ({label})", prefix + format_bytes(total.bytes_accessed)),
    )


def cost_note(data: ReportData) -> str:
    """What the FLOPs and bytes cards count, and XLA's own figures beside them."""
    cost, xla = data.cost, data.source.cost
    notes = ["Loop-aware: each while-loop body counted as often as it runs (its trip count)."]
    if cost.assumed_trips:
        assumed = ", ".join(f"{a.loop} × {a.trips:,}" for a in cost.assumed_trips)
        notes.append(f"Trip counts ASSUMED with --assume-trips: {assumed}; an estimate.")
    if cost.program.lower_bound:
        notes.append("≥: a lower bound, some work is not counted (see the cost section).")
    if xla is not None and xla.flops is not None and xla.bytes_accessed is not None:
        notes.append(
            f"XLA's cost_analysis() counts each loop body once: {format_count(xla.flops)} "
            f"FLOPs, {format_bytes(xla.bytes_accessed)} accessed."
        )
    return " ".join(notes)


def _cost_tables(data: ReportData) -> str:
    cost = data.cost
    measured = cost.measured
    html = op_table(cost)
    html += "<h3>By source line</h3>" + line_table(cost)
    if cost.program.loops:
        html += "<h3>While loops</h3>" + loop_table(cost)
        if cost.unknown_loops:
            html += (
                '<p class="note">A loop of unknown trip count is counted once (one trip): '
                "the totals are a lower bound and its share is understated; "
                "<code>--assume-trips LOOP=N</code> counts N trips.</p>"
            )
    if measured is not None:
        agreement = ", ".join(
            f"{name} {'n/a' if rho is None else f'{rho:.2f}'}" for name, rho in measured.agreement
        )
        html += (
            f'<p class="note">Measured under JAX\'s profiler ({measured.program_runs} runs); '
            f"rank agreement with the measurement (Spearman): {escape(agreement)}.</p>"
        )
    return html


def _collectives(data: ReportData) -> str:
    summary = data.source.collectives
    assert summary is not None
    rows = [
        (
            None,
            [
                (c.op, c.op),
                (str(c.count), c.count),
                (format_bytes(c.bytes), c.bytes),
                (",".join(c.axes or ()) or "?", ",".join(c.axes or ())),
                (c.groups, c.groups),
            ],
        )
        for c in summary.items
    ]
    return _table(["collective", "count", "bytes/device", "axes", "groups"], rows, "coll")


def _roofline(data: ReportData) -> str:
    chart = data.roofline
    if chart is None:
        return (
            '<p class="note">No device profile for this device: give <code>--device NAME</code> '
            "(e.g. h100, epyc-9654) for the roofline.</p>"
        )
    what = "measured FLOP/s" if chart.measured else "the model's FLOP/s (on the roof)"
    note = f"{chart.profile}: ops at {what}"
    svg = roofline_svg(list(chart.points), chart.peak_flops, chart.bandwidth, note)
    source = f"Device profile {chart.profile}, from {chart.chosen_by}."
    return f'{svg}<p class="note">{escape(source)}</p>'


def _latency(data: ReportData) -> str:
    t = data.source.timings
    rows = [
        ("trace", t.trace_s),
        ("lower", t.lower_s),
        ("compile", t.compile_s),
        ("first call", t.first_call_s),
        ("cached call (median)", None if t.cached_call is None else t.cached_call.median_s),
    ]
    html = _kv([(k, "n/a" if v is None else format_seconds(v)) for k, v in rows])
    if t.cached_call is not None:
        html += histogram_svg(t.cached_call.samples)
    else:
        html += f'<p class="note">{escape(data.source.reason("timings.cached_call_s") or "")}</p>'
    if t.inputs is not None:
        html += f'<p class="note">Inputs ({escape(t.inputs.source)}): '
        html += f"{escape(t.inputs.summary)}.</p>"
    if t.caveat is not None:
        html += f'<p class="note caveat">Caution: {escape(t.caveat)}.</p>'
    return html


def _memory(data: ReportData) -> str:
    report = data.memory
    if report is None or report.peak is None:
        why = "" if report is None else "; ".join(w for _, w in report.unavailable)
        return f'<p class="note">No buffer assignment: {escape(why)}</p>'
    peak = report.peak
    steps = [(p.step, p.live_bytes, p.instruction) for p in peak.timeline]
    html = timeline_svg(steps, peak.peak_step)
    html += (
        f"<h3>Buffers live at the peak ({format_bytes(peak.peak_bytes)}, step "
        f"{peak.peak_step}, {escape(peak.peak_instruction)})</h3>"
    )
    return html + peak_table(peak)


def _passes(data: ReportData) -> str:
    report = data.passes
    if report is None and "passes" not in dict(data.unavailable):
        return (
            '<p class="note">Not recorded: <code>jaxinspect report --passes</code> adds this '
            "section (XLA then dumps the module after every pass, a slower compile); "
            "<code>jaxinspect passes</code> lists the passes too.</p>"
        )
    if report is None or report.steps is None:
        why = "" if report is None else "; ".join(w for _, w in report.unavailable)
        return f'<p class="note">No pass dump: {escape(why)}</p>'
    rows = [
        (
            None,
            [
                (str(s.index), s.index),
                (s.pipeline, s.pipeline),
                (s.name, s.name),
                ("" if s.ops_before is None else str(s.ops_before), s.ops_before or 0),
                ("" if s.ops_after is None else str(s.ops_after), s.ops_after or 0),
                (f"+{s.lines_added} −{s.lines_removed}", s.lines_added + s.lines_removed),
            ],
        )
        for s in report.steps
        if s.changed
    ]
    total = report.totals
    head = (
        f'<p class="note">{total.changed} of {total.steps} steps changed the module '
        f"({escape(report.module)}); <code>jaxinspect passes --diff N</code> shows one.</p>"
    )
    return head + _table(
        ["#", "pipeline", "pass", "ops before", "ops after", "lines"], rows, "passes"
    )


def _stages(data: ReportData) -> str:
    html = ""
    for stage in data.stages:
        name, title = stage.name, stage.title
        extra = ""
        if stage.with_locations and not stage.cut:  # a cut module would not parse
            extra = (
                ' <a class="download" href="#" data-pre="pre-stablehlo" download="module.mlir">'
                "download with locations (Model Explorer)</a>"
            )
        whole = f"jaxinspect {name}" + (" --debug-info" if stage.with_locations else "")
        cut = (
            f'<p class="note">Cut at {len(stage.text):,} characters to keep the file small; '
            f"<code>{whole}</code> prints it whole.</p>"
            if stage.cut
            else ""
        )
        html += (
            f'<details class="stage" open><summary>{escape(title)} ({stage.line_count} lines)'
            f"</summary>"
            f'<input class="search" type="search" placeholder="search {escape(title)}" '
            f'data-pre="pre-{name}">{extra} <span class="hits"></span>{cut}'
            f'<pre id="pre-{name}" class="ir">{_highlight(stage.text)}</pre></details>'
        )
    return html


_TOKEN = re.compile(r"(%[\w.\-]+|\b(?:[fsu]\d+|bf16|pred|c64|c128)\[[\d,]*\]|\bloc\(#loc\d*\))")


def _highlight(text: str) -> str:
    out = []
    for line in text.splitlines():
        escaped = escape(line)
        out.append(
            '<span class="ln">'
            + _TOKEN.sub(
                lambda m: f'<span class="{_kind(m.group(0))}">{m.group(0)}</span>', escaped
            )
            + "</span>"
        )
    return "\n".join(out)


def _kind(token: str) -> str:
    return "l" if token.startswith("loc(") else "t"


def _op_details(data: ReportData, stacks: dict[tuple[str, ...], int]) -> dict[str, dict[str, Any]]:
    """What the details panel shows, by instruction; ``stacks`` collects each distinct stack
    (an op names its stack by index)."""
    return {
        name: {
            "opcode": op.opcode,
            "shape": op.shape,
            "jaxpr": op.jaxpr,
            "source": op.source,
            "flops": None if op.flops is None else format_count(op.flops),
            "inside": None if op.flops_inside is None else format_count(op.flops_inside),
            "bytes": None if op.bytes_accessed is None else format_bytes(op.bytes_accessed),
            "measured": None if not op.measured_s else format_seconds(op.measured_s),
            "stack": stacks.setdefault(op.stack, len(stacks)),
        }
        for name, op in data.ops.items()
    }


def _table(
    head: list[str], rows: Sequence[tuple[str | None, Sequence[tuple[str, Any]]]], name: str
) -> str:
    return sortable_table(head, [(op, [Cell(t, v) for t, v in cells]) for op, cells in rows], name)


def _kv(rows: list[tuple[str, str]]) -> str:
    return (
        '<table class="kv">'
        + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
        + "</table>"
    )


#: JSON escapes for the characters that can end or change an HTML script element's text.
