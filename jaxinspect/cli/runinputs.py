"""The run inputs every TARGET-taking command shares, declared once, and the decorator that
offers them on a command (no jax import here)."""

import inspect
from collections.abc import Callable, Collection
from dataclasses import MISSING, Field, dataclass, fields
from typing import TYPE_CHECKING, Any

from jaxinspect.cli.exits import Outcome, run_command
from jaxinspect.cli.options import (
    ArgOpt,
    BackendOpt,
    CaseOpt,
    DebugOpt,
    DevicesOpt,
    GpuConfigOpt,
    MeshOpt,
    PlacementOptions,
    ShapesOpt,
    TargetArg,
    TopologyOpt,
    load_cli_cases,
    load_cli_spec,
    rerun_inputs,
)

if TYPE_CHECKING:
    from jaxinspect.inputs.spec import Spec

#: A command's own options come right after this shared one in ``--help``.
OWN_OPTIONS_AFTER = "backend"


@dataclass(frozen=True, slots=True)
class RunInputs:
    """What to run and where: TARGET and the options every command that runs it shares.

    Each field's annotation is its typer parameter. ``run_inputs_command`` offers the fields,
    in this order, on every command it decorates (the command's own options after
    ``OWN_OPTIONS_AFTER``), so a new shared option is one field here, with a default.
    """

    target: TargetArg
    shapes: ShapesOpt = None
    arg: ArgOpt = None
    backend: BackendOpt = None
    case: CaseOpt = None
    mesh: MeshOpt = None
    devices: DevicesOpt = None
    topology: TopologyOpt = None
    gpu_config: GpuConfigOpt = None
    debug: DebugOpt = False

    @property
    def placement(self) -> PlacementOptions:
        """``--mesh``, ``--devices``, ``--topology`` and ``--gpu-config`` as given."""
        return PlacementOptions(self.mesh, self.devices, self.topology, self.gpu_config)

    def spec(self) -> "Spec":
        """The one spec the command runs (see ``cli.options.load_cli_spec``)."""
        return load_cli_spec(self.shapes, self.arg, self.case, self.placement)

    def cases(self) -> "tuple[tuple[str, Spec], ...]":
        """Every case the command runs (see ``cli.options.load_cli_cases``)."""
        return load_cli_cases(self.shapes, self.arg, self.case, self.placement)

    def rerun(self, transform: list[str] | None = None) -> str:
        """The options that name these inputs again, quoted for a shell (for hints)."""
        return rerun_inputs(
            self.shapes, self.arg, self.case, transform, self.backend, self.placement
        )


Command = Callable[..., Outcome | None]


def run_inputs_command(
    *, without: Collection[str] = ()
) -> Callable[[Command], Callable[..., None]]:
    """Offer ``RunInputs`` on a command, and run it under ``cli.exits.run_command``.

    The decorated function takes ``inputs: RunInputs`` first, then its own options, and
    returns an ``Outcome`` or nothing. typer sees TARGET, the command's required options,
    the shared options up to ``OWN_OPTIONS_AFTER``, the command's other options, the other
    shared ones, then the command's keyword-only options (after ``*``) and ``--debug``.

    Args:
        without: Shared options the command does not offer; their fields keep the default.
    """
    unknown = set(without) - {f.name for f in fields(RunInputs)}
    if unknown or "debug" in without:
        raise ValueError(f"cannot leave out {sorted(unknown | {'debug'} & set(without))}")
    shared = [f for f in fields(RunInputs) if f.name not in without]
    cut = 1 + next(i for i, f in enumerate(shared) if f.name == OWN_OPTIONS_AFTER)

    def decorate(command: Command) -> Callable[..., None]:
        own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]
        required = [p for p in own if p.default is inspect.Parameter.empty]
        optional = [p for p in own if p.default is not inspect.Parameter.empty]
        first, *head = (_parameter(f) for f in shared[:cut])
        *tail, debug = (_parameter(f) for f in shared[cut:])
        # Keyword-only: typer passes every option by name, and a required option may then
        # follow options with defaults.
        params = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in (
                first,
                *required,
                *head,
                *(p for p in optional if p.kind is not inspect.Parameter.KEYWORD_ONLY),
                *tail,
                *(p for p in optional if p.kind is inspect.Parameter.KEYWORD_ONLY),
                debug,
            )
        ]

        def run(**options: Any) -> None:
            inputs = RunInputs(**{f.name: options.pop(f.name) for f in shared})
            run_command(lambda: command(inputs, **options), inputs.debug)

        run.__name__ = command.__name__
        run.__qualname__ = command.__qualname__
        run.__module__ = command.__module__
        run.__doc__ = command.__doc__
        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return decorate


def _parameter(field: "Field[Any]") -> inspect.Parameter:
    default = inspect.Parameter.empty if field.default is MISSING else field.default
    return inspect.Parameter(
        field.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=field.type
    )
