"""``jaxinspect diff``: compare two stored snapshots; parsed without typer when it is plain.

``jaxinspect diff`` is what CI runs on every change, and importing typer costs about as long
as GNU ``diff`` takes on a 200,000-line file. So this module imports neither typer nor jax at
module level: the console script (``jaxinspect.cli.entry``) runs a well-formed ``diff``
through ``parse_plain_diff`` and ``run_diff`` directly; anything else (``--help``, an unknown
option, a bad value, a missing argument) goes to the typer command that ``register`` builds,
which owns every message about usage. Tests keep the option table below equal to the typer
command's parameters and both paths' output identical.
"""

import gc
import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxinspect.cli.diffargv import diff_tokens
from jaxinspect.cli.formats import ColorMode, OutputFormat, TextDiffMode

if TYPE_CHECKING:
    import typer

    from jaxinspect.cli.exits import Outcome
    from jaxinspect.snapshot.diffreport import SnapshotDiff
    from jaxinspect.snapshot.loosefile import EarlyCount
    from jaxinspect.textdiff.linediff import LineDiff
    from jaxinspect.textdiff.structural import EarlyNames

#: The ``--format`` values of ``diff`` and ``check``.
FORMATS = (OutputFormat.TABLE, OutputFormat.JSON, OutputFormat.MARKDOWN)
DEFAULT_CONTEXT = 3


@dataclass(frozen=True, slots=True)
class DiffArgs:
    """One ``diff`` invocation, however it was parsed."""

    old: Path
    new: Path
    fail_on: str | None = None
    output_format: OutputFormat = OutputFormat.TABLE
    context: int = DEFAULT_CONTEXT
    color: ColorMode = ColorMode.AUTO
    text: bool = True
    debug: bool = False
    text_diff: TextDiffMode = TextDiffMode.STRUCTURAL


def register(app: "typer.Typer") -> None:
    """Add the typer ``diff`` command to ``app`` (imports typer: only the slow path calls this)."""
    from typing import Annotated

    import typer

    from jaxinspect.cli.options import (
        ColorOpt,
        ContextOpt,
        DebugOpt,
        FailOnOpt,
        TextDiffOpt,
        format_option,
    )

    def diff(
        old: Annotated[Path, typer.Argument(help="Stored snapshot folder or stage text file.")],
        new: Annotated[Path, typer.Argument(help="Snapshot folder or file to compare with OLD.")],
        fail_on: FailOnOpt = None,
        output_format: Annotated[OutputFormat, format_option(*FORMATS)] = OutputFormat.TABLE,
        context: ContextOpt = DEFAULT_CONTEXT,
        color: ColorOpt = ColorMode.AUTO,
        text: Annotated[
            bool, typer.Option("--text/--no-text", help="Show the unified diff after the summary.")
        ] = True,
        text_diff: TextDiffOpt = TextDiffMode.STRUCTURAL,
        debug: DebugOpt = False,
    ) -> None:
        """Compare two snapshots: a semantic summary, then a unified diff. Exit 0 same, 1 different.

        Never imports jax: it reads stored files only.
        """
        run_diff(DiffArgs(old, new, fail_on, output_format, context, color, text, debug, text_diff))

    app.command(name="diff")(diff)


def parse_plain_diff(argv: list[str]) -> DiffArgs | None:
    """``argv`` (after the program name) as a ``diff`` invocation, or ``None``.

    ``None`` for anything but ``diff`` with two paths and known options with valid values,
    so that typer parses it and reports what is wrong.
    """
    tokens = diff_tokens(argv)
    if tokens is None:
        return None
    raw, flags, paths = tokens
    if len(paths) != 2:
        return None
    values: dict[str, Any] = dict(flags)
    for field, text in raw.items():
        parsed = _value(field, text)
        if parsed is None:
            return None
        values[field] = parsed
    return DiffArgs(Path(paths[0]), Path(paths[1]), **values)


def _value(field: str, text: str) -> object:
    """The parsed value of an option, or ``None`` where typer would reject it."""
    if field == "fail_on":
        return text
    if field == "context":
        return int(text) if text.isascii() and text.isdigit() else None
    choices: tuple[Any, ...] = {
        "output_format": FORMATS,
        "color": tuple(ColorMode),
        "text_diff": tuple(TextDiffMode),
    }[field]
    return next((choice for choice in choices if choice.value == text), None)


def run_diff(args: DiffArgs) -> None:
    """Compare two snapshots and print the report; ``SystemExit(1)`` if they differ."""
    from jaxinspect.snapshot.loosefile import start_count

    # A large old HLO file is read and its count started first, in a forked child, so that
    # every import below overlaps it as well as the line diff (start_count raises nothing).
    early = start_count(args.old, args.new)
    from jaxinspect.cli.exits import run_command

    try:
        run_command(lambda: _compare_without_gc(args, early), args.debug, jax_logs=False)
    finally:
        if early is not None:
            early.parts.close()  # stops the child where an error came before its value


def _compare_without_gc(args: DiffArgs, early: "EarlyCount | None") -> "Outcome":
    # The cyclic collector is paused for the comparison: it makes few cycles, but it builds
    # tens of thousands of small objects (lines parsed by the structural pass), each batch of
    # which started a collection that walked everything alive, a third of the structural
    # pass's time. Restored after, for callers in a longer-lived process (tests, the API).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _compare_sides(args, early)
    finally:
        if was_enabled:
            gc.enable()


def _compare_sides(args: DiffArgs, early: "EarlyCount | None") -> "Outcome":
    from jaxinspect.cli.exits import Outcome
    from jaxinspect.snapshot.background import in_background, will_fork
    from jaxinspect.snapshot.compare import diff_snapshots
    from jaxinspect.snapshot.store import load_sides
    from jaxinspect.snapshot.thresholds import evaluate, parse_rules
    from jaxinspect.textdiff.structural import early_names
    from jaxinspect.textdiff.terminated import terminated
    from jaxinspect.xla.hlocount import RenamedBasis

    rules = parse_rules(args.fail_on)
    structural = args.text_diff is TextDiffMode.STRUCTURAL
    started: dict[str, EarlyNames] = {}

    def diffed(diff: "LineDiff") -> "RenamedBasis | None":
        # A large renamed pair: renamed changes are undone in bulk as soon as the line diff
        # is known, with the old text's names that the child counting it reads next (or a
        # child of their own), and the op counts are derived from the few lines left.
        if not (structural and will_fork(diff.a)):
            return None
        names = early.names if early is not None and diff.a == terminated(early.text) else None
        started["hlo"] = early_names(diff, in_background, names, undo=True)
        bulk = started["hlo"].undone
        return None if bulk is None else RenamedBasis(bulk.text, bulk.rest.changes, bulk.renaming)

    try:
        # Import the renderer while a large loose HLO pair is being counted in the background.
        a, b, line_diffs = load_sides(
            args.old, args.new, lambda: renderer_module(args.output_format), early, diffed
        )
        result = diff_snapshots(
            a,
            b,
            str(args.old),
            str(args.new),
            args.context,
            line_diffs,
            structural=structural,
            early=started,
        )
    finally:
        for names in started.values():
            names.close()  # no child left behind where an error came first
    verdict = evaluate(rules, result)
    _print_diff(result, verdict, args.output_format, args.text, args.color)
    return Outcome(differences=verdict.failed)


def renderer_module(output_format: OutputFormat) -> object:
    """The module that renders a diff report in ``output_format`` (imported)."""
    from jaxinspect.renderers.stdout import plain_stdout_width

    name = {
        OutputFormat.JSON: "snapshot.jsondoc",
        OutputFormat.MARKDOWN: "snapshot.markdown",
        OutputFormat.TABLE: "snapshot.console"
        if plain_stdout_width() is None
        else "snapshot.plainsummary",
    }[output_format]
    return importlib.import_module(f"jaxinspect.{name}")


def _print_diff(
    result: "SnapshotDiff", verdict: Any, output_format: OutputFormat, text: bool, color: ColorMode
) -> None:
    if output_format is OutputFormat.JSON:
        from jaxinspect.snapshot.jsondoc import render_diff_json

        sys.stdout.write(render_diff_json(result, verdict))
        return
    if output_format is OutputFormat.MARKDOWN:
        from jaxinspect.snapshot.markdown import render_diff_markdown

        title = f"{result.a_label} → {result.b_label}"
        sys.stdout.write(render_diff_markdown(result, verdict, title))
        return
    from jaxinspect.renderers.stdout import plain_stdout_width

    # On a pipe rich would only lay the summary out: done here as rich would, without it.
    width = plain_stdout_width()
    if width is not None:
        from jaxinspect.snapshot.plainsummary import plain_diff_summary

        plain = plain_diff_summary(result, verdict, width)
        if plain is not None:
            sys.stdout.write(plain)
            if text:  # colourless unless asked for: stdout is no terminal
                _write_diffs([result], color is ColorMode.ALWAYS)
            return
    from jaxinspect.renderers.stdout import stdout_console
    from jaxinspect.snapshot.console import render_diff_summary

    console = stdout_console()
    console.print(render_diff_summary(result, verdict))
    if text:
        write_text_diffs(console, [result], color)


def write_text_diffs(console: Any, diffs: "list[SnapshotDiff]", color: ColorMode) -> None:
    """Unified diffs written straight to stdout: rich would be slow on 100k-line diffs."""
    coloured = color is ColorMode.ALWAYS or (
        color is ColorMode.AUTO and console.is_terminal and "NO_COLOR" not in os.environ
    )
    console.file.flush()
    _write_diffs(diffs, coloured)


def _write_diffs(diffs: "list[SnapshotDiff]", coloured: bool) -> None:
    from jaxinspect.snapshot.text import colour_diff_line, text_diff_lines

    # The report stream writes through (``cli.capture``): a write a line was a system call
    # a line, thousands for a large diff. Lines go out in blocks instead.
    block: list[str] = []
    size = 0
    for diff in diffs:
        for change in diff.texts:
            for line in text_diff_lines(change):
                block.append(colour_diff_line(line) if coloured else line)
                size += len(block[-1])
                if size >= _BLOCK_CHARS:
                    sys.stdout.write("".join(block))
                    block, size = [], 0
    if block:
        sys.stdout.write("".join(block))


#: About what a pipe holds: a reader sees the diff as it is written, in pieces this large.
_BLOCK_CHARS = 1 << 16
