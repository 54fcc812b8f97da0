"""Immutable objects: everything one ``stages`` run found (its JSON: ``stages/jsondoc.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from jaxinspect.jsonfields import Count, NonNegative, Positive, Seconds, js
from jaxinspect.xla.collectivemodel import CollectiveSummary


@dataclass(frozen=True, slots=True)
class ArgInfo:
    """One leaf or static value of the call, as the function saw it."""

    path: str
    kind: str  # "array", "key" or "static"
    dtype: str | None = None
    shape: tuple[int, ...] | None = None
    weak_type: bool = False
    value: str | None = None  # repr of a static value
    #: How the executable splits it over the mesh (``P('data', None)``); ``None``: one device.
    sharding: str | None = None
    #: The part each device holds; ``None`` when a device holds it whole.
    shard_shape: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class OutputInfo:
    """One output leaf of the compiled program and how it is split over the devices."""

    path: str  # result, result[0], result['w'] ...
    dtype: str
    shape: tuple[Count, ...]
    #: How the executable splits the array over the mesh, as a PartitionSpec: ``P('data',
    #: None)``; ``P()`` is replicated. null: on one device (or not compiled yet).
    sharding: str | None = None
    #: The shape each device holds; null when a device holds the whole array on one device.
    shard_shape: tuple[Count, ...] | None = None


@dataclass(frozen=True, slots=True)
class StageText:
    """One IR stage: its text and a histogram of its operations."""

    #: The key of the stage in the document's ``stages`` object.
    name: str = field(metadata=js(omit=True))
    #: The IR exactly as JAX prints it.
    text: str
    #: Operation name -> count. jaxpr: primitives including nested jaxprs; stablehlo: MLIR
    #: ops; hlo: opcodes of non-fusion computations (a fusion counts once).
    op_counts: tuple[tuple[str, Positive], ...] = field(metadata=js(mapping=True))

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("line_count",)

    @property
    def line_count(self) -> Count:
        """Number of lines in ``text``."""
        return self.text.count("\n") + (0 if self.text.endswith("\n") else 1)


@dataclass(frozen=True, slots=True)
class LoopAwareCost:
    """jaxinspect's totals: XLA's per-instruction costs, while bodies x known trip counts."""

    flops: NonNegative
    transcendentals: NonNegative
    bytes_accessed: NonNegative
    #: True when work is left out (custom calls, unknown trip counts): a lower bound.
    lower_bound: bool
    #: ``'instruction (kind)'`` per instruction not fully counted: custom-call,
    #: unknown-trip-count, conditional, unanalysed.
    not_counted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CostSummary:
    """XLA's cost analysis of the compiled executable, as JAX reports it (missing keys are 0)."""

    #: ``compiled.cost_analysis()['flops']``, a missing key meaning 0 (loop bodies counted
    #: once).
    flops: float | None
    transcendentals: float | None
    bytes_accessed: float | None
    #: flops / bytes_accessed.
    arithmetic_intensity: float | None
    #: The whole ``cost_analysis()`` dict, as XLA returned it.
    raw: tuple[tuple[str, float], ...] = field(default=(), metadata=js("xla_raw", mapping=True))
    #: XLA's own estimate of one run's time, in seconds, as ``cost_analysis()['optimal_seconds']``
    #: (TPU); null where the backend gives none.
    optimal_seconds: float | None = None
    #: jaxinspect's figures beside JAX's own: XLA's per-instruction costs with each while body
    #: multiplied by its known trip count (or the one assumed with ``--assume-trips``), its
    #: condition by trips + 1 (the sum of ``cost.ops`` of the cost report). null (with a
    #: reason) when the optimized HLO could not be analysed. See docs/cost.md.
    loop_aware: LoopAwareCost | None = None


@dataclass(frozen=True, slots=True)
class BufferAlias:
    """One output that reuses a (donated) input buffer, from the HLO's ``input_output_alias``."""

    output: str  # Output pytree path, e.g. result['w'].
    parameter: Count  # HLO entry parameter number.
    argument: str | None  # The input leaf, e.g. params['w']; null if it cannot be mapped.
    kind: str  # may-alias or must-alias.


@dataclass(frozen=True, slots=True)
class LivePeak:
    """The peak: the most bytes live at one step of XLA's schedule, read off the buffer
    assignment of the run's one compilation (the figure ``memory`` and the report call peak).

    Attributes:
        bytes: Bytes of the device's memory (memory color 0) live at the peak step; values
            that share bytes (a result written over its operand) count once.
        step: The step of XLA's flattened schedule where it is reached (the first such).
        steps: Steps in the schedule.
        constant_bytes: Bytes of the constant allocations in the device's memory (closed-over
            arrays); ``memory_analysis()`` has no field for them.
        other_spaces: The bytes allocated in every other memory color (a TPU's on-chip vmem,
            color 1): not device memory, so not in the peak, but counted in some of XLA's own
            figures.
    """

    bytes: Count
    step: Count
    steps: Positive
    constant_bytes: Count
    other_spaces: tuple[SpaceBytes, ...] = ()


@dataclass(frozen=True, slots=True)
class SpaceBytes:
    """Bytes allocated in one memory space other than the device's memory (``LivePeak``)."""

    space: str  # e.g. "vmem (color 1)"
    bytes: Count


@dataclass(frozen=True, slots=True)
class MemorySummary:
    """``compiled.memory_analysis()``, in bytes; ``None`` where the backend does not report it."""

    argument_bytes: int | None
    output_bytes: int | None
    temp_bytes: int | None
    alias_bytes: int | None
    generated_code_bytes: int | None
    #: XLA's ``peak_memory_in_bytes`` (``memory_analysis()``), where the backend reports it;
    #: not jaxinspect's peak (``peak.bytes``, memory.peak.bytes of ``jaxinspect memory``): on
    #: CPU it leaves out the temp block, on a TPU it adds on-chip scratch (vmem, memory color
    #: 1).
    peak_bytes: int | None
    #: argument + output + temp + constants - alias: an upper bound computed by jaxinspect,
    #: labelled as such (constants only where ``peak`` is known: ``memory_analysis()`` has no
    #: field for them; ``derived_counts_constants`` says which).
    derived_peak_bytes: int | None
    #: ``CompiledMemoryStats.host_argument_size_in_bytes`` (host-offloaded buffers); null
    #: where the backend reports 0 or less.
    host_argument_bytes: int | None = None
    #: ``host_output_size_in_bytes``, same rule.
    host_output_bytes: int | None = None
    #: ``host_temp_size_in_bytes``, same rule.
    host_temp_bytes: int | None = None
    #: ``host_alias_size_in_bytes``, same rule.
    host_alias_bytes: int | None = None
    #: ``host_generated_code_size_in_bytes``, same rule.
    host_generated_code_bytes: int | None = None
    #: Arguments the spec donated (``donate:``), by parameter name.
    donated: tuple[str, ...] = ()
    #: Outputs that XLA placed in input buffers; a donated leaf missing here was not reused.
    aliases: tuple[BufferAlias, ...] = field(default=(), metadata=js("input_output_aliases"))
    #: Memory of one device of the kind compiled for, from the built-in device table.
    capacity_bytes: int | None = None
    #: Whether the peak (the buffer assignment's, else JAX's or the derived bound) fits in it.
    fits: bool | None = None
    #: Which peak the fit used: ``"jaxinspect"`` (``peak``), ``"jax"``, or ``"derived"`` where
    #: JAX's is below what is live for the whole run (the tables say so); ``None``: none known.
    #: Not in the JSON, which has every figure.
    peak_source: str | None = field(default=None, metadata=js(omit=True))
    #: The buffer assignment's peak (``None`` with a reason where XLA dumped none).
    peak: LivePeak | None = None
    #: Whether ``derived_peak_bytes`` counts the constants (read off the buffer assignment).
    derived_counts_constants: bool = False


@dataclass(frozen=True, slots=True)
class CallTimings:
    """Seconds per call of the cached executable over ``runs`` calls."""

    median_s: Seconds
    min_s: Seconds
    max_s: Seconds
    runs: Positive
    #: Every call's seconds, in order (for a histogram; the JSON keeps the statistics).
    samples: tuple[float, ...] = field(default=(), metadata=js(omit=True))


@dataclass(frozen=True, slots=True)
class InputOrigins:
    """Where the values of an executed run's inputs came from (``inputs:``, ``--inputs``).

    Attributes:
        source: ``random`` or ``factory``, as the spec or the command line asked.
        random: Arguments (or parts of one) given seeded random values.
        factory: Arguments given the arrays their ``from:`` factory returned.
    """

    source: str = field(metadata=js(schema={"enum": ["random", "factory"]}))
    random: tuple[str, ...] = ()
    factory: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """Which inputs were random and which came from factories, in one line."""
        parts = []
        if self.random:
            parts.append(f"random: {', '.join(self.random)}")
        if self.factory:
            parts.append(f"from factories: {', '.join(self.factory)}")
        return "; ".join(parts) or "no traced inputs"

    @property
    def values(self) -> str:
        """How the caveat names the values: "random", "the factory's values", or both."""
        if not self.factory:
            return "random"
        if not self.random:
            return "the factory's values"
        return f"the factory's values, random for {', '.join(self.random)}"


@dataclass(frozen=True, slots=True)
class Timings:
    """Seconds spent in each step, measured with ``time.perf_counter``."""

    trace_s: Seconds | None = None
    lower_s: Seconds | None = None
    compile_s: Seconds | None = None
    first_call_s: Seconds | None = None
    cached_call: CallTimings | None = None
    #: Where the executed inputs' values came from (the spec's ``inputs:``, ``--inputs``);
    #: null when nothing ran.
    inputs: InputOrigins | None = None
    #: While loops of the timed program with no trip count XLA proved: the call times depend
    #: on the input values. Null when nothing ran.
    data_dependent_loops: Count | None = None

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("cached_call_s", "caveat")

    @property
    def cached_call_s(self) -> Seconds | None:
        """Median of the cached calls, the figure most readers want (null: not run)."""
        return None if self.cached_call is None else self.cached_call.median_s

    @property
    def caveat(self) -> str | None:
        """Set when data_dependent_loops > 0: the time depends on the input values, and which
        values they were."""
        if not self.data_dependent_loops or self.inputs is None:
            return None
        return data_dependence_caveat(self.data_dependent_loops, self.inputs)


def data_dependence_caveat(loops: int, inputs: InputOrigins) -> str:
    """The sentence every timed command shows for a program with data-dependent loops."""
    what = "a while loop runs" if loops == 1 else f"{loops} while loops run"
    advice = ""
    if inputs.random and inputs.source == "random":
        advice = "; --inputs factory runs on the arrays `from:` factories return"
    return (
        f"the time depends on the input values; these were {inputs.values} "
        f"({what} as often as the values say{advice})"
    )


@dataclass(frozen=True, slots=True)
class InspectionReport:
    """Everything one ``stages`` run found; renderers only read it."""

    target: str
    function_name: str
    backend: str
    devices: tuple[str, ...]
    jax_version: str
    jaxlib_version: str
    x64: bool
    args: tuple[ArgInfo, ...]
    stages: tuple[StageText, ...]
    cost: CostSummary | None
    memory: MemorySummary | None
    timings: Timings
    #: (JSON path, reason) for every value that is null.
    unavailable: tuple[tuple[str, str], ...] = ()
    #: What was compiled, as Python: ``jit(vmap(grad(loss_fn, argnums=0), in_axes=(None, 0)))``.
    composition: str | None = None
    #: The devices' ``device_kind`` ("cpu", "TPU v5 lite", "NVIDIA H100 80GB HBM3").
    device_kind: str = ""
    #: The TPU slice or GPU target compiled for from this host (``v5e:2x2``, ``h100:8``);
    #: ``None``: local devices.
    topology: str | None = None
    #: What a compile for this target does not show (a GPU target: no autotuning), or ``None``.
    caveat: str | None = None
    #: The device mesh, axis name -> size, in order; ``None`` without one.
    mesh: tuple[tuple[str, int], ...] | None = None
    #: Output leaves with their shardings; empty before compilation.
    outputs: tuple[OutputInfo, ...] = ()
    #: The collectives of the compiled program (none on one device); ``None`` before compile.
    collectives: CollectiveSummary | None = None

    def stage(self, name: str) -> StageText | None:
        """The IR stage called ``name``, if it ran."""
        return next((s for s in self.stages if s.name == name), None)

    def reason(self, path: str) -> str | None:
        """Why the value at JSON ``path`` is null, if it is."""
        return dict(self.unavailable).get(path)
