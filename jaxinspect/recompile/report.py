"""The ``recompile`` report: what each case of a sweep cost one jitted function, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from jaxinspect.base.failures import CaseFailure
from jaxinspect.jsonfields import js
from jaxinspect.recompile.cachekey import CacheKey, KeyChange


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """What one case cost the jitted function.

    Attributes:
        compiled: Whether XLA compiled (a backend-compile event fired) for this case.
        traces, lowerings, compiles: Events counted while this case went through jit.
        compile_s: Seconds of XLA compilation JAX reported for this case (0.0 on a hit).
        wall_s: Seconds of trace + lower + compile calls, hits included.
        shares_with: The earlier case whose executable this case got back, if any.
        nearest: The earlier case whose key differs least (``None`` for the first case).
        changes: What differs from ``nearest``'s key.
        helper_compiles: The other programs JAX compiled while this case
            went through jit (eager operations the target ran while tracing, e.g.
            ``jit(sqrt)`` under ``jax.ensure_compile_time_eval``); not in ``compiles``.
    """

    name: str
    source: str
    key: CacheKey
    compiled: bool
    traces: int = field(metadata=js(omit=True))
    lowerings: int = field(metadata=js(omit=True))
    compiles: int = field(metadata=js(omit=True))
    compile_s: float
    wall_s: float
    shares_with: str | None = field(metadata=js("shares_executable_with"))
    nearest: str | None
    changes: tuple[KeyChange, ...]
    helper_compiles: tuple[HelperCompile, ...] = ()

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("events", "error")

    @property
    def events(self) -> CompileEvents:
        """The three counts together, as the JSON groups them."""
        return CompileEvents(self.traces, self.lowerings, self.compiles)

    @property
    def error(self) -> None:
        """Always null: the case went through jit (a failed case is a ``FailedCase``)."""
        return None


@dataclass(frozen=True, slots=True)
class HelperCompile:
    """Another program JAX compiled while the target traced (an eager operation it ran, e.g.
    ``jit(sqrt)`` under ``jax.ensure_compile_time_eval``), by the name JAX gives it."""

    name: str
    count: int = field(metadata=js(schema={"minimum": 1}))


@dataclass(frozen=True, slots=True)
class CompileEvents:
    """Trace, lowering and compile events counted while one case went through jit."""

    traces: int
    lowerings: int
    compiles: int


@dataclass(frozen=True, slots=True)
class FailedCase:
    """A case that could not go through the jitted function: the error it raised."""

    name: str
    source: str
    error: CaseFailure


@dataclass(frozen=True, slots=True)
class SweepReport:
    """The recompilation sweep of one target: every case, in spec order."""

    target: str
    #: What was jitted, e.g. ``jit(vmap(grad(loss_fn, argnums=0), in_axes=(None, 0)))``.
    composition: str
    backend: str
    jax_version: str
    jaxlib_version: str
    #: 64-bit mode for the whole sweep: on when any case has a 64-bit leaf.
    x64: bool
    #: Every case in spec order: one that went through jit, or one that failed (name, source,
    #: error only); the command exits with the worst failed case's exit code.
    cases: tuple[CaseOutcome | FailedCase, ...]
    #: ``--max-compiles``, or null.
    max_compiles: int | None = None

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("total_compiles", "helper_compiles", "exceeded")

    @property
    def total_compiles(self) -> int:
        """XLA compilations of the target over the whole sweep (helpers not included)."""
        return sum(c.compiles for c in self.cases if isinstance(c, CaseOutcome))

    @property
    def helper_compiles(self) -> tuple[HelperCompile, ...]:
        """Every helper program compiled over the sweep, by name."""
        totals: dict[str, int] = {}
        for case in self.cases:
            if isinstance(case, CaseOutcome):
                for helper in case.helper_compiles:
                    totals[helper.name] = totals.get(helper.name, 0) + helper.count
        return tuple(HelperCompile(name, count) for name, count in sorted(totals.items()))

    @property
    def failures(self) -> tuple[FailedCase, ...]:
        """The cases that failed, in spec order."""
        return tuple(c for c in self.cases if isinstance(c, FailedCase))

    @property
    def exceeded(self) -> bool:
        """Whether the target compiled more often than ``--max-compiles`` allows."""
        return self.max_compiles is not None and self.total_compiles > self.max_compiles
