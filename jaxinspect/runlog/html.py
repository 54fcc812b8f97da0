"""The compile log as one self-contained HTML table, for notebooks (no scripts, no network)."""

from __future__ import annotations

from html import escape

from jaxinspect.renderers.units import format_seconds
from jaxinspect.runlog.model import CompileLog


def render_log_html(log: CompileLog) -> str:
    """Per function: compiles and time; then each recompilation with its call site and reasons."""
    rows = "".join(
        f"<tr><td>{escape(f.function)}</td><td>{f.compiles}</td>"
        f"<td>{format_seconds(f.compile_s)}</td><td>{escape(f.defined_at or '—')}</td></tr>"
        for f in log.functions
    )
    recompiles = "".join(
        f"<tr><td>{escape(c.function)}</td><td>{escape(c.call_site or '—')}</td>"
        f"<td>{'<br>'.join(escape(str(ch)) for ch in c.changes) or '—'}</td></tr>"
        for c in log.recompilations
    )
    summary = (
        f"{len(log.compilations)} compilations, {len(log.recompilations)} recompilations, "
        f"{format_seconds(log.total_compile_s)} compiling"
    )
    html = (
        '<div class="jaxinspect-compile-log">'
        f"<p><b>compile log</b>: {escape(summary)}</p>"
        "<table><thead><tr><th>function</th><th>compiles</th><th>compile time</th>"
        f"<th>defined at</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    if recompiles:
        html += (
            "<table><thead><tr><th>recompiled</th><th>call site</th><th>what changed</th>"
            f"</tr></thead><tbody>{recompiles}</tbody></table>"
        )
    return html + "</div>"
