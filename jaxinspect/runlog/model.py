"""The compile log's data: one record per XLA compilation, and the log of a whole run (no jax)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

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
        defined_at: ``file:line`` of its definition, where JAX's cache-miss explanation gave it.
        call_site: ``file:line (function)`` of the user's frame that made the call, or None
            when no user frame was on the stack.
        trace_s: Tracing time, or None when the jaxpr came from JAX's tracing cache.
        lower_s: Lowering time, or None when the lowering was cached.
        compile_s: XLA compile (or persistent-cache load) time.
        persistent_cache: ``hit``, ``miss``, or None when the persistent cache was not asked.
        recompile: A function defined in the user's code (``defined_at`` known) that
            compiled earlier in the run; JAX's own jits are counted, never recompilations.
        changes: The cache-key components that differ from its nearest earlier key.
        explanation: JAX's own explanation where it gave one but the key could not be read.
    """

    function: str
    defined_at: str | None
    call_site: str | None
    trace_s: float | None
    lower_s: float | None
    compile_s: float
    persistent_cache: str | None
    recompile: bool
    changes: tuple[KeyChange, ...]
    explanation: str | None

    @property
    def identity(self) -> tuple[str, str | None]:
        """What counts as one function: its name and where it is defined."""
        return self.function, self.defined_at

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this compilation (also the child's wire format)."""
        return {
            "function": self.function,
            "defined_at": self.defined_at,
            "call_site": self.call_site,
            "trace_s": self.trace_s,
            "lower_s": self.lower_s,
            "compile_s": self.compile_s,
            "persistent_cache": self.persistent_cache,
            "recompile": self.recompile,
            "changes": [
                {
                    "path": c.path,
                    "component": c.component,
                    "before": c.before,
                    "after": c.after,
                    "text": str(c),
                }
                for c in self.changes
            ],
            "explanation": self.explanation,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Compilation:
        """The inverse of ``to_dict``."""
        changes = tuple(
            KeyChange(c["path"], c["component"], c["before"], c["after"]) for c in data["changes"]
        )
        return cls(
            function=data["function"],
            defined_at=data["defined_at"],
            call_site=data["call_site"],
            trace_s=data["trace_s"],
            lower_s=data["lower_s"],
            compile_s=data["compile_s"],
            persistent_cache=data["persistent_cache"],
            recompile=data["recompile"],
            changes=changes,
            explanation=data["explanation"],
        )


@dataclass(frozen=True, slots=True)
class FunctionSummary:
    """One function's compilations over the run."""

    function: str
    defined_at: str | None
    compiles: int
    compile_s: float
    persistent_hits: int


@dataclass(frozen=True, slots=True)
class CompileLog:
    """Every compilation of a run, in order, and how the run ended.

    Attributes:
        program: What ran (``train.py`` or ``-m pkg.mod``), or None for a Python block.
        compilations: In the order they happened.
        exit_code: The program's own exit code (130 after Ctrl-C), None for a Python block.
        interrupted: The run ended on Ctrl-C.
        max_compiles: The per-function limit (``--max-compiles``), or None.
    """

    program: str | None
    compilations: tuple[Compilation, ...]
    exit_code: int | None = None
    interrupted: bool = False
    max_compiles: int | None = None

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
