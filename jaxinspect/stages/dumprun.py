"""One trace/lower/compile whose compilation writes XLA's dump, read back before it is deleted.

The ``memory``, ``passes`` and ``report`` commands and the Python API's ``Inspection`` start
from this one run, then assemble their reports from it (nothing compiles again).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from jaxinspect.base.inspection import InspectionReport
from jaxinspect.inputs.spec import Spec
from jaxinspect.inputs.target import LoadedTarget
from jaxinspect.pipeline.dumps import DumpedModule, compilation_dump
from jaxinspect.pipeline.stages import StageArtifacts
from jaxinspect.stages.runner import InspectOptions, run_inspection


@dataclass(frozen=True, slots=True)
class DumpedRun:
    """The stages report of one run, JAX's stage objects, and what the compilation dumped."""

    source: InspectionReport
    artifacts: StageArtifacts
    dumped: DumpedModule

    @property
    def compiled(self) -> object:
        """The ``jax.stages.Compiled`` that wrote the dump."""
        return self.artifacts.compiled


def run_dumped(
    loaded: LoadedTarget, spec: Spec, options: InspectOptions, *, passes: bool = False
) -> DumpedRun:
    """Run the pipeline once up to compile, XLA dumping into a folder deleted afterwards.

    ``options.compiler_options`` is replaced by the dump's; with ``passes``, XLA also dumps
    the module after every pass (``passes`` report; a slower compile).

    Raises:
        SpecError, UsageError, StageError: As ``run_inspection``.
    """
    with compilation_dump(passes=passes) as dump:
        dumped_options = replace(options, compiler_options=dump.compiler_options)
        source, artifacts = run_inspection(loaded, spec, dumped_options)
        dumped = dump.read(artifacts.compiled)
    return DumpedRun(source, artifacts, dumped)
