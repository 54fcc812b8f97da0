"""The recompilation sweep as a rich table: one row per case, then each case's cache key."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from jaxinspect.recompile.cachekey import CacheKey
from jaxinspect.recompile.report import CaseOutcome, FailedCase, HelperCompile, SweepReport
from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.units import format_seconds


def render_sweep_console(report: SweepReport, *, all_keys: bool = False) -> RenderableType:
    """One row per case, then the cache-key components that tell the cases apart.

    Per case: compiled or hit (and whose executable), the traces/lowerings/compilations JAX
    reported (t/l/c), XLA's compile seconds, and what differs from the nearest earlier case;
    a failed case's row has its exit code and the first line of its error instead.

    Args:
        report: The sweep.
        all_keys: Show every component of every key, not only those that differ.
    """
    failed = len(report.failures)
    title = f"{report.composition}: {len(report.cases)} cases"
    title += f", {failed} failed" if failed else ""
    table = FitTable(
        [
            Col("case", style="bold"),
            Col("result"),
            Col("t/l/c", justify="right", drop=2),
            Col("XLA compile", justify="right", drop=1),
            Col("why", kind="prose"),
        ],
        title=title,
        boxed=True,
    )
    for case in report.cases:
        if isinstance(case, FailedCase):
            error = case.error
            why = Text(error.summary, style="red")
            table.add_row(case.name, f"failed (exit {int(error.exit_code)})", "—", "—", why)
            continue
        events = f"{case.traces}/{case.lowerings}/{case.compiles}"
        compile_s = format_seconds(case.compile_s) if case.compiled else "—"
        table.add_row(case.name, _result(case), events, compile_s, _why_with_helpers(case))
    parts: list[RenderableType] = [table, _keys_table(report, all_keys)]
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
    if report.helper_compiles:
        count = sum(h.count for h in report.helper_compiles)
        parts.append(
            Text(
                f"+ {count} helper compilations, not counted: {_helpers(report.helper_compiles)} "
                f"(eager operations {report.composition} ran while tracing)",
                style="dim",
            )
        )
    return Group(*parts)


def _helpers(helpers: tuple[HelperCompile, ...]) -> str:
    """``jit(sqrt), jit(convert_element_type) ×2``."""
    return ", ".join(h.name if h.count == 1 else f"{h.name} ×{h.count}" for h in helpers)


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


def _why_with_helpers(case: CaseOutcome) -> str:
    """``_why``, then the helper programs compiled while the case traced, if any."""
    why = _why(case)
    if not case.helper_compiles:
        return why
    return f"{why}\nhelpers compiled: {_helpers(case.helper_compiles)}"


def _keys_table(report: SweepReport, all_keys: bool) -> FitTable:
    keys = [case.key for case in report.cases if not isinstance(case, FailedCase)]
    differing = None if all_keys else _differing_components(keys)
    title = "cache keys" if differing is None else "cache keys: the components that differ"
    table = FitTable(
        [Col("case", style="bold"), Col("component", kind="path"), Col("value", kind="prose")],
        title=title,
        boxed=True,
    )
    seen: dict[CacheKey, str] = {}
    hidden = 0
    for case in report.cases:
        if isinstance(case, FailedCase):
            continue
        if case.key in seen:
            table.add_row(case.name, "(all)", f"same as {seen[case.key]}")
            continue
        seen[case.key] = case.name
        rows = _components(case.key)
        shown = [(c, v) for c, v in rows if differing is None or c in differing]
        hidden = max(hidden, len(rows) - len(shown))
        if not shown:
            table.add_row(case.name, "(all)", "the same in every case")
        for i, (component, value) in enumerate(shown):
            table.add_row(case.name if i == 0 else "", component, value)
    if hidden:
        table.caption = Text(
            f"{hidden} components the same in every case are hidden; --keys shows them.",
            style="dim",
        )
    return table


def _components(key: CacheKey) -> list[tuple[str, str]]:
    """``(component, value)`` for every part of a cache key, in the key's order."""
    rows = [(leaf.path, leaf.summary) for leaf in key.leaves]
    rows += [(name, f"static {value}") for name, value in key.static]
    rows.append(("pytree", key.structure))
    return rows


def _differing_components(keys: list[CacheKey]) -> set[str]:
    """The components whose value is not the same in every key (or missing from some)."""
    values: dict[str, set[str | None]] = {}
    tables = [dict(_components(key)) for key in keys]
    for table in tables:
        for component in table:
            values.setdefault(component, set())
    for component, seen in values.items():
        seen.update(table.get(component) for table in tables)
    return {component for component, seen in values.items() if len(seen) > 1}
