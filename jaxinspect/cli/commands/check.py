"""``jaxinspect check``: snapshot every manifest target and compare with the stored ones (CI)."""

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from jaxinspect.cli.commands.diff import DEFAULT_CONTEXT, FORMATS, write_text_diffs
from jaxinspect.cli.exits import Outcome, exits_by_outcome
from jaxinspect.cli.formats import ColorMode, OutputFormat, TextDiffMode
from jaxinspect.cli.options import (
    ColorOpt,
    ContextOpt,
    DebugOpt,
    FailOnOpt,
    TextDiffOpt,
    format_option,
)
from jaxinspect.errors import ExitCode


def register(app: typer.Typer) -> None:
    """Add the ``check`` command to ``app``."""
    app.command(name="check")(check)


@exits_by_outcome
def check(
    update: Annotated[
        bool, typer.Option("--update", help="Write new and changed snapshots, remove stale ones.")
    ] = False,
    manifest: Annotated[
        Path | None,
        typer.Option(help="jaxinspect.yaml or pyproject.toml (default: nearest one upward)."),
    ] = None,
    fail_on: FailOnOpt = None,
    output_format: Annotated[OutputFormat, format_option(*FORMATS)] = OutputFormat.TABLE,
    context: ContextOpt = DEFAULT_CONTEXT,
    text: Annotated[
        bool, typer.Option("--text/--no-text", help="Show changed targets' unified diffs.")
    ] = False,
    color: ColorOpt = ColorMode.AUTO,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            min=0,
            help="Targets compiled at once, in one process (0: one per CPU core).",
        ),
    ] = 1,
    text_diff: TextDiffOpt = TextDiffMode.STRUCTURAL,
    shard: Annotated[
        str | None,
        typer.Option(
            help="Check only shard I of N (e.g. 2/4), a fixed share of the targets for CI jobs."
        ),
    ] = None,
    debug: DebugOpt = False,
) -> Outcome:
    """Snapshot every manifest target and compare with the stored ones. Exit 1 on a change.

    A target whose code fails is an `error` row; the others are still checked, then exit 3.
    """
    from jaxinspect.snapshot.check import run_check
    from jaxinspect.snapshot.manifest import find_manifest, load_manifest
    from jaxinspect.snapshot.shard import parse_shard
    from jaxinspect.snapshot.thresholds import parse_rules

    share = None if shard is None else parse_shard(shard)
    workers = jobs or os.cpu_count() or 1
    loaded = load_manifest(manifest if manifest is not None else find_manifest(Path.cwd()))
    rules = parse_rules(fail_on if fail_on is not None else loaded.fail_on)
    where = "" if share is None else f" (shard {share})"
    with _progress(f"checking {len(loaded.targets)} target(s){where} …"):
        report = run_check(
            loaded,
            rules,
            update=update,
            context=context,
            jobs=workers,
            shard=share,
            structural=text_diff is TextDiffMode.STRUCTURAL,
        )
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if output_format is OutputFormat.JSON:
        from jaxinspect.snapshot.jsondoc import render_check_json

        sys.stdout.write(render_check_json(report))
    elif output_format is OutputFormat.MARKDOWN:
        from jaxinspect.snapshot.markdown import render_check_markdown

        sys.stdout.write(render_check_markdown(report))
    else:
        from jaxinspect.renderers.stdout import stdout_console
        from jaxinspect.snapshot.console import render_check

        console = stdout_console()
        console.print(render_check(report))
        if text:
            diffs = [r.diff for r in report.results if r.diff is not None]
            write_text_diffs(console, diffs, color)
    for failed in report.errors:  # every target was reported; the user's code failed
        print(f"Error: {failed.error}", file=sys.stderr)
    failures = tuple(ExitCode.TARGET_FAILED for _ in report.errors)
    return Outcome(differences=report.failed, failures=failures)


def _progress(message: str) -> Any:
    from rich.console import Console

    return Console(stderr=True).status(message)
