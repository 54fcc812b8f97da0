"""The compile log's data: one record per XLA compilation, and the log of a whole run (no jax)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated, Any

from jaxinspect.jsonfields import Count, Minimum, decode, encode_object, js
from jaxinspect.recompile.cachekey import KeyChange

SCHEMA_VERSION = 1

#: Why in-memory cache hits are not counted: JAX's C++ dispatch answers a cached call without
#: running any Python or firing any event, so counting them would cost every step.
IN_MEMORY_HITS_UNAVAILABLE = (
    "JAX's C++ dispatch serves a cached call without an event; cached calls are not counted"
)


@dataclass(frozen=True, slots=True)
class Compilation:
    """One XLA compilation (or persistent-cache load) of one jitted function.

    Attributes:
        function: The function's name as JAX reports it (``step``; ``broadcast_in_dim`` for
            the jit of an eager ``jnp`` operation).
        defined_at: ``file:line`` of its definition, where JAX's cache-miss explanation gave it;
            null for JAX's own jits (eager ``jnp`` operations).
        call_site: ``file:line (function)`` of the user's frame that made the call; null when
            no user frame was on the stack.
        trace_s: Tracing seconds; null when the jaxpr came from JAX's tracing cache.
        lower_s: Lowering seconds; null when the lowering was cached.
        compile_s: XLA compile (or persistent-cache load) seconds.
        persistent_cache: ``hit`` or ``miss``; null when the persistent cache was not asked.
        recompile: A function defined in the user's code (``defined_at`` known) that
            compiled earlier in the run; JAX's own jits are counted, never recompilations.
        changes: The cache-key components that differ from the nearest earlier key of the
            same function (fewest differences, latest on a tie).
        explanation: JAX's own explanation where it gave one but the key could not be read.
    """

    function: str
    defined_at: str | None
    call_site: str | None
    trace_s: float | None
    lower_s: float | None
    compile_s: Annotated[float, Minimum(0)]
    persistent_cache: str | None = field(metadata=js(schema={"enum": ["hit", "miss", None]}))
    recompile: bool
    changes: tuple[KeyChange, ...]
    explanation: str | None

    @property
    def identity(self) -> tuple[str, str | None]:
        """What counts as one function: its name and where it is defined."""
        return self.function, self.defined_at

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this compilation (also the child's wire format)."""
        return encode_object(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Compilation:
        """The inverse of ``to_dict``, checked as it reads (:func:`jsonfields.decode`)."""
        return decode(cls, data)


@dataclass(frozen=True, slots=True)
class FunctionSummary:
    """One function's compilations over the run."""

    function: str
    #: ``file:line`` of the definition; null for JAX's own jits (eager ``jnp`` operations).
    defined_at: str | None
    compiles: Annotated[int, Minimum(1)]
    compile_s: Annotated[float, Minimum(0)]
    persistent_hits: Count


@dataclass(frozen=True, slots=True)
class CompileLog:
    """Every compilation of a run, in order, and how the run ended.

    Attributes:
        program: What ran: the script (``train.py``) or ``-m pkg.mod``; null for a Python
            block.
        compilations: Every XLA compilation of the run, in the order they happened.
        exit_code: The program's own exit code (130 after Ctrl-C); null for a Python block.
        interrupted: The run was ended by Ctrl-C (SIGINT).
        max_compiles: ``--max-compiles``: the most compilations allowed per function of the
            user's, or null.
    """

    program: str | None
    compilations: tuple[Compilation, ...]
    exit_code: int | None = None
    interrupted: bool = False
    max_compiles: Annotated[int, Minimum(0)] | None = None

    @property
    def functions(self) -> tuple[FunctionSummary, ...]:
        """Per function, most compilations first (then first compiled first)."""
        order: dict[tuple[str, str | None], list[Compilation]] = {}
        for comp in self.compilations:
            order.setdefault(comp.identity, []).append(comp)
        rows = [
            FunctionSummary(
                function=name,
                defined_at=defined_at,
                compiles=len(comps),
                compile_s=sum(c.compile_s for c in comps),
                persistent_hits=sum(c.persistent_cache == "hit" for c in comps),
            )
            for (name, defined_at), comps in order.items()
        ]
        return tuple(sorted(rows, key=lambda r: -r.compiles))

    @property
    def recompilations(self) -> tuple[Compilation, ...]:
        """The compilations of a function that had compiled before."""
        return tuple(c for c in self.compilations if c.recompile)

    @property
    def total_compile_s(self) -> float:
        """XLA compile time (and persistent-cache loads) over the run."""
        return sum(c.compile_s for c in self.compilations)

    @property
    def over_limit(self) -> tuple[FunctionSummary, ...]:
        """The user's functions that compiled more than ``max_compiles`` times each.

        JAX's own jits (``broadcast_in_dim`` for ``jnp.ones`` of a new shape) are not gated:
        how often they compile depends on JAX's internals, not on the program's choices.
        """
        if self.max_compiles is None:
            return ()
        limit = self.max_compiles
        return tuple(f for f in self.functions if f.defined_at and f.compiles > limit)

    @property
    def persistent_cache(self) -> Counter[str]:
        """How many compilations hit and missed the persistent compilation cache."""
        return Counter(c.persistent_cache for c in self.compilations if c.persistent_cache)
