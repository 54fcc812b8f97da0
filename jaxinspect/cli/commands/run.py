"""``jaxinspect run``: run a real program unchanged and log every JAX compilation it did."""

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from jaxinspect.cli.exits import Outcome, exits_by_outcome
from jaxinspect.cli.formats import OutputFormat
from jaxinspect.cli.options import DebugOpt, TableOrJsonOpt
from jaxinspect.errors import UsageError

if TYPE_CHECKING:
    from jaxinspect.runlog.model import CompileLog


@exits_by_outcome
def run(
    program: Annotated[
        list[str] | None,
        typer.Argument(
            help="SCRIPT.py [ARGS...], or the module's ARGS after -m.", show_default=False
        ),
    ] = None,
    module: Annotated[
        str | None,
        typer.Option("--module", "-m", help="Run this module as `python -m MODULE` would."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the log to this file (default: stderr)."),
    ] = None,
    output_format: TableOrJsonOpt = OutputFormat.TABLE,
    max_compiles: Annotated[
        int | None,
        typer.Option(
            min=0, help="Exit 1 when any function of yours compiled more than N times (CI)."
        ),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            metavar="RULE",
            help="Exit 1 when a function of yours recompiled too often: 'recompiles>N' "
            "(--max-compiles N+1, check's --fail-on grammar).",
        ),
    ] = None,
    debug: DebugOpt = False,
) -> Outcome | None:
    """Run a Python program unchanged and log every JAX compilation: where, how long, why.

    The program keeps its stdout, stderr and exit code; the log goes to stderr (or -o FILE)
    when it ends, also on an exception or Ctrl-C. With --max-compiles the exit code is 1 when
    a function compiled too often, else the program's own; --fail-on 'recompiles>N' is the
    same gate.
    """
    limit, gate = _gate(max_compiles, fail_on)
    args = list(program or [])
    if module is None and not args:
        raise UsageError("run needs a SCRIPT.py (or -m MODULE) to run")
    target = module if module is not None else args.pop(0)
    if module is None and not Path(target).is_file():
        raise UsageError(f"{target}: no such file")
    from jaxinspect.runlog.launch import run_program

    log = run_program(target, args, module=module is not None, max_compiles=limit)
    _write_log(log, output, output_format)
    if log.over_limit:
        from jaxinspect.runlog.gate import over_limit_lines

        for line in over_limit_lines(log, gate):
            print(f"jaxinspect: {line}", file=sys.stderr)
        return Outcome(differences=True)
    if log.exit_code:
        raise SystemExit(log.exit_code)  # the program's own code, as it ended
    return None


def _gate(max_compiles: int | None, fail_on: str | None) -> tuple[int | None, str]:
    """The compile limit and how the user named it; both options: the stricter one."""
    gates = [] if max_compiles is None else [(max_compiles, f"--max-compiles {max_compiles}")]
    if fail_on is not None:
        from jaxinspect.runlog.gate import compile_limit

        gates.append((compile_limit(fail_on), f"--fail-on {fail_on!r}"))
    return min(gates) if gates else (None, "")


def _write_log(log: "CompileLog", output: Path | None, output_format: OutputFormat) -> None:
    if output_format is OutputFormat.JSON:
        from jaxinspect.runlog.jsondoc import render_log_json

        text = render_log_json(log)
    else:
        from rich.console import Console

        from jaxinspect.renderers.stdout import PIPED_WIDTH
        from jaxinspect.runlog.console import render_log_console

        # 120 columns off a terminal, as the reports on stdout (rich would fold at 80).
        wide = sys.stderr.isatty() or "COLUMNS" in os.environ
        stream = sys.stderr if output is None else None
        console = Console(file=stream, soft_wrap=False, width=None if wide else PIPED_WIDTH)
        if output is not None:
            with console.capture() as captured:
                console.print(render_log_console(log))
            text = captured.get()
        else:
            console.print(render_log_console(log))
            return
    if output is None:
        sys.stderr.write(text)
    else:
        from jaxinspect.atomicfile import write_atomically

        write_atomically(output, text, what="the compile log")


def register(app: typer.Typer) -> None:
    """Add ``run`` to the CLI."""
    app.command(
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True}
    )(run)
