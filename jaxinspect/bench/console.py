"""Rich tables of a ``BenchReport``: cold phases, steady state with its distribution, compare."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from jaxinspect.bench.report import (
    BenchReport,
    BenchResult,
    CachedStats,
    ColdRound,
    PersistentCacheReport,
    SpecFailure,
    SpecOutcome,
)
from jaxinspect.renderers.fit import Col, FitTable
from jaxinspect.renderers.units import format_bytes, format_seconds

_BARS = "▁▂▃▄▅▆▇█"


def render_bench_console(report: BenchReport) -> RenderableType:
    """The whole report: header, cold phases, steady state, comparison, notes."""
    result = report.result
    parts: list[RenderableType] = [_header(report)]
    parts += _result_parts(result)
    for other in report.compare:
        parts.append(Text(f"\n{other.spec}", style="bold"))
        parts += _result_parts(other)
    if report.compare:
        parts.append(_compare_table(report))
    parts.append(_notes(report))
    return Group(*parts)


def _result_parts(result: SpecOutcome) -> list[RenderableType]:
    if isinstance(result, SpecFailure):
        message = result.failure.message
        return [Text(f"FAILED (exit {result.exit_code}): {message}", style="bold red")]
    parts: list[RenderableType] = [_cold_table(result.cold, result.persistent_cache)]
    if result.persistent_cache is not None:
        parts.append(_cache_summary(result.persistent_cache))
    parts += [_cached_table(result), _histogram(result.cached)]
    if result.cached.noisy:
        parts.append(Text(f"NOISY RUN: {result.cached.noisy_reason}", style="bold yellow"))
    return parts


def _header(report: BenchReport) -> RenderableType:
    env = report.environment
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    # User-given names may hold brackets, which rich would take for markup.
    grid.add_row("target", escape(report.target))
    main = report.result
    if isinstance(main, SpecFailure):
        grid.add_row("spec", f"{escape(main.spec)}  (failed)")
    else:
        grid.add_row("spec", f"{escape(main.spec)}  ({format_bytes(main.input_bytes)})")
        if main.donated:
            grid.add_row("donated", ", ".join(main.donated))
    if env is not None:
        grid.add_row("device", f"{env.device}  x64={'on' if env.x64 else 'off'}")
        grid.add_row(
            "versions",
            f"jax {env.jax_version}, jaxlib {env.jaxlib_version}, Python {env.python_version}",
        )
        grid.add_row("host", f"{env.platform}, {env.cpu_count} CPUs")
    return grid


def _cold_table(cold: ColdRound, cache: PersistentCacheReport | None) -> RenderableType:
    title = f"Cold first call ({len(cold.samples)} fresh processes"
    title += ", empty persistent cache)" if cache is not None else ", no persistent cache)"
    columns = [Col("phase"), *(Col(c, justify="right", drop=1) for c in ("min", "max"))]
    columns.insert(2, Col("median", justify="right"))
    if cache is not None:
        columns += [Col("populated cache", justify="right"), Col("saved", justify="right")]
    table = FitTable(columns, title=title)
    populated = dict(cache.populated.phases) if cache is not None else {}
    saved = dict(cache.saved_s) if cache is not None else {}
    for name, stats in cold.phases:
        row = [name, *(format_seconds(v) for v in (stats.min_s, stats.median_s, stats.max_s))]
        if cache is not None:
            gain = saved.get(name)
            row += [format_seconds(populated[name].median_s), "" if gain is None else _signed(gain)]
        table.add_row(*row)
    if cache is not None:
        table.caption = "saved: only compile, the one phase a persistent cache skips."
    return table


def _signed(seconds: float) -> str:
    return ("-" if seconds < 0 else "") + format_seconds(abs(seconds))


def _cache_summary(cache: PersistentCacheReport) -> RenderableType:
    hits = sum(s.cache_hits for s in cache.populated.samples)
    requests = sum(s.cache_requests for s in cache.populated.samples)
    text = Text(
        f"persistent cache {cache.directory}: {cache.entries_written} entries "
        f"({format_bytes(cache.entry_bytes)}) written; populated round: {hits} of {requests} "
        "compile requests hit"
    )
    for line in cache.unexpected_misses:
        text.append(f"\nCACHE MISS: {line}", style="bold red")
    return text


def _cached_table(result: BenchResult) -> RenderableType:
    c = result.cached
    names = ("min", "median", "mean", "p90", "p99", "max", "stdev")
    values = (c.min_s, c.median_s, c.mean_s, c.p90_s, c.p99_s, c.max_s, c.stdev_s)
    # At 80 columns the median and the tail stay; mean and stdev go first.
    drops = {"min": 2, "median": 0, "mean": 3, "p90": 1, "p99": 0, "max": 1, "stdev": 3}
    table = FitTable(
        [Col(name, justify="right", drop=drops[name]) for name in names],
        title=f"Cached calls ({c.count} timed, {c.warmup} warm-up)",
    )
    table.add_row(*(format_seconds(v) for v in values))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(justify="right")
    grid.add_row("per call, waited on each", format_seconds(c.median_s))
    pipelined = result.pipelined
    grid.add_row(
        f"pipelined ({pipelined.calls} dispatched, one wait)", format_seconds(pipelined.per_call_s)
    )
    if c.dispatch_median_s is not None:
        grid.add_row("return from dispatch (async)", format_seconds(c.dispatch_median_s))
    grid.add_row("tiny program (x + 1, f32[8])", format_seconds(result.dispatch.tiny_call_s))
    return Group(table, grid)


def _histogram(cached: CachedStats) -> RenderableType:
    counts = cached.histogram.counts
    edges = cached.histogram.edges_s
    peak = max(counts)
    # An empty bin is the lowest bar; any sample lifts a bin at least one step above it.
    steps = len(_BARS) - 1
    bars = "".join(_BARS[0 if n == 0 else 1 + ((steps - 1) * n) // peak] for n in counts)
    return Text(
        f"distribution {format_seconds(edges[0])} {bars} {format_seconds(edges[-1])}"
        f" (p99 and above in the last bar)"
    )


def _compare_table(report: BenchReport) -> RenderableType:
    table = FitTable(
        [
            Col("spec", kind="path"),
            Col("inputs", justify="right", drop=2),
            Col("compile", justify="right"),
            Col("first call", justify="right", drop=3),
            Col("cached", justify="right"),
            Col("pipelined", justify="right", drop=1),
            Col("cached vs first spec", kind="prose", justify="right"),
        ],
        title="Compare (medians)",
        boxed=True,
    )
    main = report.result
    base = main.cached.median_s if isinstance(main, BenchResult) else None
    for result in report.outcomes:
        if isinstance(result, SpecFailure):
            # The error itself is in the spec's own section above, and on stderr.
            where = f", {result.failure.stage}" if result.failure.stage else ""
            failed = Text(f"failed (exit {result.exit_code}{where})", style="red")
            table.add_row(result.spec, *(["—"] * 5), failed)
            continue
        cold = dict(result.cold.phases)
        table.add_row(
            result.spec,
            format_bytes(result.input_bytes),
            format_seconds(cold["compile"].median_s),
            format_seconds(cold["first_call"].median_s),
            format_seconds(result.cached.median_s),
            format_seconds(result.pipelined.per_call_s),
            "n/a" if base is None else f"{result.cached.median_s / base:.2f}x",
        )
    return table


def _notes(report: BenchReport) -> RenderableType:
    text = Text()
    for note in report.notes:
        text.append(f"• {note}\n", style="dim")
    for path, reason in report.unavailable:
        text.append(f"• {path}: {reason}\n", style="dim")
    return text
