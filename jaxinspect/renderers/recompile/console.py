"""The recompilation sweep as a rich table, and as JSON (``schemas/recompile.schema.json``)."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from jaxinspect.recompile.cachekey import CacheKey
from jaxinspect.recompile.sweep import CaseOutcome, FailedCase, SweepReport
from jaxinspect.renderers.units import format_seconds
from jaxinspect.reports.failures import failure_to_dict


def sweep_to_dict(report: SweepReport) -> dict[str, Any]:
    """The one JSON shape of a sweep; paths are stable across versions of schema 1."""
    return {
        "schema_version": report.schema_version,
        "target": report.target,
        "composition": report.composition,
        "backend": report.backend,
        "jax_version": report.jax_version,
        "jaxlib_version": report.jaxlib_version,
        "x64": report.x64,
        "total_compiles": report.total_compiles,
        "max_compiles": report.max_compiles,
        "exceeded": report.exceeded,
        "cases": [_case_to_dict(c) for c in report.cases],
    }


def _case_to_dict(case: CaseOutcome | FailedCase) -> dict[str, Any]:
    if isinstance(case, FailedCase):
        return {"name": case.name, "source": case.source, "error": failure_to_dict(case.error)}
    return {
        "name": case.name,
        "source": case.source,
        "compiled": case.compiled,
        "events": {"traces": case.traces, "lowerings": case.lowerings, "compiles": case.compiles},
        "compile_s": case.compile_s,
        "wall_s": case.wall_s,
        "shares_executable_with": case.shares_with,
        "nearest": case.nearest,
        "changes": [
            {
                "path": c.path,
                "component": c.component,
                "before": c.before,
                "after": c.after,
                "text": str(c),
            }
            for c in case.changes
        ],
        "key": _key_to_dict(case.key),
        "error": None,
    }


def _key_to_dict(key: CacheKey) -> dict[str, Any]:
    return {
        "args": [
            {
                "path": leaf.path,
                "shape": list(leaf.shape),
                "dtype": leaf.dtype,
                "weak_type": leaf.weak_type,
                "sharding": leaf.sharding,
            }
            for leaf in key.leaves
        ],
        "static": dict(key.static),
        "structure": key.structure,
    }


def render_sweep_json(report: SweepReport) -> str:
    """Indented JSON with sorted keys."""
    return json.dumps(sweep_to_dict(report), indent=2, sort_keys=True) + "\n"


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
