"""The recompilation sweep as a rich table: one row per case, then each case's cache key."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from jaxinspect.recompile.cachekey import CacheKey
from jaxinspect.renderers.units import format_seconds
from jaxinspect.reports.recompile import CaseOutcome, FailedCase, SweepReport


def render_sweep_console(report: SweepReport) -> RenderableType:
    """One row per case, then each case's cache key.

    Per case: compiled or hit (and whose executable), the traces/lowerings/compilations JAX
    reported (t/l/c), XLA's compile seconds, and what differs from the nearest earlier case;
    a failed case's row has its exit code and the first line of its error instead.
    """
    failed = len(report.failures)
    title = f"{report.composition}: {len(report.cases)} cases"
    title += f", {failed} failed" if failed else ""
    table = Table(title=title, title_justify="left")
    table.add_column("case", style="bold", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("t/l/c", justify="right", no_wrap=True)
    table.add_column("XLA compile", justify="right", no_wrap=True)
    table.add_column("why (vs the nearest earlier case)")
    for case in report.cases:
        if isinstance(case, FailedCase):
            error = case.error
            why = Text(error.summary, style="red")
            table.add_row(case.name, f"failed (exit {int(error.exit_code)})", "—", "—", why)
            continue
        events = f"{case.traces}/{case.lowerings}/{case.compiles}"
        compile_s = format_seconds(case.compile_s) if case.compiled else "—"
        table.add_row(case.name, _result(case), events, compile_s, _why(case))
    parts: list[RenderableType] = [table, _keys_table(report)]
    limit = "" if report.max_compiles is None else f" (--max-compiles {report.max_compiles})"
    verdict = "EXCEEDED" if report.exceeded else ""
    failures = f" ({failed} failed)" if failed else ""
    parts.append(
        Text(
            f"{report.total_compiles} XLA compilations for {len(report.cases)} cases"
            f"{failures}{limit} {verdict}".rstrip(),
            style="bold red" if report.exceeded else "",
        )
    )
    return Group(*parts)


def _result(case: CaseOutcome) -> str:
    if case.compiled:
        return "compiled"
    if case.shares_with is not None:
        return f"hit: {case.shares_with}"
    return "hit"


def _why(case: CaseOutcome) -> str:
    if case.nearest is None:
        return "first case"
    if not case.changes:
        return f"same key as {case.nearest}"
    lines = [f"vs {case.nearest}:", *(f"  {c}" for c in case.changes)]
    if not case.compiled:
        lines.append("  (key differs, yet JAX reused a compiled executable)")
    return "\n".join(lines)


def _keys_table(report: SweepReport) -> Table:
    table = Table(title="cache keys", title_justify="left")
    table.add_column("case", style="bold", no_wrap=True)
    table.add_column("component", no_wrap=True)
    table.add_column("value")
    seen: dict[CacheKey, str] = {}
    for case in report.cases:
        if isinstance(case, FailedCase):
            continue
        if case.key in seen:
            table.add_row(case.name, "(all)", f"same as {seen[case.key]}")
            continue
        seen[case.key] = case.name
        rows = [(leaf.path, leaf.summary) for leaf in case.key.leaves]
        rows += [(name, f"static {value}") for name, value in case.key.static]
        rows.append(("pytree", case.key.structure))
        for i, (component, value) in enumerate(rows):
            table.add_row(case.name if i == 0 else "", component, value)
    return table
