"""Plain-text pieces shared by the snapshot renderers: number formats and diff lines."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from jaxinspect.renderers.units import format_bytes, format_count

if TYPE_CHECKING:
    from jaxinspect.snapshot.diffreport import MetricChange, SnapshotDiff, TextChange

_BYTES = ("bytes_accessed", "argument_bytes", "output_bytes", "temp_bytes", "alias_bytes")
_BYTE_METRICS = (*_BYTES, "peak_bytes", "generated_code_bytes", "collective_bytes")


def format_metric(name: str, value: float | None) -> str:
    """A metric value for people; ``n/a`` when the backend did not report it."""
    if value is None:
        return "n/a"
    return format_bytes(value) if name in _BYTE_METRICS else format_count(value)


def format_delta(change: MetricChange) -> str:
    """``+1.2 k (+5.0%)``, or ``n/a`` when a side is unknown."""
    delta, percent = change.delta, change.percent
    if delta is None:
        return "n/a"
    sign = "+" if delta > 0 else "-" if delta < 0 else "±"
    shown = f"{sign}{format_metric(change.name, abs(delta))}"
    if percent is None:
        return shown
    if math.isinf(percent):
        return f"{shown} (new)"
    return f"{shown} ({percent:+.1f}%)"


def text_change_line(change: TextChange) -> str:
    """``hlo: +5 -2 lines (58 renamings not shown); added: mul.0, ...; changed: add.2``."""
    line = f"{change.stage}: +{change.added} -{change.removed} lines"
    if change.renamed:
        line += f" ({change.renamed} renamings not shown)"
    for label, names in (
        ("added", change.added_names),
        ("removed", change.removed_names),
        ("changed", change.changed_names),
    ):
        if names:
            shown = ", ".join(names[:_NAMES_SHOWN])
            more = f" +{len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else ""
            line += f"; {label}: {shown}{more}"
    return line


#: Values named per kind in a summary line (the JSON lists them all).
_NAMES_SHOWN = 6


def toolchain_line(diff: SnapshotDiff) -> str | None:
    """``Toolchain changed: jax 0.10.1 -> 0.10.2, ...`` or ``None``."""
    if not diff.toolchain:
        return None
    parts = ", ".join(f"{name} {before} -> {after}" for name, before, after in diff.toolchain)
    return f"Toolchain changed: {parts}"


def text_diff_lines(change: TextChange) -> Iterator[str]:
    """The ``diff -u`` lines of one stage, each ending in a newline."""
    yield f"--- {change.a_name}\n"
    yield f"+++ {change.b_name}\n"
    for hunk in change.hunks:
        yield f"@@ -{_range(hunk.a_start, hunk.a_len)} +{_range(hunk.b_start, hunk.b_len)} @@\n"
        for mark, line in hunk.lines:
            yield f"{mark}{line}\n"


def colour_diff_line(line: str) -> str:
    """ANSI colour for one diff line (red removals, green additions, cyan hunk headers)."""
    if line.startswith(("---", "+++")):
        return f"\x1b[1m{line[:-1]}\x1b[0m\n"
    if line.startswith("@@"):
        return f"\x1b[36m{line[:-1]}\x1b[0m\n"
    if line.startswith("-"):
        return f"\x1b[31m{line[:-1]}\x1b[0m\n"
    if line.startswith("+"):
        return f"\x1b[32m{line[:-1]}\x1b[0m\n"
    return line


def _range(start: int, length: int) -> str:
    if length == 0:
        return f"{start - 1},0"
    return str(start) if length == 1 else f"{start},{length}"


class VerdictLines(Protocol):
    """What the summary shows of a ``thresholds.Verdict`` (which imports this module)."""

    @property
    def failed(self) -> bool:
        """Whether any rule tripped."""

    @property
    def tripped(self) -> tuple[str, ...]:
        """The rules that tripped."""

    @property
    def notes(self) -> tuple[str, ...]:
        """The rules that could not be evaluated, and why."""


@dataclass(frozen=True, slots=True)
class SummaryLine:
    """One line of a diff's summary, and the rich style a terminal shows it in."""

    text: str
    style: str = ""


@dataclass(frozen=True, slots=True)
class SummaryTable:
    """A titled table of a diff's summary: the first ``left`` columns left-justified, the
    rest (numbers) right-justified."""

    title: str
    headers: tuple[str, ...]
    left: int
    rows: tuple[tuple[str, ...], ...]


def diff_summary_blocks(
    diff: SnapshotDiff, verdict: VerdictLines | None
) -> list[SummaryLine | SummaryTable]:
    """What a diff's console summary shows, in order: the toolchain note, the verdict, the
    op changes, the metric deltas and each stage's text line counts.

    The one layout for both console renderers: rich's (``snapshot.console``) and the plain
    one that a piped ``diff`` prints without importing rich (``snapshot.plainsummary``).
    """
    blocks: list[SummaryLine | SummaryTable] = []
    note = toolchain_line(diff)
    if note:
        blocks.append(SummaryLine(note, "bold magenta"))
    if diff.identical:
        blocks.append(SummaryLine("identical", "green"))
    else:
        blocks.append(SummaryLine("different", "yellow bold"))
        if verdict is not None:
            if verdict.failed:
                blocks += [SummaryLine(f"  fails {t}", "red") for t in verdict.tripped]
            else:
                blocks.append(SummaryLine("  within the --fail-on thresholds", "green"))
            blocks += [SummaryLine(f"  note: {n}") for n in verdict.notes]
    if diff.op_changes:
        ops = tuple(
            (c.stage, c.op, str(c.before), str(c.after), f"{c.after - c.before:+d}")
            for c in diff.op_changes
        )
        blocks.append(SummaryTable("Ops", ("stage", "op", "before", "after", "Δ"), 2, ops))
    if diff.changed_metrics:
        metrics = tuple(
            (
                m.name,
                format_metric(m.name, m.before),
                format_metric(m.name, m.after),
                format_delta(m),
            )
            for m in diff.changed_metrics
        )
        blocks.append(SummaryTable("Metrics", ("metric", "before", "after", "Δ"), 1, metrics))
    blocks += [SummaryLine(text_change_line(change)) for change in diff.texts]
    return blocks
