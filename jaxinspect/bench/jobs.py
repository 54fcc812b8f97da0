"""What a cold-run process is told to do: the target, where its spec comes from, the options."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from jaxinspect.errors import UsageError
from jaxinspect.inputs.cases import load_spec_cases
from jaxinspect.inputs.shardspec import parse_mesh_option
from jaxinspect.inputs.spec import (
    Spec,
    check_placement,
    parse_arg_options,
    with_inputs,
    with_placement,
)


@dataclass(frozen=True, slots=True)
class SpecSource:
    """Where a spec comes from, so that a fresh process can load exactly the same one.

    Attributes:
        shapes: A YAML spec file, or ``None``.
        arg_options: ``--arg NAME=DTYPE[DIMS]`` options used instead of a file.
        donate: Extra argument names to donate (``--donate``), added to the spec's own.
        case: The case of a spec file with ``cases:``; ``None`` for a plain spec.
        mesh: ``--mesh`` as given, over the spec's ``mesh:``.
        devices: ``--devices``, over the spec's ``devices:``.
        inputs: ``--inputs``, over the spec's ``inputs:``.
    """

    shapes: str | None
    arg_options: tuple[str, ...] = ()
    donate: tuple[str, ...] = ()
    case: str | None = None
    mesh: str | None = None
    devices: int | None = None
    inputs: str | None = None

    @property
    def label(self) -> str:
        """How reports name this spec."""
        if self.shapes is None:
            return " ".join(self.arg_options) or "(none)"
        return self.shapes if self.case is None else f"{self.shapes} [{self.case}]"

    def load(self) -> Spec:
        """Parse the spec and merge in ``donate``.

        Raises:
            SpecError: The spec file or an ``--arg`` option is malformed.
        """
        if self.shapes is not None:
            spec = load_spec_cases(self.shapes).single(self.case)
        elif self.arg_options:
            spec = parse_arg_options(list(self.arg_options))
        else:
            spec = Spec(source="(no --shapes)", args=())
        extra = tuple(n for n in self.donate if n not in spec.donate)
        if extra:
            spec = dataclasses.replace(spec, donate=spec.donate + extra)
        mesh = None if self.mesh is None else parse_mesh_option(self.mesh)
        spec = with_placement(spec, mesh=mesh, devices=self.devices)
        check_placement(spec)
        return with_inputs(spec, self.inputs)


def spec_sources(
    shapes: str | None,
    case: str | None,
    donate: tuple[str, ...],
    mesh: str | None = None,
    devices: int | None = None,
) -> tuple[SpecSource, ...]:
    """One source per case of ``shapes`` (every case, or the one ``case`` names).

    Raises:
        SpecError: The file is malformed or has no such case.
    """
    if shapes is None:
        if case is not None:
            raise UsageError("--case needs --shapes SPEC with `cases:`")
        return (SpecSource(None, (), donate, None, mesh, devices),)
    spec_file = load_spec_cases(shapes)
    if not spec_file.has_cases:
        spec_file.select(case)  # refuses --case for a file without cases
        return (SpecSource(shapes, (), donate, None, mesh, devices),)
    return tuple(
        SpecSource(shapes, (), donate, name, mesh, devices) for name, _ in spec_file.select(case)
    )


def make_job(
    target: str,
    source: SpecSource,
    *,
    backend: str | None,
    seed: int,
    max_input_bytes: int,
    cache_dir: str | None,
    spawn_wall: float,
    debug: bool = False,
) -> dict[str, Any]:
    """The JSON-able job of one cold-run process."""
    return {
        "target": target,
        "shapes": source.shapes,
        "arg_options": list(source.arg_options),
        "donate": list(source.donate),
        "case": source.case,
        "mesh": source.mesh,
        "devices": source.devices,
        "inputs": source.inputs,
        "backend": backend,
        "seed": seed,
        "max_input_bytes": max_input_bytes,
        "cache_dir": cache_dir,
        "spawn_wall": spawn_wall,
        "debug": debug,
        "parent_pid": os.getpid(),
    }


def job_spec(job: dict[str, Any]) -> Spec:
    """The spec a job names, loaded as the parent loaded it."""
    source = SpecSource(
        job["shapes"],
        tuple(job["arg_options"]),
        tuple(job["donate"]),
        job["case"],
        job.get("mesh"),
        job.get("devices"),
        job.get("inputs"),
    )
    return source.load()
