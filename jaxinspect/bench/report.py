"""Immutable results of ``jaxinspect bench`` (its JSON: ``bench/jsondoc.py``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from jaxinspect.base.failures import CaseFailure
from jaxinspect.base.inspection import InputOrigins, data_dependence_caveat
from jaxinspect.jsonfields import Count, Minimum, Positive, Seconds, js

#: Phases of one cold process, in the order they happen. ``process_start`` is measured on the
#: wall clock from the parent's spawn to the child's first line; the others with perf_counter.
COLD_PHASES = (
    "process_start",
    "import_jax",
    "backend_init",
    "load_target",
    "trace",
    "lower",
    "compile",
    "first_call",
    "second_call",
)
#: The phases whose JSON paths ``bench.cold.<phase>`` are promised stable.
STABLE_COLD_PHASES = ("import_jax", "trace", "lower", "compile", "first_call", "second_call")


@dataclass(frozen=True, slots=True)
class PhaseStats:
    """One phase over the fresh processes of a round: min <= median <= max."""

    min_s: Seconds
    median_s: Seconds
    max_s: Seconds
    samples_s: tuple[Seconds, ...] = field(metadata=js(schema={"minItems": 1}))


@dataclass(frozen=True, slots=True)
class Histogram:
    """Equal-width bins from min to p99 (the last bin also holds samples above the p99):
    counts of samples per bin; ``edges_s`` has one more entry than ``counts``."""

    edges_s: tuple[Seconds, ...] = field(metadata=js(schema={"minItems": 2}))
    counts: tuple[Count, ...] = field(metadata=js(schema={"minItems": 1}))


@dataclass(frozen=True, slots=True)
class CachedStats:
    """Steady-state seconds per call, each call waited on with ``block_until_ready``."""

    min_s: Seconds
    median_s: Seconds
    mean_s: Seconds
    p90_s: Seconds
    p99_s: Seconds
    max_s: Seconds
    stdev_s: Seconds
    count: Positive
    warmup: Count
    #: Median seconds until a call returned, before waiting: the asynchronous dispatch cost.
    dispatch_median_s: Seconds | None
    #: (p90 - p10) / median of the samples.
    spread: Annotated[float, Minimum(0)]
    #: Whether the spread is above 0.5.
    noisy: bool
    noisy_reason: str | None
    histogram: Histogram


@dataclass(frozen=True, slots=True)
class PipelinedStats:
    """``calls`` dispatched back to back and waited on once, repeated ``rounds`` times."""

    #: The median over rounds of (round time / calls).
    per_call_s: Seconds
    calls: Positive
    rounds: Positive
    round_per_call_s: tuple[Seconds, ...]


@dataclass(frozen=True, slots=True)
class DispatchStats:
    """Per-call cost of a trivial program (``x + 1`` on a float32[8]) on the same device."""

    tiny_call_s: Seconds
    tiny_dispatch_s: Seconds
    count: Positive


@dataclass(frozen=True, slots=True)
class ColdSample:
    """What one fresh process measured, and the persistent-cache events of its compile."""

    phases: tuple[tuple[str, float], ...]
    process_total_s: float
    cache_requests: int
    cache_hits: int

    @property
    def cache_misses(self) -> int:
        """Compile requests that the persistent cache could not answer."""
        return self.cache_requests - self.cache_hits


@dataclass(frozen=True, slots=True)
class ColdRound:
    """Several fresh processes under one cache setting, summarized per phase."""

    cache: str  # "disabled", "empty" or "populated"
    samples: tuple[ColdSample, ...]
    phases: tuple[tuple[str, PhaseStats], ...]

    def phase(self, name: str) -> PhaseStats:
        """The statistics of phase ``name``."""
        return dict(self.phases)[name]

    @property
    def phase_stats(self) -> dict[str, PhaseStats]:
        """Phase name -> its statistics, as the JSON writes them."""
        return dict(self.phases)

    @property
    def processes(self) -> ColdProcesses:
        """The processes' own figures, one entry per process, as the JSON writes them."""
        return ColdProcesses(
            cache=self.cache,
            count=len(self.samples),
            total_s=tuple(s.process_total_s for s in self.samples),
            cache_requests=tuple(s.cache_requests for s in self.samples),
            cache_hits=tuple(s.cache_hits for s in self.samples),
        )


@dataclass(frozen=True, slots=True)
class ColdProcesses:
    """The fresh processes of one cold round: the cache setting and, per process, its total
    seconds and the persistent-cache requests and hits of its compile."""

    cache: str = field(metadata=js(schema={"enum": ["disabled", "empty", "populated"]}))
    count: Positive
    #: Wall time of each process as the parent saw it.
    total_s: tuple[Seconds, ...]
    #: Persistent-cache lookups of the compile (JAX monitoring event
    #: /jax/compilation_cache/compile_requests_use_cache).
    cache_requests: tuple[Count, ...]
    #: Lookups answered from the cache (/jax/compilation_cache/cache_hits).
    cache_hits: tuple[Count, ...]


@dataclass(frozen=True, slots=True)
class PersistentCacheReport:
    """Cold starts with an empty persistent compilation cache, then with a populated one."""

    directory: str
    #: The thresholds jaxinspect sets so that every compile is cached.
    min_compile_time_secs: float = field(metadata=js(schema={"const": 0.0}))
    min_entry_size_bytes: int = field(metadata=js(schema={"const": 0}))
    #: Files one compile wrote into an empty cache, and their bytes.
    entries_written: Count
    entry_bytes: Count
    #: Whether the folder already held this program before the run (the priming process hit).
    already_populated: bool
    populated: ColdRound = field(metadata=js(omit=True))
    #: Median of the empty round minus median of the populated round, per phase.
    saved_s: tuple[tuple[str, float], ...] = field(metadata=js(mapping=True))
    #: One line per process of the populated round that missed where a hit was expected.
    unexpected_misses: tuple[str, ...]

    JSON_PROPERTIES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("populated", "populated_phases"),
        ("populated_processes", "populated_processes"),
        ("all_hits", "all_hits"),
    )

    @property
    def populated_phases(self) -> dict[str, PhaseStats]:
        """The populated round's statistics per phase."""
        return self.populated.phase_stats

    @property
    def populated_processes(self) -> ColdProcesses:
        """The populated round's processes."""
        return self.populated.processes

    @property
    def all_hits(self) -> bool:
        """Whether every process of the populated round hit the cache as expected."""
        return not self.unexpected_misses


#: The most samples in one list of a stored baseline: the bootstrap's cost grows with them
#: (4,000 resamples of each list), and ``bench`` writes 30 rounds and ``--cold-runs`` (at most
#: this).
MAX_SAMPLES = 1_000
#: The longest sample accepted: a day; past it, a number is not a measured latency.
MAX_SECONDS = 86_400


def seconds_problem(value: Any, *, allow_zero: bool = False) -> str | None:
    """What a stored list of seconds must be, unless ``value`` is one (for ``decode``)."""
    if (
        isinstance(value, list)
        and 1 <= len(value) <= MAX_SAMPLES
        and all(_second(v, allow_zero) for v in value)
    ):
        return None
    sign = "finite seconds >= 0" if allow_zero else "positive finite seconds"
    return f"a list of 1 to {MAX_SAMPLES} {sign}"


def _second(value: Any, allow_zero: bool) -> bool:
    # An int is compared before any float conversion: a 400-digit one would overflow it.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return (value >= 0 if allow_zero else value > 0) and value <= MAX_SECONDS


def _count(value: Any, expected: str) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 10**9
    return None if ok else expected


_ROUND_SAMPLES = js(
    check=seconds_problem,
    schema={"minItems": 1, "items": {"type": "number", "exclusiveMinimum": 0}},
)


@dataclass(frozen=True, slots=True)
class GateRounds:
    """A latency gate's samples (``jaxinspect.bench.gate``), seconds per round: the fastest
    and the median of the target's calls, and the fastest call of a fixed reference program
    timed right after (a yardstick of the machine's speed)."""

    calls_per_round: int = field(
        metadata=js(check=lambda v: _count(v, "a positive integer"), schema={"minimum": 1})
    )
    target_min_s: tuple[float, ...] = field(metadata=_ROUND_SAMPLES)
    target_median_s: tuple[float, ...] = field(metadata=_ROUND_SAMPLES)
    reference_min_s: tuple[float, ...] = field(metadata=_ROUND_SAMPLES)


@dataclass(frozen=True, slots=True)
class BenchResult:
    """Every measurement for one spec of the target."""

    spec: str
    input_bytes: Count
    donated: tuple[str, ...]
    #: Without ``--compilation-cache``, the processes ran with the cache disabled; with it,
    #: this is the empty-cache round.
    cold: ColdRound = field(metadata=js(omit=True))
    cached: CachedStats
    pipelined: PipelinedStats
    dispatch: DispatchStats
    persistent_cache: PersistentCacheReport | None
    #: With ``--save`` or ``--baseline``: the rounds a latency gate judges (stored in the
    #: baseline file, not in the report).
    gate: GateRounds | None = field(default=None, metadata=js(omit=True))

    #: Where the executed inputs' values came from (``--inputs``, the spec's ``inputs:``).
    inputs: InputOrigins | None = None
    #: While loops of the program with no trip count XLA proved (their time follows the values).
    data_dependent_loops: Count = 0

    JSON_PROPERTIES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("cold", "cold_phases"),
        ("cold_processes", "cold_processes"),
        ("caveat", "caveat"),
    )

    @property
    def cold_phases(self) -> dict[str, PhaseStats]:
        """The cold round's statistics per phase."""
        return self.cold.phase_stats

    @property
    def cold_processes(self) -> ColdProcesses:
        """The cold round's processes."""
        return self.cold.processes

    @property
    def caveat(self) -> str | None:
        """Why the times hold for these inputs only, when the program has such loops."""
        if not self.data_dependent_loops or self.inputs is None:
            return None
        return data_dependence_caveat(self.data_dependent_loops, self.inputs)


@dataclass(frozen=True, slots=True)
class SpecFailure:
    """A spec (or case) of a sweep whose benchmark failed; the other specs still ran."""

    spec: str
    failure: CaseFailure = field(metadata=js("error"))

    @property
    def exit_code(self) -> int:
        """The exit code this failure alone would have ended the run with."""
        return int(self.failure.exit_code)


#: One spec's outcome: its measurements, or why it has none.
SpecOutcome = BenchResult | SpecFailure


@dataclass(frozen=True, slots=True)
class Environment:
    """Where the numbers were measured."""

    backend: str
    device: str
    device_kind: str
    jax_version: str
    jaxlib_version: str
    python_version: str
    platform: str
    cpu_count: Positive | None
    x64: bool


@dataclass(frozen=True, slots=True)
class BenchSettings:
    """How the run was configured."""

    cold_runs: Positive
    runs: Positive | None
    time_budget_s: Seconds
    seed: int
    max_input_bytes: Count
    compilation_cache: str | None


@dataclass(frozen=True, slots=True)
class BenchReport:
    """One ``jaxinspect bench`` run: the main spec and any ``--compare`` specs."""

    target: str
    #: ``None`` when no spec could be benchmarked.
    environment: Environment | None
    settings: BenchSettings
    result: SpecOutcome = field(metadata=js("bench"))
    compare: tuple[SpecOutcome, ...]
    notes: tuple[str, ...]
    #: (JSON path, reason) for every value that is null.
    unavailable: tuple[tuple[str, str], ...] = field(default=(), metadata=js(mapping=True))

    @property
    def outcomes(self) -> tuple[SpecOutcome, ...]:
        """Every spec's outcome, the main spec first."""
        return (self.result, *self.compare)

    @property
    def failures(self) -> tuple[SpecFailure, ...]:
        """The specs that could not be benchmarked, in order."""
        return tuple(o for o in self.outcomes if isinstance(o, SpecFailure))
