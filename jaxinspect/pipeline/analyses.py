"""Read cost and memory analyses off a ``Compiled``: JAX's numbers, and what is missing."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jaxinspect import jaxapi
from jaxinspect.base.inspection import CostSummary, LivePeak, LoopAwareCost, MemorySummary

if TYPE_CHECKING:
    from jaxinspect.xla.breakdown import ProgramCost

Reasons = list[tuple[str, str]]


def _cpu_client_cost(compiled: Any) -> dict[str, float] | None:
    """XLA's HLO cost analysis of a GPU executable's optimized module, through the CPU client.

    A GPU executable compiled without a GPU (``--topology h100:8``) has no ``cost_analysis()``
    (``GetCostAnalysis is not supported``); the analysis itself is backend-independent, so the
    CPU client runs it on the module the GPU compiler produced. ``None`` for other backends.
    """
    import jax

    if jaxapi.compiled_platform(compiled) != "gpu":
        return None
    module = jaxapi.optimized_hlo_module(compiled, "the cost analysis")
    return jaxapi.hlo_cost_analysis(jax.devices("cpu")[0].client, module)


def collect_cost(
    compiled: Any, reasons: Reasons, program: ProgramCost | None = None
) -> CostSummary | None:
    """XLA's cost analysis; a key XLA leaves out means 0, a negative value is a sentinel (null).

    The loop-aware totals come from ``program`` (per-op costs already computed from this
    ``compiled``) or are computed here.
    """
    try:
        raw = compiled.cost_analysis()
    except Exception as exc:  # backends may raise NotImplementedError or runtime errors
        reasons.append(("cost", f"cost_analysis() failed on this backend: {exc}"))
        return None
    if isinstance(raw, list | tuple):  # older JAX returned one dict per device program
        raw = raw[0] if raw else None
    if not raw:
        raw = _cpu_client_cost(compiled)
    if not raw:
        reasons.append(("cost", "the backend returned no cost analysis"))
        return None
    values = {str(k): float(v) for k, v in raw.items()}

    def field(key: str, path: str) -> float | None:
        value = values.get(key, 0.0)
        if value < 0 or not math.isfinite(value):
            reasons.append((path, f"XLA returned the sentinel {value} for {key!r}"))
            return None
        return value

    flops = field("flops", "cost.flops")
    transcendentals = field("transcendentals", "cost.transcendentals")
    bytes_accessed = field("bytes accessed", "cost.bytes_accessed")
    intensity = None
    if flops is None or not bytes_accessed:
        reasons.append(("cost.arithmetic_intensity", "needs flops and a non-zero bytes_accessed"))
    else:
        intensity = flops / bytes_accessed
    optimal = values.get("optimal_seconds")
    if optimal is None or optimal < 0:
        # TPU compilers estimate the run time; CPU and GPU leave the key out (or give -1).
        reasons.append(("cost.optimal_seconds", "XLA gives no time estimate on this backend"))
        optimal = None
    return CostSummary(
        flops=flops,
        transcendentals=transcendentals,
        bytes_accessed=bytes_accessed,
        arithmetic_intensity=intensity,
        optimal_seconds=optimal,
        raw=tuple(sorted(values.items())),
        loop_aware=_loop_aware(
            compiled, reasons, program, (flops, transcendentals, bytes_accessed)
        ),
    )


# Opcodes that make XLA's whole-module totals differ from the work done: loop bodies counted
# once, branches, and calls into code XLA cannot cost.
_CONTROL_FLOW = frozenset({"kWhile", "kConditional", "kCustomCall", "kCall"})
#: How the module's text spells them (after the space that follows an instruction's shape).
_CONTROL_FLOW_SPELT = (" while(", " conditional(", " custom-call(", " call(")


def _loop_aware(
    compiled: Any,
    reasons: Reasons,
    program: ProgramCost | None,
    xla: tuple[float | None, float | None, float | None],
) -> LoopAwareCost | None:
    flops, transcendentals, bytes_accessed = xla
    if (
        program is None
        and flops is not None
        and transcendentals is not None
        and bytes_accessed is not None
        and not _has_control_flow(compiled)
    ):
        # Nothing repeats and nothing is left out, so the loop-aware totals are XLA's own;
        # skipping the per-op analysis keeps `stages` as fast as a plain jax.stages script.
        return LoopAwareCost(flops, transcendentals, bytes_accessed, lower_bound=False)
    from jaxinspect.pipeline.opcost import analyse_compiled, loop_aware_summary

    if program is None:
        try:
            program = analyse_compiled(compiled, split_fusions=False)
        except Exception as exc:  # a module text jaxinspect cannot parse must not sink the report
            reasons.append(("cost.loop_aware", f"the optimized HLO could not be analysed: {exc}"))
            return None
    return loop_aware_summary(program)


def _has_control_flow(compiled: Any) -> bool:
    modules = jaxapi.optimized_hlo_modules(compiled)
    if modules is None:  # no module objects on this backend: let the full analysis decide
        return True
    if len(modules) == 1:
        # Every instruction prints as `name = shape opcode(...)`: a printing that spells none
        # of these opcodes has none of them, and `stages` has printed the module already
        # (walking its 21,500 instructions at 96 transformer blocks took 20 ms).
        text = jaxapi.printed_module(compiled, "the loop-aware totals")
        if not any(spelling in text for spelling in _CONTROL_FLOW_SPELT):
            return False
    return any(
        instruction.opcode.name in _CONTROL_FLOW
        for module in modules
        for computation in module.computations()
        for instruction in computation.instructions()
    )


def collect_memory(
    compiled: Any,
    platform: str,
    reasons: Reasons,
    live: LivePeak | None = None,
    stats_of: Callable[[], Any] | None = None,
) -> MemorySummary | None:
    """``memory_analysis()`` in bytes, with fields the backend leaves unset as null, and the
    buffer assignment's peak ``live`` (whose constants the derived bound counts) where read.

    ``stats_of``: what gives ``compiled.memory_analysis()`` (and raises what it raises), where
    the caller asked for it beside other work; by default it is asked for here.
    """
    try:
        stats = compiled.memory_analysis() if stats_of is None else stats_of()
    except Exception as exc:
        reasons.append(("memory", f"memory_analysis() failed on this backend: {exc}"))
        return None
    if stats is None:
        reasons.append(("memory", "the backend returned no memory analysis"))
        return None

    def read(attr: str) -> int | None:
        value = getattr(stats, attr, None)
        return None if value is None else int(value)

    argument = read("argument_size_in_bytes")
    output = read("output_size_in_bytes")
    temp = read("temp_size_in_bytes")
    alias = read("alias_size_in_bytes")
    code = read("generated_code_size_in_bytes")
    if code is not None and code <= 0:
        # The CPU backend reports 0 even for large programs: it does not measure code size.
        reasons.append(
            ("memory.generated_code_bytes", f"the {platform} backend reports {code}, not a size")
        )
        code = None
    host: dict[str, int | None] = {}
    for field_name in ("argument", "output", "temp", "alias", "generated_code"):
        value = read(f"host_{field_name}_size_in_bytes")
        if value is not None and value <= 0:
            reasons.append(
                (
                    f"memory.host_{field_name}_bytes",
                    f"not reported by the {platform} backend (it reports {value})",
                )
            )
            value = None
        host[f"host_{field_name}_bytes"] = value
    peak = read("peak_memory_in_bytes")
    if peak is None or peak <= 0:
        reasons.append(("memory.peak_bytes", f"the {platform} backend does not report a peak"))
        peak = None
    derived = None
    if None not in (argument, output, temp, alias):
        # Closed-over arrays live in constant allocations, which memory_analysis() leaves
        # out of every field; only the buffer assignment says how large they are.
        constants = 0 if live is None else live.constant_bytes
        derived = max(0, (argument or 0) + (output or 0) + (temp or 0) + constants - (alias or 0))
    return MemorySummary(
        argument_bytes=argument,
        output_bytes=output,
        temp_bytes=temp,
        alias_bytes=alias,
        generated_code_bytes=code,
        peak_bytes=peak,
        derived_peak_bytes=derived,
        host_argument_bytes=host["host_argument_bytes"],
        host_output_bytes=host["host_output_bytes"],
        host_temp_bytes=host["host_temp_bytes"],
        host_alias_bytes=host["host_alias_bytes"],
        host_generated_code_bytes=host["host_generated_code_bytes"],
        peak=live,
        derived_counts_constants=live is not None,
    )
