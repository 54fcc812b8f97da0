"""The ``recompile`` report: what each case of a sweep cost one jitted function, in order."""

from __future__ import annotations

from dataclasses import dataclass

from jaxinspect.recompile.cachekey import CacheKey, KeyChange
from jaxinspect.reports.failures import CaseFailure


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
        helper_compiles: ``(name, count)`` of the other programs JAX compiled while this case
            went through jit (eager operations the target ran while tracing, e.g.
            ``jit(sqrt)`` under ``jax.ensure_compile_time_eval``); not in ``compiles``.
    """

    name: str
    source: str
    key: CacheKey
    compiled: bool
    traces: int
    lowerings: int
    compiles: int
    compile_s: float
    wall_s: float
    shares_with: str | None
    nearest: str | None
    changes: tuple[KeyChange, ...]
    helper_compiles: tuple[tuple[str, int], ...] = ()


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
    composition: str
    backend: str
    jax_version: str
    jaxlib_version: str
    x64: bool
    cases: tuple[CaseOutcome | FailedCase, ...]
    max_compiles: int | None = None

    @property
    def total_compiles(self) -> int:
        """XLA compilations of the target over the whole sweep (helpers not included)."""
        return sum(c.compiles for c in self.cases if isinstance(c, CaseOutcome))

    @property
    def helper_compiles(self) -> tuple[tuple[str, int], ...]:
        """``(name, count)`` of every helper program compiled over the sweep, by name."""
        totals: dict[str, int] = {}
        for case in self.cases:
            if isinstance(case, CaseOutcome):
                for name, count in case.helper_compiles:
                    totals[name] = totals.get(name, 0) + count
        return tuple(sorted(totals.items()))

    @property
    def failures(self) -> tuple[FailedCase, ...]:
        """The cases that failed, in spec order."""
        return tuple(c for c in self.cases if isinstance(c, FailedCase))

    @property
    def exceeded(self) -> bool:
        """Whether the target compiled more often than ``--max-compiles`` allows."""
        return self.max_compiles is not None and self.total_compiles > self.max_compiles
