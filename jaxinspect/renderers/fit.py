"""Tables laid out for the width they are printed at, without ever splitting a token.

rich shrinks a table that is too wide by folding every column, which cuts op names, shapes
and numbers mid-token (``ynn_fus`` / ``ion.19``). A :class:`FitTable` instead decides per
column, at render time, from the console width:

* ``token`` cells (names, shapes, numbers) are never cut or wrapped;
* ``path`` cells (argument paths, keys) may be cut in the middle with ``…``, where the start
  and end of a path are what tells leaves apart (``params['Lay…_0']['scale']``);
* ``prose`` cells (reasons, notes) wrap at spaces only;
* a droppable column with nothing in any row is left out;
* when the table is too wide for every cell on one line, a droppable column holding one value
  in every row goes first, and a note under the table gives that value;
* when even the narrowest layout does not fit, whole columns go, least important first (each
  column's ``drop`` rank), and a note under the table names them; a ``prose`` column with
  ``unwrap_over`` also has ranked columns go when that keeps its cells on one line.

The title and caption are printed as lines of their own, so they wrap at the console width
rather than at the (possibly narrow) table's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from rich import box as boxes
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

CellKind = Literal["token", "path", "prose"]
Cell = str | Text

#: The narrowest a ``path`` column is cut to (start and end still readable).
PATH_MIN_WIDTH = 14


@dataclass(frozen=True)
class Col:
    """One column of a :class:`FitTable`.

    Attributes:
        header: The column's heading (wraps at spaces, like prose).
        kind: ``token`` (never cut), ``path`` (cut in the middle) or ``prose`` (wraps).
        justify: ``left`` or ``right``.
        drop: 0 for a column that always stays; otherwise the higher, the sooner the column
            is left out when the table does not fit.
        style: A rich style for the column's cells.
        unwrap_over: For a ``prose`` column, 0 or a rank: columns ranked ``drop`` this or
            higher go when that keeps this column's cells on one line (a wrapped source
            line doubles every row's height).
    """

    header: str
    kind: CellKind = "token"
    justify: Literal["left", "right"] = "left"
    drop: int = 0
    style: str | None = None
    unwrap_over: int = 0


class FitTable:
    """A table of plain or styled text cells that fits the width it is rendered at."""

    def __init__(
        self,
        columns: Sequence[Col],
        *,
        title: str | Text | None = None,
        caption: str | Text | None = None,
        boxed: bool = False,
        show_header: bool = True,
    ) -> None:
        self.columns = tuple(columns)
        self.title = title
        self.caption = caption
        self.boxed = boxed
        self.show_header = show_header
        self.rows: list[tuple[Cell, ...]] = []

    def add_row(self, *cells: Cell | None) -> None:
        """Append a row; ``None`` is an empty cell."""
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(tuple("" if c is None else c for c in cells))

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> Iterator[RenderableType]:
        yield self.layout(console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)

    def layout(self, console: Console, options: ConsoleOptions) -> RenderableType:
        """The title, the table for ``options.max_width`` and the caption, as one group."""
        width = options.max_width
        # A droppable column with nothing in it (no custom-call targets, no notes) is left out.
        keep = [i for i in range(len(self.columns)) if not self._empty(i)]
        overhead = self._overhead(console, options, len(keep))
        same: list[int] = []
        if sum(self._ideal_width(i) for i in keep) + overhead > width:
            # A droppable column with one value in every row tells no row from another: it
            # is the first to go, and the note under the table gives its value.
            same = [i for i in keep if self.columns[i].drop and self._one_value(i) is not None]
            keep = [i for i in keep if i not in same]
            overhead = self._overhead(console, options, len(keep))
        while sum(self._min_width(i) for i in keep) + overhead > width:
            droppable = [i for i in keep if self.columns[i].drop]
            if not droppable:
                break
            # The highest rank goes first; among equals, the rightmost.
            keep.remove(max(droppable, key=lambda i: (self.columns[i].drop, i)))
            overhead = self._overhead(console, options, len(keep))
        keep = self._unwrap(console, options, keep)
        overhead = self._overhead(console, options, len(keep))
        parts: list[RenderableType] = []
        if self.title:
            parts.append(_styled(self.title, "bold"))
        if sum(self._min_width(i) for i in keep) + overhead > width:
            # Too narrow for any table of whole tokens: one block per row instead, every
            # column on its own line.
            parts.append(self._records())
            keep, same = list(range(len(self.columns))), []
        else:
            parts.append(self._table(keep, self._widths(keep, width - overhead)))
        dropped = [
            self.columns[i].header
            for i in range(len(self.columns))
            if i not in keep and i not in same and not self._empty(i)
        ]
        notes: list[Text] = []
        if self.caption:
            notes.append(_styled(self.caption, ""))
        if same:
            values = ", ".join(f"{self.columns[i].header} {self._one_value(i)}" for i in same)
            notes.append(Text(f"the same in every row shown: {values}", style="dim"))
        if dropped:
            notes.append(
                Text(
                    f"not shown at {width} columns: {', '.join(dropped)} "
                    "(a wider terminal or --format json shows them)",
                    style="dim",
                )
            )
        parts += notes
        return Group(*parts)

    def natural_width(self, console: Console, options: ConsoleOptions) -> int:
        """The width the table takes when nothing has to wrap or go (at most the console's)."""
        every = range(len(self.columns))
        width = sum(self._ideal_width(i) for i in every)
        return min(width + self._overhead(console, options, len(self.columns)), options.max_width)

    def _unwrap(self, console: Console, options: ConsoleOptions, keep: list[int]) -> list[int]:
        """``keep`` less the columns whose going keeps every ``unwrap_over`` column on one line.

        Columns go by rank as in :meth:`layout`; none goes unless their going is enough.
        """
        trial = list(keep)
        while True:
            room = options.max_width - self._overhead(console, options, len(trial))
            widths = self._widths(trial, room)
            wrapping = [
                self.columns[i].unwrap_over
                for i in trial
                if self.columns[i].unwrap_over and widths[i] < self._ideal_width(i)
            ]
            if not wrapping:
                return trial
            rank = min(wrapping)
            droppable = [i for i in trial if self.columns[i].drop >= rank]
            if not droppable:
                return keep
            trial.remove(max(droppable, key=lambda i: (self.columns[i].drop, i)))

    def _empty(self, i: int) -> bool:
        """Whether column ``i`` may go and has rows, all of them blank in it."""
        rows = self.rows
        return bool(self.columns[i].drop and rows and not any(_plain(r[i]).strip() for r in rows))

    def _one_value(self, i: int) -> str | None:
        """The value of column ``i`` when two or more rows all have that one non-empty value."""
        values = {_plain(row[i]) for row in self.rows}
        if len(self.rows) < 2 or len(values) != 1 or not next(iter(values)).strip():
            return None
        return next(iter(values))

    def _records(self) -> RenderableType:
        """Each row as its first cell, then ``header  value`` lines for the other cells."""
        blocks: list[RenderableType] = []
        for row in self.rows:
            grid = Table.grid(padding=(0, 1))
            grid.add_column(style="dim", no_wrap=True)
            grid.add_column(overflow="fold")
            for col, cell in zip(self.columns[1:], row[1:], strict=True):
                if _plain(cell):
                    grid.add_row(" " + col.header, Text(cell) if isinstance(cell, str) else cell)
            first = row[0]
            blocks += [Text(first, style="bold") if isinstance(first, str) else first, grid]
        return Group(*blocks)

    def _table(self, keep: list[int], widths: dict[int, int]) -> Table:
        columns = [
            Column(
                self.columns[i].header,
                justify=self.columns[i].justify,
                width=widths[i],
                no_wrap=False,
                overflow="fold",
                style=self.columns[i].style or "",
            )
            for i in keep
        ]
        table = Table(
            *columns,
            box=boxes.SQUARE if self.boxed else boxes.SIMPLE_HEAD,
            show_edge=self.boxed,
            show_header=self.show_header,
            header_style="bold",
        )
        heads = {
            i: distinct_head([_plain(row[i]) for row in self.rows], widths[i])
            for i in keep
            if self.columns[i].kind == "path"
        }
        for row in self.rows:
            cells: list[Cell] = []
            for i in keep:
                cell = row[i]
                if isinstance(cell, str):
                    if i in heads:
                        cell = cut_middle(cell, widths[i], heads[i])
                    cell = Text(cell)  # plain text: brackets in names are not markup
                cells.append(cell)
            table.add_row(*cells)
        return table

    def _overhead(self, console: Console, options: ConsoleOptions, ncols: int) -> int:
        """Borders and padding of a table of ``ncols`` columns, measured by rich itself."""
        if ncols == 0:
            return 0
        probe = Table(
            *[Column("", width=1, no_wrap=True) for _ in range(ncols)],
            box=boxes.SQUARE if self.boxed else boxes.SIMPLE_HEAD,
            show_edge=self.boxed,
            show_header=False,
        )
        probe.add_row(*["x"] * ncols)
        wide = options.update(width=10_000, max_width=10_000)
        return Measurement.get(console, wide, probe).maximum - ncols

    def _min_width(self, i: int) -> int:
        col = self.columns[i]
        header = _longest_word(col.header) if self.show_header else 0
        cells = [_plain(row[i]) for row in self.rows]
        if col.kind == "prose":
            widest = max((_longest_word(c) for c in cells), default=0)
        elif col.kind == "path":
            widest = _path_min_width(cells)
        else:
            widest = max((_longest_line(c) for c in cells), default=0)
        return max(header, widest, 1)

    def _ideal_width(self, i: int) -> int:
        header = cell_len(self.columns[i].header) if self.show_header else 0
        cells = (_longest_line(_plain(row[i])) for row in self.rows)
        return max(header, max(cells, default=0), 1)

    def _widths(self, keep: list[int], room: int) -> dict[int, int]:
        """Each kept column's width: its minimum, then spare room shared out a cell at a time."""
        widths = {i: self._min_width(i) for i in keep}
        ideal = {i: max(self._ideal_width(i), widths[i]) for i in keep}
        spare = room - sum(widths.values())
        growing = [i for i in keep if widths[i] < ideal[i]]
        while spare > 0 and growing:
            for i in list(growing):
                if spare == 0:
                    break
                widths[i] += 1
                spare -= 1
                if widths[i] == ideal[i]:
                    growing.remove(i)
        return widths


def cut_middle(text: str, width: int, head: int | None = None) -> str:
    """``text`` in at most ``width`` cells, ``…`` for what is cut after its first ``head``
    characters (by default, half of what is kept)."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"
    keep = width - 1
    head = keep // 2 if head is None else min(head, keep)
    return text[:head] + "…" + text[len(text) - (keep - head) :]


def distinct_head(texts: list[str], width: int) -> int | None:
    """The head length, nearest the middle, at which cutting keeps ``texts`` apart.

    Sibling leaves share long prefixes and suffixes (``params['LayerNorm_0']['scale']``,
    ``params['LayerNorm_1']['scale']``); a cut in the exact middle can make them identical.
    ``None`` when every head length would (the middle is used then).
    """
    keep = width - 1
    if keep < 1 or all(cell_len(t) <= width for t in texts):
        return None
    unique = set(texts)
    middle = keep // 2
    for offset in range(keep + 1):
        for head in {middle - offset, middle + offset}:
            if 0 <= head <= keep and len({cut_middle(t, width, head) for t in unique}) == len(
                unique
            ):
                return head
    return None


def _path_min_width(cells: list[str]) -> int:
    """The narrowest a path column may be: ``PATH_MIN_WIDTH``, or wider where that would cut
    two different paths to the same text (then less important columns are dropped first)."""
    longest = max((cell_len(c) for c in cells), default=0)
    width = min(longest, PATH_MIN_WIDTH)
    if len(set(cells)) <= 1:
        return width
    while width < longest:
        if distinct_head(cells, width) is not None:
            return width
        width += 1
    return longest


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def _longest_line(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _styled(text: str | Text, style: str) -> Text:
    return text if isinstance(text, Text) else Text(text, style=style)
