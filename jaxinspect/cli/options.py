"""Options, spec loading and the option types shared by commands (no jax import here)."""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from jaxinspect.cli.formats import AUDIENCE, ColorMode, OutputFormat, TextDiffMode
from jaxinspect.errors import UsageError
from jaxinspect.inputs.limits import MAX_DEVICES

if TYPE_CHECKING:
    from jaxinspect.inputs.spec import Spec

TargetArg = Annotated[
    str, typer.Argument(help="FILE.py:NAME or package.module:NAME (NAME may be dotted).")
]
ShapesOpt = Annotated[
    str | None, typer.Option("--shapes", "-s", help="YAML spec of the abstract arguments.")
]
ArgOpt = Annotated[
    list[str] | None,
    typer.Option("--arg", help="NAME=DTYPE[DIMS], repeatable; instead of --shapes."),
]
BackendOpt = Annotated[
    str | None, typer.Option(help="Platform to compile for (cpu, gpu, tpu); default: JAX's.")
]
DevicesOpt = Annotated[
    int | None,
    typer.Option(
        "--devices",
        min=1,
        max=MAX_DEVICES,
        help="Run on N devices (on CPU, N fake devices set up before JAX starts).",
    ),
]
TopologyOpt = Annotated[
    str | None,
    typer.Option(
        "--topology",
        help="Compile for a TPU slice or NVIDIA GPUs from this host, e.g. v5e:2x2 (needs "
        "jaxinspect[tpu]) or h100:8, a100-80gb:2x8 (needs jaxinspect[cuda]; "
        "nothing runs). `jaxinspect topologies` lists them.",
    ),
]
GpuConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu-config",
        help="Your own GPU target config (a GpuTargetConfigProto .txtpb) in place of the "
        "model's; --topology gives the count, e.g. --topology h100:8 --gpu-config my.txtpb.",
    ),
]
MeshOpt = Annotated[
    str | None,
    typer.Option("--mesh", help="Device mesh, e.g. data=4,model=2; overrides the spec's mesh:."),
]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show Python tracebacks on errors.")]
CaseOpt = Annotated[
    str | None,
    typer.Option("--case", help="Run only this case of a spec with `cases:` (default: all)."),
]
SeedOpt = Annotated[int, typer.Option(min=0, help="Seed of the generated inputs (0 or more).")]
InputsOpt = Annotated[
    str | None,
    typer.Option(
        "--inputs",
        metavar="random|factory",
        help="Values to execute on: factory = the arrays `from:` factories return (YAML "
        "leaves stay random); random = seeded random values. Default: the spec's `inputs:`, "
        "else random.",
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        help="Stop the run after this many seconds (exit 124, as GNU timeout); default: no bound.",
    ),
]
#: ``cost`` and ``report``: trip counts for loops XLA could not count (``cost/loopcost.py``).
AssumeTripsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--assume-trips",
        metavar="LOOP=N",
        help="Count N trips of a while loop XLA could not count (LOOP: its name in the "
        "loop table, or file.py:LINE), repeatable: totals and shares become an estimate, "
        "labelled assumed.",
    ),
]
MaxInputBytesOpt = Annotated[
    int, typer.Option(min=0, help="Refuse to generate inputs larger than this many bytes.")
]
TransformOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--transform",
        "-t",
        help="JAX transformation to apply, repeatable, innermost first: grad, value_and_grad, "
        'vmap, jacfwd, jacrev, hessian, jvp, vjp, checkpoint; e.g. "vmap(in_axes=(None, 0))".',
    ),
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
ColorOpt = Annotated[ColorMode, typer.Option(help="Colour the unified diff.")]
TextDiffOpt = Annotated[
    TextDiffMode,
    typer.Option(
        help="structural: match names by structure so renumbering is no change; lines: plain."
    ),
]


def format_option(*formats: OutputFormat) -> Any:
    """``--format``/``-f`` offering ``formats`` alone: annotate ``Annotated[OutputFormat, ...]``.

    Typer would offer every member of the annotated enum, and it has no public choice type to
    narrow that; this parser refuses the others with the message typer gives for a choice.
    """
    offered = [f.value for f in formats]

    def parse(text: str) -> OutputFormat:
        if text not in offered:
            raise typer.BadParameter(f"{text!r} is not one of {', '.join(map(repr, offered))}.")
        return OutputFormat(text)

    return typer.Option(
        "--format",
        "-f",
        parser=parse,
        metavar=f"<{'|'.join(offered)}>",
        help=", ".join(AUDIENCE[f] for f in formats) + ".",
    )


#: ``--format table|json``, what most commands print.
TableOrJsonOpt = Annotated[OutputFormat, format_option(OutputFormat.TABLE, OutputFormat.JSON)]


@dataclass(frozen=True, slots=True)
class PlacementOptions:
    """``--mesh``, ``--devices`` and ``--topology`` as given (``None``: the spec decides)."""

    mesh: str | None = None
    devices: int | None = None
    topology: str | None = None
    gpu_config: str | None = None

    def words(self) -> list[str]:
        """The options again, for a command line in a hint."""
        words: list[str] = []
        for flag, value in (
            ("--mesh", self.mesh),
            ("--devices", self.devices),
            ("--topology", self.topology),
            ("--gpu-config", self.gpu_config),
        ):
            if value is not None:
                words += [flag, str(value)]
        return words


def load_cli_spec(
    shapes: str | None,
    arg: list[str] | None,
    case: str | None = None,
    placement: PlacementOptions | None = None,
) -> "Spec":
    """The one spec a command runs; ``case`` picks one of a spec file's ``cases:``."""
    cases = load_cli_cases(shapes, arg, case, placement)
    if len(cases) > 1:
        names = ", ".join(name for name, _ in cases)
        raise UsageError(
            f"{shapes} has {len(cases)} cases ({names}); this command runs one: add --case NAME"
        )
    return cases[0][1]


def load_cli_cases(
    shapes: str | None,
    arg: list[str] | None,
    case: str | None = None,
    placement: PlacementOptions | None = None,
) -> "tuple[tuple[str, Spec], ...]":
    """``(case name, Spec)`` pairs: every case of the spec file, or the one ``case`` names.

    ``placement`` (the command line's mesh, devices, topology) overrides the spec's. When a
    case needs several CPU devices, they are set up here, before the target is imported.
    """
    from jaxinspect.inputs.spec import check_placement

    cases = _read_cases(shapes, arg, case)
    if placement is not None and placement != PlacementOptions():
        cases = tuple((name, apply_placement(spec, placement)) for name, spec in cases)
    for _, spec in cases:
        check_placement(spec)  # --arg leaves meet their --mesh only here
    if any(spec.mesh or spec.devices or spec.topology for _, spec in cases):
        from jaxinspect.pipeline.placement import reserve_devices

        reserve_devices([spec for _, spec in cases], None)
    return cases


def apply_placement(spec: "Spec", placement: PlacementOptions) -> "Spec":
    """``spec`` with ``--mesh``/``--devices``/``--topology`` over its own.

    Raises:
        SpecError: The result does not hold together (an axis not in the mesh, ...).
    """
    from jaxinspect.inputs.shardspec import parse_mesh_option
    from jaxinspect.inputs.spec import with_placement

    if placement.devices is not None and placement.topology is not None:
        raise UsageError("give either --devices N or --topology NAME, not both")
    mesh = None if placement.mesh is None else parse_mesh_option(placement.mesh)
    topology = placement.topology
    if placement.gpu_config is not None:
        topology = _with_gpu_config(placement.gpu_config, topology or spec.topology)
    return with_placement(spec, mesh=mesh, devices=placement.devices, topology=topology)


def _with_gpu_config(config: str, topology: str | None) -> str:
    """``CONFIG:COUNT``: the GPU target ``topology`` with ``config`` as its model.

    Raises:
        UsageError: no topology gives the count, or it is a TPU slice.
    """
    from jaxinspect.topologies.gpu import looks_like_gpu

    if topology is None:
        raise UsageError(
            "--gpu-config needs --topology MODEL:GPUS for the count, e.g. --topology h100:8"
        )
    if not looks_like_gpu(topology):
        raise UsageError(f"--gpu-config is for GPU targets; {topology} is a TPU slice")
    return f"{config}:{topology.rpartition(':')[2]}"


def _read_cases(
    shapes: str | None, arg: list[str] | None, case: str | None
) -> "tuple[tuple[str, Spec], ...]":
    from jaxinspect.inputs.cases import SINGLE_CASE, load_spec_cases
    from jaxinspect.inputs.spec import Spec, parse_arg_options

    if shapes is not None and arg:
        raise UsageError("give either --shapes SPEC or --arg options, not both")
    if shapes is not None:
        return load_spec_cases(shapes).select(case)
    if case is not None:
        raise UsageError("--case needs --shapes SPEC with `cases:`")
    if arg:
        return ((SINGLE_CASE, parse_arg_options(arg)),)
    return ((SINGLE_CASE, Spec(source="(no --shapes)", args=())),)


def rerun_inputs(
    shapes: str | None,
    arg: list[str] | None,
    case: str | None = None,
    transform: list[str] | None = None,
    backend: str | None = None,
    placement: PlacementOptions | None = None,
) -> str:
    """The options that name these inputs again, quoted for a shell (for hints)."""
    import shlex

    words: list[str] = []
    if shapes is not None:
        words += ["--shapes", shapes]
    for text in arg or []:
        words += ["--arg", text]
    if case is not None:
        words += ["--case", case]
    for text in transform or []:
        words += ["--transform", text]
    if backend is not None:
        words += ["--backend", backend]
    if placement is not None:
        words += placement.words()
    return shlex.join(words)
