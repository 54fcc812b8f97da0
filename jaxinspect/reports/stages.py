"""Immutable report objects: everything a run found, and the one JSON shape they serialize to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jaxinspect.reports.sections import IR_STAGES

#: Version of the JSON document; bump on any incompatible change of paths or meanings.
SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class ArgInfo:
    """One leaf or static value of the call, as the function saw it."""

    path: str
    kind: str  # "array", "key" or "static"
    dtype: str | None = None
    shape: tuple[int, ...] | None = None
    weak_type: bool = False
    value: str | None = None  # repr of a static value


@dataclass(frozen=True, slots=True)
class StageText:
    """One IR stage: its text and a histogram of its operations."""

    name: str
    text: str
    op_counts: tuple[tuple[str, int], ...]

    @property
    def line_count(self) -> int:
        """Number of lines in ``text``."""
        return self.text.count("\n") + (0 if self.text.endswith("\n") else 1)


@dataclass(frozen=True, slots=True)
class LoopAwareCost:
    """jaxinspect's totals: XLA's per-instruction costs, while bodies x known trip counts."""

    flops: float
    transcendentals: float
    bytes_accessed: float
    #: True when work is left out (custom calls, unknown trip counts): a lower bound.
    lower_bound: bool
    #: ``"name (kind)"`` of each instruction not fully counted.
    not_counted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CostSummary:
    """XLA's cost analysis of the compiled executable, as JAX reports it (missing keys are 0)."""

    flops: float | None
    transcendentals: float | None
    bytes_accessed: float | None
    arithmetic_intensity: float | None
    raw: tuple[tuple[str, float], ...] = ()
    #: Loop-aware figures beside JAX's own; ``None`` when the HLO could not be analysed.
    loop_aware: LoopAwareCost | None = None


@dataclass(frozen=True, slots=True)
class BufferAlias:
    """One output that reuses a (donated) input buffer, from the HLO's ``input_output_alias``."""

    output: str  # output pytree path, e.g. "result['w']"
    parameter: int  # HLO entry parameter number
    argument: str | None  # the input leaf, e.g. "params['w']"; None if it cannot be mapped
    kind: str  # "may-alias" or "must-alias"


@dataclass(frozen=True, slots=True)
class MemorySummary:
    """``compiled.memory_analysis()``, in bytes; ``None`` where the backend does not report it."""

    argument_bytes: int | None
    output_bytes: int | None
    temp_bytes: int | None
    alias_bytes: int | None
    generated_code_bytes: int | None
    peak_bytes: int | None
    #: argument + output + temp - alias: an upper bound computed by jaxinspect, labelled as such.
    derived_peak_bytes: int | None
    #: The ``host_*`` fields of ``CompiledMemoryStats`` (host-offloaded buffers), same rules.
    host_argument_bytes: int | None = None
    host_output_bytes: int | None = None
    host_temp_bytes: int | None = None
    host_alias_bytes: int | None = None
    host_generated_code_bytes: int | None = None
    #: Arguments the spec donated (``donate:``), by parameter name.
    donated: tuple[str, ...] = ()
    #: Outputs that XLA placed in input buffers; a donated leaf missing here was not reused.
    aliases: tuple[BufferAlias, ...] = ()


@dataclass(frozen=True, slots=True)
class CallTimings:
    """Seconds per call of the cached executable over ``runs`` calls."""

    median_s: float
    min_s: float
    max_s: float
    runs: int


@dataclass(frozen=True, slots=True)
class Timings:
    """Seconds spent in each step, measured with ``time.perf_counter``."""

    trace_s: float | None = None
    lower_s: float | None = None
    compile_s: float | None = None
    first_call_s: float | None = None
    cached_call: CallTimings | None = None


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
    schema_version: int = field(default=SCHEMA_VERSION)
    #: What was compiled, as Python: ``jit(vmap(grad(loss_fn, argnums=0), in_axes=(None, 0)))``.
    composition: str | None = None

    def stage(self, name: str) -> StageText | None:
        """The IR stage called ``name``, if it ran."""
        return next((s for s in self.stages if s.name == name), None)

    def reason(self, path: str) -> str | None:
        """Why the value at JSON ``path`` is null, if it is."""
        return dict(self.unavailable).get(path)


def report_to_dict(report: InspectionReport) -> dict[str, Any]:
    """The report as the JSON document described by ``schemas/stages.schema.json``."""
    stages: dict[str, Any] = {}
    for name in IR_STAGES:
        stage = report.stage(name)
        stages[name] = (
            None
            if stage is None
            else {
                "text": stage.text,
                "line_count": stage.line_count,
                "op_counts": dict(stage.op_counts),
            }
        )
    return {
        "schema_version": report.schema_version,
        "target": report.target,
        "function": report.function_name,
        "composition": report.composition,
        "backend": report.backend,
        "devices": list(report.devices),
        "jax_version": report.jax_version,
        "jaxlib_version": report.jaxlib_version,
        "x64": report.x64,
        "args": [_arg_to_dict(a) for a in report.args],
        "stages": stages,
        "cost": _cost_to_dict(report.cost),
        "memory": _memory_to_dict(report.memory),
        "timings": _timings_to_dict(report.timings),
        "unavailable": dict(report.unavailable),
    }


def _arg_to_dict(arg: ArgInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"path": arg.path, "kind": arg.kind}
    if arg.kind == "static":
        out["value"] = arg.value
    else:
        out.update(dtype=arg.dtype, shape=list(arg.shape or ()), weak_type=arg.weak_type)
    return out


def _cost_to_dict(cost: CostSummary | None) -> dict[str, Any] | None:
    if cost is None:
        return None
    return {
        "flops": cost.flops,
        "transcendentals": cost.transcendentals,
        "bytes_accessed": cost.bytes_accessed,
        "arithmetic_intensity": cost.arithmetic_intensity,
        "xla_raw": dict(cost.raw),
        "loop_aware": None if cost.loop_aware is None else _loop_aware_to_dict(cost.loop_aware),
    }


def _loop_aware_to_dict(cost: LoopAwareCost) -> dict[str, Any]:
    return {
        "flops": cost.flops,
        "transcendentals": cost.transcendentals,
        "bytes_accessed": cost.bytes_accessed,
        "lower_bound": cost.lower_bound,
        "not_counted": list(cost.not_counted),
    }


def _memory_to_dict(memory: MemorySummary | None) -> dict[str, Any] | None:
    if memory is None:
        return None
    return {
        "argument_bytes": memory.argument_bytes,
        "output_bytes": memory.output_bytes,
        "temp_bytes": memory.temp_bytes,
        "alias_bytes": memory.alias_bytes,
        "generated_code_bytes": memory.generated_code_bytes,
        "peak_bytes": memory.peak_bytes,
        "derived_peak_bytes": memory.derived_peak_bytes,
        "host_argument_bytes": memory.host_argument_bytes,
        "host_output_bytes": memory.host_output_bytes,
        "host_temp_bytes": memory.host_temp_bytes,
        "host_alias_bytes": memory.host_alias_bytes,
        "host_generated_code_bytes": memory.host_generated_code_bytes,
        "donated": list(memory.donated),
        "input_output_aliases": [
            {"output": a.output, "parameter": a.parameter, "argument": a.argument, "kind": a.kind}
            for a in memory.aliases
        ],
    }


def _timings_to_dict(t: Timings) -> dict[str, Any]:
    cached = t.cached_call
    return {
        "trace_s": t.trace_s,
        "lower_s": t.lower_s,
        "compile_s": t.compile_s,
        "first_call_s": t.first_call_s,
        "cached_call_s": None if cached is None else cached.median_s,
        "cached_call": None
        if cached is None
        else {
            "median_s": cached.median_s,
            "min_s": cached.min_s,
            "max_s": cached.max_s,
            "runs": cached.runs,
        },
    }
