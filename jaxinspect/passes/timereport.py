"""``passes --time``: the wall time of each step of one compilation, from the profiler's events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

#: ``TimedStep.kind`` values.
STAGE = "stage"  # JAX's trace, lower and compile, timed outside the profiler
FUNCTION = "function"  # a jitted function called while tracing (``PjitFunction(name)``)
PIPELINE = "pipeline"  # an XLA pass pipeline (its event names the module)
PASS = "pass"  # an XLA pass, inside a pipeline
EVENT = "event"  # any other named compiler event (``CpuCompiler::RunBackend``...)


@dataclass(frozen=True, slots=True)
class TimedStep:
    """One row of the time tree: a step and the seconds it took, over all its runs.

    Rows come in tree order (a parent, then its children, largest first); a row's time
    contains its children's, so only the rows of one depth add up.

    Attributes:
        depth: 0 for JAX's stages; each nesting level adds one.
        name: The event's name, the module suffix of a pipeline's name removed
            (``simplification``, ``algsimp``, ``CpuCompiler::RunBackend``).
        kind: ``stage``, ``function``, ``pipeline``, ``pass`` or ``event``.
        runs: How many times the step ran at this place (``algsimp`` runs several times).
        seconds: Wall time of all its runs together.
        self_s: Of which in no listed child (a leaf: all of it).
    """

    depth: int
    name: str
    kind: str
    runs: int
    seconds: float
    self_s: float

    @property
    def is_pass(self) -> bool:
        """An XLA pass or pipeline (not a stage, function or other event)."""
        return self.kind in (PIPELINE, PASS)


@dataclass(frozen=True, slots=True)
class PassTimes:
    """Where one compilation's time went, read off a profile of the run's one compilation.

    Attributes:
        steps: The rows (null when the profiler wrote no profile: see ``unavailable`` under
            ``time.steps``).
        compile_s: Wall time of ``Lowered.compile()``, from ``time.perf_counter`` around
            the call (the profiler on, its events not used).
        accounted_s: The compile row's children summed: what the events account for.
        worker_s: Busy time of the compiler's worker threads, concurrent with the rows
            and so in no total (null: no other thread left events).
        profiler: How the profile was taken.
    """

    steps: tuple[TimedStep, ...] | None
    compile_s: float | None
    accounted_s: float | None
    worker_s: float | None
    profiler: str

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("coverage", "passes_s", "top_pass")

    @property
    def coverage(self) -> float | None:
        """``accounted_s`` over ``compile_s`` (null: either is missing)."""
        if self.accounted_s is None or not self.compile_s:
            return None
        return self.accounted_s / self.compile_s

    @property
    def passes_s(self) -> float | None:
        """Time in XLA's pass pipelines and passes, each counted once (the outermost rows of
        those kinds); null: the compiler emitted no pass events."""
        steps = self.steps or ()
        outer: list[TimedStep] = []
        inside_depth: int | None = None  # depth of the pass row whose subtree we are in
        for step in steps:
            if inside_depth is not None and step.depth > inside_depth:
                continue
            inside_depth = step.depth if step.is_pass else None
            if step.is_pass:
                outer.append(step)
        return sum(s.seconds for s in outer) if outer else None

    @property
    def top_pass(self) -> str | None:
        """The XLA pass that took longest, a pass that only runs a pipeline of passes left out
        (``simplification`` runs its pipeline to a fixed point); a pipeline where no pass has
        an event; null: neither has."""
        steps = self.steps or ()
        passes = [s for i, s in enumerate(steps) if s.kind == PASS and not _runs_pipeline(steps, i)]
        passes = passes or [s for s in steps if s.is_pass]
        return max(passes, key=lambda s: s.seconds).name if passes else None


def _runs_pipeline(steps: tuple[TimedStep, ...], index: int) -> bool:
    """Whether a pipeline's row is below ``steps[index]``."""
    depth = steps[index].depth
    for step in steps[index + 1 :]:
        if step.depth <= depth:
            return False
        if step.kind == PIPELINE:
            return True
    return False
