"""The compile log as JSON (schema: ``jaxinspect/schemas/runlog.schema.json``, generated from
:class:`RunlogDocument`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar

from jaxinspect.jsonfields import Count, Minimum, encode_object, js
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.runlog.model import (
    IN_MEMORY_HITS_UNAVAILABLE,
    SCHEMA_VERSION,
    CompileLog,
    FunctionSummary,
)

#: The schema this document follows (bump ``SCHEMA_VERSION`` with it).
SCHEMA = "runlog.schema.json"


@dataclass(frozen=True, slots=True)
class PersistentCacheCounts:
    """How the run used JAX's persistent compilation cache.

    Attributes:
        hits: Executables loaded from JAX's persistent compilation cache.
        misses: Compilations that asked the persistent cache and compiled.
    """

    hits: Count
    misses: Count


@dataclass(frozen=True, slots=True)
class RunlogDocument:
    """The log's own fields, and the totals and per-function rows computed from them."""

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = (
        "exceeded",
        "total_compiles",
        "total_recompiles",
        "total_compile_s",
        "in_memory_cache_hits",
        "in_memory_cache_hits_unavailable",
        "persistent_cache",
        "functions",
    )

    log: CompileLog = field(metadata=js(flatten=True))

    @property
    def exceeded(self) -> bool:
        """A function of the user's compiled more than max_compiles times; `run` then exits 1."""
        return bool(self.log.over_limit)

    @property
    def total_compiles(self) -> Count:
        """Compilations over the run."""
        return len(self.log.compilations)

    @property
    def total_recompiles(self) -> Count:
        """Compilations of a function of the user's that had compiled before."""
        return len(self.log.recompilations)

    @property
    def total_compile_s(self) -> Annotated[float, Minimum(0)]:
        """XLA compile (and persistent-cache load) seconds over the run."""
        return self.log.total_compile_s

    @property
    def in_memory_cache_hits(self) -> None:
        """Not counted: see in_memory_cache_hits_unavailable."""
        return None

    @property
    def in_memory_cache_hits_unavailable(self) -> str:
        """Why in-memory hits are null."""
        return IN_MEMORY_HITS_UNAVAILABLE

    @property
    def persistent_cache(self) -> PersistentCacheCounts:
        """How many compilations hit and missed JAX's persistent compilation cache."""
        counts = self.log.persistent_cache
        return PersistentCacheCounts(counts.get("hit", 0), counts.get("miss", 0))

    @property
    def functions(self) -> tuple[FunctionSummary, ...]:
        """Per function (name and definition site), most compilations first."""
        return self.log.functions


def render_log_json(log: CompileLog) -> str:
    """Indented JSON with sorted keys."""
    return json_text({"schema_version": SCHEMA_VERSION, **encode_object(RunlogDocument(log))})
