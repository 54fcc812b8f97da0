"""``jaxpr``, ``stablehlo`` and ``hlo``: one stage's text of TARGET, plain and pipeable.

One module for three commands: they are one command shape (``stages`` narrowed to one IR,
no execution), built by one factory and differing only in the stage they print.
"""

import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from jaxinspect.cli.commands.stages import inspect_with_status, parse_transform_options
from jaxinspect.cli.options import TransformOpt
from jaxinspect.cli.runinputs import RunInputs, run_inputs_command
from jaxinspect.errors import UsageError
from jaxinspect.stages.sections import IR_STAGES

_TITLES = dict(zip(IR_STAGES, ("jaxpr", "StableHLO module", "optimized HLO"), strict=True))


def register(app: typer.Typer) -> None:
    """Add ``jaxpr``, ``stablehlo`` and ``hlo`` to ``app``."""
    for name, title in _TITLES.items():
        app.command(name=name)(_single_stage_command(name, title))


def _stablehlo_with_locations(target: str, spec: Any, options: Any) -> str:
    """The lowered module printed with ``loc(...)``: JAX's name scopes and source lines."""
    from jaxinspect.inputs.target import load_target
    from jaxinspect.stages.runner import run_inspection

    _, artifacts = run_inspection(load_target(target), spec, options)
    assert artifacts.lowered is not None  # the stablehlo stage runs the pipeline to lower
    return str(artifacts.lowered.as_text(debug_info=True))


def _single_stage_command(name: str, title: str) -> Callable[..., None]:
    def command(
        inputs: RunInputs,
        transform: TransformOpt = None,
        *,
        debug_info: Annotated[
            bool,
            typer.Option(
                "--debug-info",
                help="stablehlo only: print loc(...) source locations, for Model Explorer.",
            ),
        ] = False,
    ) -> None:
        from jaxinspect.stages.runner import InspectOptions

        options = InspectOptions(
            backend=inputs.backend,
            sections=(name,),
            execute=False,
            transforms=parse_transform_options(transform),
        )
        if debug_info and name != "stablehlo":
            raise UsageError("--debug-info is for `jaxinspect stablehlo`")
        spec = inputs.spec()
        if debug_info:
            text = _stablehlo_with_locations(inputs.target, spec, options)
        else:
            report = inspect_with_status(inputs.target, spec, options)
            stage = report.stage(name)
            assert stage is not None  # the pipeline ran up to this stage or raised
            text = stage.text
        sys.stdout.write(text if text.endswith("\n") else text + "\n")

    command.__doc__ = f"Print the {title} of TARGET as plain text (pipeable)."
    return run_inputs_command()(command)
