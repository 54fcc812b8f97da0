"""Run JAX's trace -> lower -> compile once, timing each step, and keep every artifact."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import jax

from jaxinspect.inputs.binding import CallPlan
from jaxinspect.pipeline.timing.quiet import frozen_heap, quiet_gc
from jaxinspect.pipeline.whilecompiling import WhileCompiling
from jaxinspect.process.frames import hide_tool_frames
from jaxinspect.process.usercode import user_code

#: Pipeline steps in order; a run stops after the last one it needs.
STEPS = ("trace", "lower", "compile")
#: The profiler event around each step: ``jaxinspect.trace``, ``jaxinspect.lower``...
STEP_EVENT = "jaxinspect."


@dataclass(frozen=True, slots=True)
class StageArtifacts:
    """JAX's own stage objects from one run, and the seconds each step took.

    ``lowered`` and ``compiled`` are ``None`` when the run stopped earlier.
    """

    jitted: Any
    traced: Any
    lowered: Any | None
    compiled: Any | None
    trace_s: float
    lower_s: float | None
    compile_s: float | None
    #: The bound call (``inspection.PreparedCall``) whose inputs a command may run the
    #: executable with again (``cost --measure``); set by ``run_inspection``.
    call: Any | None = None
    #: What ``run_pipeline``'s ``while_compiling`` computed beside the compile (its value is
    #: computed when asked for where no compile ran).
    beside: WhileCompiling[Any] | None = None


def run_pipeline(
    function: Callable[..., Any],
    plan: CallPlan,
    args: list[Any],
    kwargs: dict[str, Any],
    *,
    target: str,
    until: str = "compile",
    compiler_options: dict[str, Any] | None = None,
    while_compiling: Callable[[Any], Any] | None = None,
    around_compile: AbstractContextManager[object] | None = None,
) -> StageArtifacts:
    """Trace, lower and compile ``function`` for abstract ``args``/``kwargs``, each exactly once.

    Each step is timed with garbage collected before it and the collector paused during it.

    Args:
        function: The user's callable.
        plan: How the call binds (gives the static argument positions and names).
        args: Positional arguments: ``ShapeDtypeStruct`` pytrees and static values.
        kwargs: Keyword arguments, likewise.
        target: The target as the user wrote it, for error messages.
        until: The last step to run: ``trace``, ``lower`` or ``compile``.
        compiler_options: XLA options for this one compilation (``Lowered.compile``), e.g. a
            dump folder; ``None``: XLA's defaults.
        while_compiling: Work on the traced stage (pure Python, nothing MLIR) done in a thread
            while XLA compiles, which releases the GIL (``whilecompiling``); its value is
            ``StageArtifacts.beside``.
        around_compile: Entered just before XLA's compile and left just after it (a thread
            that reads the compile's dumps as XLA writes them: ``dumpwatch``).

    Raises:
        StageError: The user's function failed in a step.
    """
    last = STEPS.index(until)
    hide_tool_frames()
    with user_code("trace", target, step="jit"):  # jit checks static_argnums against the signature
        jitted = jax.jit(
            function,
            static_argnums=plan.static_argnums,
            static_argnames=plan.static_argnames,
            donate_argnums=plan.donate_argnums,
            donate_argnames=plan.donate_argnames,
        )
    with frozen_heap():
        traced, trace_s = _timed("trace", target, lambda: jitted.trace(*args, **kwargs))
        lowered = compiled = None
        lower_s = compile_s = None
        if last >= 1:
            lowered, lower_s = _timed("lower", target, traced.lower)
        beside = None
        if while_compiling is not None:
            work = functools.partial(while_compiling, traced)
            beside = WhileCompiling(work, start=last >= 2 and lowered is not None)
        if last >= 2 and lowered is not None:
            compile_step = functools.partial(lowered.compile, compiler_options=compiler_options)
            try:
                with around_compile or contextlib.nullcontext():
                    compiled, compile_s = _timed("compile", target, compile_step)
            finally:
                if beside is not None:
                    beside.join()  # no thread outlives the step, nor its error
    return StageArtifacts(
        jitted, traced, lowered, compiled, trace_s, lower_s, compile_s, beside=beside
    )


def _timed(stage: str, target: str, step: Callable[[], Any]) -> tuple[Any, float]:
    # The user's code: its prints go to stderr, and whatever it raises is a StageError.
    # The annotation marks the step in a profile taken around the run (``passes --time``
    # reads each step's events inside it); without a profiler it costs a flag check.
    with quiet_gc(), user_code(stage, target), jax.profiler.TraceAnnotation(STEP_EVENT + stage):
        start = time.perf_counter()
        result = step()
        return result, time.perf_counter() - start
