"""The compile log as rich tables: per function, then every recompilation and why."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.units import format_seconds
from jaxinspect.runlog.model import Compilation, CompileLog


def render_log_console(log: CompileLog) -> RenderableType:
    """Per-function compile counts and times, the recompilations with reasons, and a verdict."""
    functions = FitTable(
        [
            Col("function", style="bold"),
            Col("compiles", justify="right"),
            Col("compile time", justify="right"),
            Col("persistent hits", justify="right", drop=1),
            Col("defined at", drop=2),
        ],
        title=f"compile log of {log.program}" if log.program else "compile log",
        boxed=True,
    )
    for row in log.functions:
        functions.add_row(
            row.function,
            str(row.compiles),
            format_seconds(row.compile_s),
            str(row.persistent_hits),
            row.defined_at or "—",
        )
    parts: list[RenderableType] = [functions]
    if log.recompilations:
        parts.append(_recompile_table(log))
    parts.append(_verdict(log))
    return Group(*parts)


def _recompile_table(log: CompileLog) -> RenderableType:
    table = FitTable(
        [
            Col("function", style="bold"),
            Col("call site"),
            Col("t/l/c", justify="right", drop=1),
            Col("why", kind="prose"),
        ],
        title="recompilations: what changed since the nearest earlier call",
        boxed=True,
    )
    for comp in log.recompilations:
        table.add_row(comp.function, comp.call_site or "—", _phases(comp), _why(comp))
    return table


def _phases(comp: Compilation) -> str:
    times = (comp.trace_s, comp.lower_s, comp.compile_s)
    return "/".join("—" if t is None else format_seconds(t) for t in times)


def _why(comp: Compilation) -> str:
    if comp.changes:
        return "\n".join(str(change) for change in comp.changes)
    if comp.trace_s is None:
        return "same traced program, compiled again (e.g. a new jax.jit of the same function)"
    return comp.explanation or "no key difference JAX reported"


def _verdict(log: CompileLog) -> Text:
    line = (
        f"{_count(len(log.compilations), 'compilation')} of "
        f"{_count(len(log.functions), 'function')}, "
        f"{_count(len(log.recompilations), 'recompilation')}, "
        f"{format_seconds(log.total_compile_s)} compiling"
    )
    hits = log.persistent_cache.get("hit", 0)
    if hits:
        line += f", {hits} from the persistent cache"
    if log.interrupted:
        line += "; interrupted (Ctrl-C)"
    over = log.over_limit
    if over:
        names = ", ".join(f"{f.function} ({f.compiles})" for f in over)
        line += f"; over --max-compiles {log.max_compiles}: {names}"
        return Text(line, style="bold red")
    return Text(line)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
