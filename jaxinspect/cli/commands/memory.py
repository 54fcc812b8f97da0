"""``jaxinspect memory``: what is live at the peak, from XLA's buffer assignment."""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from jaxinspect.cli.formats import OutputFormat
from jaxinspect.cli.options import TableOrJsonOpt
from jaxinspect.cli.runinputs import RunInputs, run_inputs_command

if TYPE_CHECKING:
    from jaxinspect.inputs.spec import Spec
    from jaxinspect.memory.report import MemoryReport
    from jaxinspect.xla.profiles import DeviceProfile


def register(app: typer.Typer) -> None:
    """Add the ``memory`` command to ``app``."""
    app.command(name="memory")(memory)


@run_inputs_command()
def memory(
    inputs: RunInputs,
    output_format: TableOrJsonOpt = OutputFormat.TABLE,
    top: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Rows of the buffer and step tables (0 = all; default 10). JSON has all.",
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(help="Fit the peak in a built-in device profile's memory (h100...)."),
    ] = None,
    user_code: Annotated[
        list[str] | None,
        typer.Option(
            "--user-code",
            help="File, folder or package whose frames are your code, repeatable; buffers "
            "name its innermost line. Default: the target's folder.",
        ),
    ] = None,
) -> None:
    """The buffers live at TARGET's memory peak and live bytes over XLA's schedule."""
    profile = None
    if device is not None:
        from jaxinspect.xla.profiles import find_profile

        profile = find_profile(device)
    from jaxinspect.pipeline.timing.quiet import paused_gc

    report = _analyse(inputs.target, inputs.spec(), inputs.backend, profile, user_code)
    with paused_gc():  # thousands of buffers and steps, no cycles (see _analyse)
        if output_format is OutputFormat.JSON:
            from jaxinspect.memory.jsondoc import render_memory_json

            sys.stdout.write(render_memory_json(report))
        else:
            from jaxinspect.memory.console import TOP_ROWS, render_memory
            from jaxinspect.renderers.stdout import stdout_console

            rows = TOP_ROWS if top is None else (top or None)
            stdout_console().print(render_memory(report, top=rows))


def _analyse(
    target: str,
    spec: "Spec",
    backend: str | None,
    profile: "DeviceProfile | None",
    user_code: list[str] | None,
) -> "MemoryReport":
    from jaxinspect.cli.spinner import spinner
    from jaxinspect.inputs.target import load_target
    from jaxinspect.memory.runner import build_memory_report
    from jaxinspect.pipeline.timing.quiet import frozen_heap, paused_gc
    from jaxinspect.stages.dumprun import run_dumped
    from jaxinspect.stages.runner import InspectOptions
    from jaxinspect.xla.ownership import frames_recorded, resolve_user_code

    loaded = load_target(target)
    user = resolve_user_code(user_code or [], loaded.source_file)
    with spinner(f"analysing {target} …"), frames_recorded(user):
        # One trace/lower/compile, the compile writing XLA's buffer assignment to the dump.
        options = InspectOptions(
            backend=backend, sections=("memory",), execute=False, live_peak=True, stage_texts=False
        )
        run = run_dumped(loaded, spec, options)
    # Collections would walk the analysis' objects, not all of jax's again (the frozen heap),
    # and none runs during it: its per-buffer and per-step objects are freed by reference
    # counting, as cost's per-op analysis is.
    with frozen_heap(), paused_gc():
        return build_memory_report(run.source, run.compiled, run.dumped, profile=profile, user=user)
