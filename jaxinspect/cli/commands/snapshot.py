"""``jaxinspect snapshot``: write TARGET's normalized HLO snapshot to a folder for CI."""

from pathlib import Path
from typing import Annotated

import typer

from jaxinspect.cli.runinputs import RunInputs, run_inputs_command


def register(app: typer.Typer) -> None:
    """Add the ``snapshot`` command to ``app``."""
    app.command(name="snapshot")(snapshot)


@run_inputs_command(without=("case",))
def snapshot(
    inputs: RunInputs,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Folder to write the snapshot into (new, empty or a snapshot)."
        ),
    ],
) -> None:
    """Trace, lower and compile TARGET once and write its normalized snapshot to --out."""
    from jaxinspect.cli.outputs import output_path
    from jaxinspect.inputs.target import load_target
    from jaxinspect.snapshot.capture import capture_snapshot
    from jaxinspect.snapshot.model import STAGE_FILES
    from jaxinspect.snapshot.store import check_destination, write_snapshot

    folder = output_path(out, "--out", stdout_ok=False, why="a snapshot is a folder of files")
    check_destination(folder)  # before the user's code runs: fail fast
    spec = inputs.spec()
    taken = capture_snapshot(load_target(inputs.target), spec, inputs.backend)
    check_destination(folder)  # and again: files may have appeared meanwhile
    write_snapshot(folder, taken)
    flops = taken.summary.metrics().get("flops")
    shown = "n/a" if flops is None else f"{flops:g}"
    files = ", ".join(f for _, f in STAGE_FILES)
    typer.echo(
        f"wrote {out}: {files}, summary.json (fusions={taken.summary.fusion_count}, flops={shown})"
    )
