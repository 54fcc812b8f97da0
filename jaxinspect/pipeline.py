"""Run JAX's trace -> lower -> compile once, timing each step, and keep every artifact."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

from jaxinspect.binding import CallPlan
from jaxinspect.errors import StageError
from jaxinspect.errtrace import format_user_failure
from jaxinspect.frames import hide_tool_frames

#: Pipeline steps in order; a run stops after the last one it needs.
STEPS = ("trace", "lower", "compile")


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


def run_pipeline(
    function: Callable[..., Any],
    plan: CallPlan,
    args: list[Any],
    kwargs: dict[str, Any],
    *,
    target: str,
    until: str = "compile",
) -> StageArtifacts:
    """Trace, lower and compile ``function`` for abstract ``args``/``kwargs``, each exactly once.

    Args:
        function: The user's callable.
        plan: How the call binds (gives the static argument positions and names).
        args: Positional arguments: ``ShapeDtypeStruct`` pytrees and static values.
        kwargs: Keyword arguments, likewise.
        target: The target as the user wrote it, for error messages.
        until: The last step to run: ``trace``, ``lower`` or ``compile``.

    Raises:
        StageError: The user's function failed in a step.
    """
    last = STEPS.index(until)
    hide_tool_frames()
    try:
        jitted = jax.jit(
            function,
            static_argnums=plan.static_argnums,
            static_argnames=plan.static_argnames,
            donate_argnums=plan.donate_argnums,
            donate_argnames=plan.donate_argnames,
        )
    except Exception as exc:  # jit validates static_argnums against the signature
        raise StageError("trace", format_user_failure("jit", target, exc)) from exc
    traced, trace_s = _timed("trace", target, lambda: jitted.trace(*args, **kwargs))
    lowered = compiled = None
    lower_s = compile_s = None
    if last >= 1:
        lowered, lower_s = _timed("lower", target, traced.lower)
    if last >= 2 and lowered is not None:
        compiled, compile_s = _timed("compile", target, lowered.compile)
    return StageArtifacts(jitted, traced, lowered, compiled, trace_s, lower_s, compile_s)


def _timed(stage: str, target: str, step: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    try:
        result = step()
    except Exception as exc:
        raise StageError(stage, format_user_failure(stage, target, exc)) from exc
    return result, time.perf_counter() - start
