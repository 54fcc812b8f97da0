"""The ``passes`` report: XLA's passes over one module, in order, with what each changed."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxinspect.base.inspection import InspectionReport
from jaxinspect.jsonfields import js
from jaxinspect.passes.timereport import PassTimes

#: The ``pipeline`` of the first step: the module entering XLA, converted from StableHLO.
INPUT_PIPELINE = "input"
INPUT_STEP = "stablehlo-to-hlo"
#: The ``pipeline`` of the last step: the optimized, scheduled module XLA compiled.
OUTPUT_PIPELINE = "output"
OUTPUT_STEP = "after-optimizations"


@dataclass(frozen=True, slots=True)
class PassStep:
    """One snapshot of the module and how it differs from the one before.

    Attributes:
        index: Position in the report (0: the module entering XLA); ``--diff`` takes it.
        pipeline: XLA's pass pipeline (``simplification``...), or ``input``/``output``.
        name: The pass that just ran; ``pipeline-start`` where a pipeline begins (a change
            there was made between pipelines, e.g. by the scheduler).
        changed: The module text differs from the previous snapshot's.
        ops_before: Instructions before the step (all computations, fused ones included; for
            the first step, StableHLO operations); ``None`` when a text did not parse.
        ops_after: Instructions after the step, likewise.
        lines_added: Lines of the unified diff from the previous snapshot marked ``+``.
        lines_removed: Lines marked ``-``.
        xla_sequence: XLA's number for the snapshot (``module_N.name.SEQUENCE.*.txt``);
            ``None`` for the first and last steps.
        text: The module after the step, as XLA printed it.
    """

    index: int
    pipeline: str
    name: str
    changed: bool
    ops_before: int | None
    ops_after: int | None
    lines_added: int
    lines_removed: int
    xla_sequence: int | None
    text: str = field(repr=False, compare=False, metadata=js(omit=True))

    @property
    def label(self) -> str:
        """``#3 simplification/algsimp``: how messages and diff headers name the step."""
        return f"#{self.index} {self.pipeline}/{self.name}"


@dataclass(frozen=True, slots=True)
class PassTotals:
    """The whole pipeline at a glance.

    Attributes:
        steps: Snapshots in the report, first and last included.
        changed: Of which changed the module.
        stablehlo_ops: Operations of the StableHLO module JAX handed to XLA.
        ops_entering: Instructions of the module entering XLA.
        ops_scheduled: Instructions of the scheduled module XLA compiled.
        lines_added: ``+`` lines over XLA's passes (entering XLA -> scheduled).
        lines_removed: ``-`` lines over XLA's passes.
    """

    steps: int
    changed: int
    stablehlo_ops: int | None
    ops_entering: int | None
    ops_scheduled: int | None
    lines_added: int
    lines_removed: int


@dataclass(frozen=True, slots=True)
class PassesReport:
    """Everything ``jaxinspect passes`` shows; renderers only read it.

    ``steps`` is ``None`` when XLA wrote no pass snapshots (``unavailable`` says why).
    """

    source: InspectionReport  # target, backend, versions, the StableHLO text
    module: str  # the module's name, as XLA's dump names it (jit_predict)
    steps: tuple[PassStep, ...] | None
    totals: PassTotals
    #: (JSON path, reason) for the nulls this report adds to the stages report's.
    unavailable: tuple[tuple[str, str], ...] = ()
    #: ``--time``: each step of the compilation with its wall time; ``None``: not asked for.
    time: PassTimes | None = None

    def reason(self, path: str) -> str | None:
        """Why ``path`` is null, from this report or the stages report it extends."""
        own = dict(self.unavailable).get(path)
        return own if own is not None else self.source.reason(path)

    def text_before(self, step: PassStep) -> str:
        """The module text ``step`` started from (the StableHLO for the first step)."""
        if step.index == 0 or self.steps is None:
            stablehlo = self.source.stage("stablehlo")
            return "" if stablehlo is None else stablehlo.text
        return self.steps[step.index - 1].text
