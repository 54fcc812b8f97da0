"""``jaxinspect topologies``: the TPU slices and GPU models --topology compiles for here."""

import sys

import typer

from jaxinspect.cli.exits import exits_by_outcome
from jaxinspect.cli.formats import OutputFormat
from jaxinspect.cli.options import DebugOpt, TableOrJsonOpt


def register(app: typer.Typer) -> None:
    """Add the ``topologies`` command to ``app``."""
    app.command(name="topologies")(topologies)


@exits_by_outcome
def topologies(
    output_format: TableOrJsonOpt = OutputFormat.TABLE,
    debug: DebugOpt = False,
) -> None:
    """List the TPU slices (jaxinspect[tpu]) and NVIDIA GPUs (jaxinspect[cuda]) to compile for."""
    from jaxinspect.topologies.tpu import list_slices

    report = list_slices()
    if output_format is OutputFormat.JSON:
        from jaxinspect.topologies.jsondoc import render_topologies_json

        sys.stdout.write(render_topologies_json(report))
    else:
        from jaxinspect.renderers.stdout import stdout_console
        from jaxinspect.topologies.console import render_topologies

        stdout_console().print(render_topologies(report))
