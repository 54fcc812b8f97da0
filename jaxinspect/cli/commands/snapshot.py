"""``snapshot``, ``diff`` and ``check``: HLO snapshots for CI (``diff`` never imports jax)."""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from jaxinspect.cli.commands.diffrun import (
    DEFAULT_CONTEXT,
    ColorMode,
    DiffArgs,
    ReportFormat,
    run_diff,
    write_text_diffs,
)
from jaxinspect.cli.options import (
    ArgOpt,
    BackendOpt,
    DebugOpt,
    ShapesOpt,
    TargetArg,
    errors_to_exit_codes,
    load_cli_spec,
)
from jaxinspect.errors import ExitCode

FormatOpt = Annotated[
    ReportFormat,
    typer.Option("--format", "-f", help="table for people, json for machines, markdown for CI."),
]
FailOnOpt = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        help='Rules that fail on a difference, e.g. "flops>+5%,temp_bytes>+10%,'
        'new-op:all-gather" (default: any difference fails).',
    ),
]
ContextOpt = Annotated[int, typer.Option(min=0, help="Lines of context around each change.")]


def register(app: typer.Typer) -> None:
    """Add the snapshot commands to ``app``."""
    app.command(name="snapshot")(snapshot)
    app.command(name="diff")(diff)
    app.command(name="check")(check)


def snapshot(
    target: TargetArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the snapshot into.")],
    shapes: ShapesOpt = None,
    arg: ArgOpt = None,
    backend: BackendOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Trace, lower and compile TARGET once and write its normalized snapshot to --out."""
    with errors_to_exit_codes(debug):
        from jaxinspect.inputs.target import load_target
        from jaxinspect.snapshot.capture import capture_snapshot
        from jaxinspect.snapshot.store import write_snapshot

        spec = load_cli_spec(shapes, arg)
        taken = capture_snapshot(load_target(target), spec, backend)
        write_snapshot(out, taken)
        flops = taken.summary.metrics().get("flops")
        shown = "n/a" if flops is None else f"{flops:g}"
        files = ", ".join(f for _, f in _stage_files())
        typer.echo(
            f"wrote {out}: {files}, summary.json "
            f"(fusions={taken.summary.fusion_count}, flops={shown})"
        )


def diff(
    old: Annotated[Path, typer.Argument(help="Stored snapshot folder or stage text file.")],
    new: Annotated[Path, typer.Argument(help="Snapshot folder or file to compare with OLD.")],
    fail_on: FailOnOpt = None,
    output_format: FormatOpt = ReportFormat.TABLE,
    context: ContextOpt = DEFAULT_CONTEXT,
    color: Annotated[ColorMode, typer.Option(help="Colour the unified diff.")] = ColorMode.AUTO,
    text: Annotated[
        bool, typer.Option("--text/--no-text", help="Show the unified diff after the summary.")
    ] = True,
    debug: DebugOpt = False,
) -> None:
    """Compare two snapshots: a semantic summary, then a unified diff. Exit 0 same, 1 different.

    Never imports jax: it reads stored files only.
    """
    run_diff(DiffArgs(old, new, fail_on, output_format, context, color, text, debug))


def check(
    update: Annotated[
        bool, typer.Option("--update", help="Write new and changed snapshots, remove stale ones.")
    ] = False,
    manifest: Annotated[
        Path | None,
        typer.Option(help="jaxinspect.yaml or pyproject.toml (default: nearest one upward)."),
    ] = None,
    fail_on: FailOnOpt = None,
    output_format: FormatOpt = ReportFormat.TABLE,
    context: ContextOpt = DEFAULT_CONTEXT,
    text: Annotated[
        bool, typer.Option("--text/--no-text", help="Show changed targets' unified diffs.")
    ] = False,
    color: Annotated[ColorMode, typer.Option(help="Colour the unified diff.")] = ColorMode.AUTO,
    debug: DebugOpt = False,
) -> None:
    """Snapshot every manifest target and compare with the stored ones. Exit 1 on a change.

    A target whose code fails is an `error` row; the others are still checked, then exit 3.
    """
    with errors_to_exit_codes(debug):
        from jaxinspect.snapshot.check import run_check
        from jaxinspect.snapshot.manifest import find_manifest, load_manifest
        from jaxinspect.snapshot.thresholds import parse_rules

        loaded = load_manifest(manifest if manifest is not None else find_manifest(Path.cwd()))
        rules = parse_rules(fail_on if fail_on is not None else loaded.fail_on)
        with _progress(f"checking {len(loaded.targets)} target(s) …"):
            report = run_check(loaded, rules, update=update, context=context)
        for note in report.notes:
            print(f"note: {note}", file=sys.stderr)
        if output_format is ReportFormat.JSON:
            from jaxinspect.renderers.snapshot.jsondoc import check_to_dict, render_json

            sys.stdout.write(render_json(check_to_dict(report)))
        elif output_format is ReportFormat.MARKDOWN:
            from jaxinspect.renderers.snapshot.markdown import render_check_markdown

            sys.stdout.write(render_check_markdown(report))
        else:
            from jaxinspect.renderers.snapshot.console import render_check
            from jaxinspect.renderers.stdout import stdout_console

            console = stdout_console()
            console.print(render_check(report))
            if text:
                diffs = [r.diff for r in report.results if r.diff is not None]
                write_text_diffs(console, diffs, color)
        for failed in report.errors:  # every target was reported; the user's code failed
            print(f"Error: {failed.error}", file=sys.stderr)
        if report.errors:
            raise SystemExit(int(ExitCode.TARGET_FAILED))
        if report.failed:
            raise SystemExit(int(ExitCode.DIFFERENCES))


def _stage_files() -> tuple[tuple[str, str], ...]:
    from jaxinspect.snapshot.model import STAGE_FILES

    return STAGE_FILES


def _progress(message: str) -> Any:
    from rich.console import Console

    return Console(stderr=True).status(message)
