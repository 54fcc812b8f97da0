"""Immutable results of ``jaxinspect bench`` (its JSON: ``renderers/bench/jsondoc.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from jaxinspect.reports.failures import CaseFailure
from jaxinspect.reports.stages import InputOrigins, data_dependence_caveat

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
    """One cold phase over several fresh processes."""

    min_s: float
    median_s: float
    max_s: float
    samples_s: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Histogram:
    """Counts of samples per bin; ``edges_s`` has one more entry than ``counts``."""

    edges_s: tuple[float, ...]
    counts: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CachedStats:
    """Steady-state seconds per call, each call waited on with ``block_until_ready``."""

    min_s: float
    median_s: float
    mean_s: float
    p90_s: float
    p99_s: float
    max_s: float
    stdev_s: float
    count: int
    warmup: int
    #: Median seconds until a call returned, before waiting: the asynchronous dispatch cost.
    dispatch_median_s: float | None
    #: (p90 - p10) / median of the samples.
    spread: float
    noisy: bool
    noisy_reason: str | None
    histogram: Histogram


@dataclass(frozen=True, slots=True)
class PipelinedStats:
    """``calls`` dispatched back to back and waited on once, repeated ``rounds`` times."""

    per_call_s: float
    calls: int
    rounds: int
    round_per_call_s: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class DispatchStats:
    """Per-call cost of a trivial program (``x + 1`` on a float32[8]) on the same device."""

    tiny_call_s: float
    tiny_dispatch_s: float
    count: int


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


@dataclass(frozen=True, slots=True)
class PersistentCacheReport:
    """Cold starts with an empty persistent compilation cache, then with a populated one."""

    directory: str
    min_compile_time_secs: float
    min_entry_size_bytes: int
    #: Files one compile wrote into an empty cache, and their bytes.
    entries_written: int
    entry_bytes: int
    #: Whether the folder already held this program before the run (the priming process hit).
    already_populated: bool
    populated: ColdRound
    #: Median of the empty round minus median of the populated round, per phase.
    saved_s: tuple[tuple[str, float], ...]
    #: One line per process of the populated round that missed where a hit was expected.
    unexpected_misses: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GateRounds:
    """A latency gate's samples (``jaxinspect.bench.gate``), seconds per round: the fastest
    and the median of the target's calls, and the fastest call of a fixed reference program
    timed right after (a yardstick of the machine's speed)."""

    calls_per_round: int
    target_min_s: tuple[float, ...]
    target_median_s: tuple[float, ...]
    reference_min_s: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class BenchResult:
    """Every measurement for one spec of the target."""

    spec: str
    input_bytes: int
    donated: tuple[str, ...]
    #: Without ``--compilation-cache``, the processes ran with the cache disabled; with it,
    #: this is the empty-cache round.
    cold: ColdRound
    cached: CachedStats
    pipelined: PipelinedStats
    dispatch: DispatchStats
    persistent_cache: PersistentCacheReport | None
    #: With ``--save`` or ``--baseline``: the rounds a latency gate judges.
    gate: GateRounds | None = None
    #: Where the executed inputs' values came from (``--inputs``, the spec's ``inputs:``).
    inputs: InputOrigins | None = None
    #: While loops of the program with no trip count XLA proved (their time follows the values).
    data_dependent_loops: int = 0

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
    failure: CaseFailure

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
    cpu_count: int | None
    x64: bool


@dataclass(frozen=True, slots=True)
class BenchSettings:
    """How the run was configured."""

    cold_runs: int
    runs: int | None
    time_budget_s: float
    seed: int
    max_input_bytes: int
    compilation_cache: str | None


@dataclass(frozen=True, slots=True)
class BenchReport:
    """One ``jaxinspect bench`` run: the main spec and any ``--compare`` specs."""

    target: str
    #: ``None`` when no spec could be benchmarked.
    environment: Environment | None
    settings: BenchSettings
    result: SpecOutcome
    compare: tuple[SpecOutcome, ...]
    notes: tuple[str, ...]
    #: (JSON path, reason) for every value that is null.
    unavailable: tuple[tuple[str, str], ...] = ()

    @property
    def outcomes(self) -> tuple[SpecOutcome, ...]:
        """Every spec's outcome, the main spec first."""
        return (self.result, *self.compare)

    @property
    def failures(self) -> tuple[SpecFailure, ...]:
        """The specs that could not be benchmarked, in order."""
        return tuple(o for o in self.outcomes if isinstance(o, SpecFailure))
