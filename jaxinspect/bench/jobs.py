"""What a cold-run process is told to do: the target, where its spec comes from, the options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from jaxinspect.spec import Spec, load_spec, parse_arg_options


@dataclass(frozen=True, slots=True)
class SpecSource:
    """Where a spec comes from, so that a fresh process can load exactly the same one.

    Attributes:
        shapes: A YAML spec file, or ``None``.
        arg_options: ``--arg NAME=DTYPE[DIMS]`` options used instead of a file.
        donate: Extra argument names to donate (``--donate``), added to the spec's own.
    """

    shapes: str | None
    arg_options: tuple[str, ...] = ()
    donate: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How reports name this spec."""
        return self.shapes if self.shapes is not None else " ".join(self.arg_options) or "(none)"

    def load(self) -> Spec:
        """Parse the spec and merge in ``donate``.

        Raises:
            SpecError: The spec file or an ``--arg`` option is malformed.
        """
        if self.shapes is not None:
            spec = load_spec(self.shapes)
        elif self.arg_options:
            spec = parse_arg_options(list(self.arg_options))
        else:
            spec = Spec(source="(no --shapes)", args=())
        extra = tuple(n for n in self.donate if n not in spec.donate)
        return dataclasses.replace(spec, donate=spec.donate + extra) if extra else spec


def make_job(
    target: str,
    source: SpecSource,
    *,
    backend: str | None,
    seed: int,
    max_input_bytes: int,
    cache_dir: str | None,
    spawn_wall: float,
) -> dict[str, Any]:
    """The JSON-able job of one cold-run process."""
    return {
        "target": target,
        "shapes": source.shapes,
        "arg_options": list(source.arg_options),
        "donate": list(source.donate),
        "backend": backend,
        "seed": seed,
        "max_input_bytes": max_input_bytes,
        "cache_dir": cache_dir,
        "spawn_wall": spawn_wall,
    }


def job_spec(job: dict[str, Any]) -> Spec:
    """The spec a job names, loaded as the parent loaded it."""
    source = SpecSource(job["shapes"], tuple(job["arg_options"]), tuple(job["donate"]))
    return source.load()
