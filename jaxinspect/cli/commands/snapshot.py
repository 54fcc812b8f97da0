"""``jaxinspect snapshot``: write TARGET's normalized HLO snapshot to a folder for CI."""

from pathlib import Path
from typing import Annotated

import typer

from jaxinspect.cli.options import (
    ArgOpt,
    BackendOpt,
    DebugOpt,
    DevicesOpt,
    GpuConfigOpt,
    MeshOpt,
    PlacementOptions,
    ShapesOpt,
    TargetArg,
    TopologyOpt,
    errors_to_exit_codes,
    load_cli_spec,
)


def register(app: typer.Typer) -> None:
    """Add the ``snapshot`` command to ``app``."""
    app.command(name="snapshot")(snapshot)


def snapshot(
    target: TargetArg,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Folder to write the snapshot into (new, empty or a snapshot)."
        ),
    ],
    shapes: ShapesOpt = None,
    arg: ArgOpt = None,
    backend: BackendOpt = None,
    mesh: MeshOpt = None,
    devices: DevicesOpt = None,
    topology: TopologyOpt = None,
    gpu_config: GpuConfigOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Trace, lower and compile TARGET once and write its normalized snapshot to --out."""
    with errors_to_exit_codes(debug):
        from jaxinspect.cli.outputs import output_path
        from jaxinspect.inputs.target import load_target
        from jaxinspect.snapshot.capture import capture_snapshot
        from jaxinspect.snapshot.model import STAGE_FILES
        from jaxinspect.snapshot.store import check_destination, write_snapshot

        folder = output_path(out, "--out", stdout_ok=False, why="a snapshot is a folder of files")
        check_destination(folder)  # before the user's code runs: fail fast
        spec = load_cli_spec(
            shapes, arg, placement=PlacementOptions(mesh, devices, topology, gpu_config)
        )
        taken = capture_snapshot(load_target(target), spec, backend)
        check_destination(folder)  # and again: files may have appeared meanwhile
        write_snapshot(folder, taken)
        flops = taken.summary.metrics().get("flops")
        shown = "n/a" if flops is None else f"{flops:g}"
        files = ", ".join(f for _, f in STAGE_FILES)
        typer.echo(
            f"wrote {out}: {files}, summary.json "
            f"(fusions={taken.summary.fusion_count}, flops={shown})"
        )
