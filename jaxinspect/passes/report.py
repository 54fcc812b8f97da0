"""The ``passes`` report: XLA's passes over one module, in order, with what each changed."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxinspect.base.inspection import InspectionReport
from jaxinspect.jsonfields import Count, js
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
        index: Position in ``passes[]`` (0: the module entering XLA); ``--diff INDEX`` prints
            this step's diff.
        pipeline: XLA's pass pipeline (``simplification``...); ``input`` for the module
            entering XLA, ``output`` for the optimized module.
        name: The pass that just ran; ``pipeline-start`` at a pipeline's start (a change
            there was made between pipelines, e.g. by the scheduler); ``stablehlo-to-hlo`` and
            ``after-optimizations`` for the first and last entries.
        changed: The module text differs from the previous entry's.
        ops_before: Instructions before the step (all computations, fused ones included; for
            the first step, StableHLO operations); null when a text did not parse.
        ops_after: Instructions after the step, likewise.
        lines_added: Lines marked ``+`` in the unified diff from the previous entry.
        lines_removed: Lines marked ``-`` in that diff.
        xla_sequence: XLA's snapshot number in the dump's file name
            (``module_N.NAME.SEQUENCE.PIPELINE.after_PASS...``); null for the first and last
            entries.
        text: The module after the step, as XLA printed it.
    """

    index: Count
    pipeline: str
    name: str
    changed: bool
    ops_before: Count | None
    ops_after: Count | None
    lines_added: Count
    lines_removed: Count
    xla_sequence: Count | None
    text: str = field(repr=False, compare=False, metadata=js(omit=True))

    @property
    def label(self) -> str:
        """``#3 simplification/algsimp``: how messages and diff headers name the step."""
        return f"#{self.index} {self.pipeline}/{self.name}"


@dataclass(frozen=True, slots=True)
class PassTotals:
    """The whole pipeline at a glance.

    Attributes:
        steps: Entries in ``passes[]``, first and last included.
        changed: Entries that changed the module.
        stablehlo_ops: Operations of the StableHLO module JAX handed to XLA.
        ops_entering: Instructions of the module entering XLA.
        ops_scheduled: Instructions of the scheduled module XLA compiled.
        lines_added: Lines added over XLA's passes (``passes[1:]``: entering XLA -> scheduled).
        lines_removed: Lines removed over XLA's passes (``passes[1:]``).
    """

    steps: Count
    changed: Count
    stablehlo_ops: Count | None
    ops_entering: Count | None
    ops_scheduled: Count | None
    lines_added: Count
    lines_removed: Count


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
