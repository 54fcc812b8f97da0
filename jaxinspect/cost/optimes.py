"""Measured time per op: the compiled program run under JAX's profiler, joined to its HLO.

``jax.profiler.trace(..., create_perfetto_trace=True)`` writes a Perfetto trace whose complete
events (``ph == "X"``) carry ``args.hlo_module`` and ``args.hlo_op``: the optimized module's
name and the instruction (a fusion, a custom call, a copy) that ran, once per execution, per
device. The standard library reads it (gzip + json): no new dependency.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxinspect.cost.kernels import KernelJoin, KernelNames, module_kernel_names
from jaxinspect.pipeline.execute import time_calls
from jaxinspect.pipeline.timing.calls import CallInputs, ProgressSink, time_one_call
from jaxinspect.xla.hlotext import instruction_names

#: Runs timed under the profiler when the user gives no number.
DEFAULT_RUNS = 20
#: With no number given, a slow program is timed fewer times: about this many seconds of
#: runs per series (two series: outside and under the profiler), and never fewer than
#: ``FEW_RUNS``.
SLOW_SERIES_S = 10.0
FEW_RUNS = 3


@dataclass(frozen=True, slots=True)
class OpTimes:
    """Seconds per program run of each instruction that the trace timed (on one device).

    Attributes:
        seconds: Instruction name -> mean seconds per program run (loop bodies: every trip).
        program_runs: Executions of the module the trace holds (of the calls made under it).
        device: The device ordinal whose events were read (a sharded run has one per device).
        call_median_s: Median cached call outside the profiler: what the measured ops add up to.
        profiled_call_median_s: Median cached call under the profiler (its overhead shows).
    """

    seconds: dict[str, float]
    program_runs: int
    device: str
    call_median_s: float
    profiled_call_median_s: float

    @property
    def total_s(self) -> float:
        """Measured op time of one program run, summed."""
        return sum(self.seconds.values())

    @property
    def coverage(self) -> float:
        """Summed op time over the cached-call median (threads may overlap ops: above 1)."""
        return self.total_s / self.call_median_s if self.call_median_s > 0 else 0.0


class NoOpEvents(Exception):
    """The trace has no per-op events of the module (a backend whose trace does not name
    HLO ops); the reason is the message."""


def measure_op_times(
    compiled: Any,
    inputs: CallInputs,
    *,
    runs: int | None,
    target: str,
    module_name: str | None = None,
    progress: ProgressSink | None = None,
) -> OpTimes:
    """Call ``compiled`` ``runs`` times outside, then ``runs`` times under, the profiler.

    The entry for any caller holding an executable already (``htmlreport``, a script):
    nothing is compiled; the calls outside come first, warming the executable and giving
    the reference median. ``inputs`` is ``CallInputs(args, kwargs, donated_positions,
    donated_names)`` of concrete arrays (``split_donated`` makes it from a call plan);
    donated ones are copied afresh for every call.

    Args:
        runs: Calls per series; ``None``: ``DEFAULT_RUNS``, fewer for a slow program (about
            ``SLOW_SERIES_S`` per series, ``FEW_RUNS`` at least), judged by one call first.
        module_name: The optimized module's name as the trace gives it; by default read off
            ``compiled``.
        progress: Receives the progress of series expected to take a while.

    Raises:
        NoOpEvents: The trace names no instruction of the module.
        StageError: The executable raised.
        JaxInspectError: JAX gives no optimized module on this backend (``module_name`` unset).
    """
    import jax

    if module_name is None:
        from jaxinspect import jaxapi

        module_name = jaxapi.optimized_hlo_module(compiled, "the measured op times").name
    if runs is None:
        runs = adapted_runs(time_one_call(compiled, inputs, target=target))
    _, plain = time_calls(compiled, inputs, runs=runs, target=target, progress=progress)
    folder = Path(tempfile.mkdtemp(prefix="jaxinspect-profile-"))
    try:
        with jax.profiler.trace(str(folder), create_perfetto_trace=True):
            _, profiled = time_calls(compiled, inputs, runs=runs, target=target, progress=progress)
        events = _read_events(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    # Every call under the profiler runs the program once: the first call and ``runs`` more.
    seconds, program_runs, device = op_seconds(
        events, module_name, calls=runs + 1, module_text=_module_text(compiled)
    )
    return OpTimes(seconds, program_runs, device, plain.median_s, profiled.median_s)


def _module_text(compiled: Any) -> str:
    from jaxinspect import jaxapi

    return jaxapi.compiled_module_text(compiled, "the measured op times")


def adapted_runs(call_s: float) -> int:
    """Runs per series for a program whose one call took ``call_s`` seconds."""
    if call_s * DEFAULT_RUNS <= SLOW_SERIES_S:
        return DEFAULT_RUNS
    return max(FEW_RUNS, int(SLOW_SERIES_S / call_s))


def _read_events(folder: Path) -> list[dict[str, Any]]:
    traces = sorted(folder.glob("plugins/profile/*/perfetto_trace.json.gz"))
    if not traces:
        raise NoOpEvents("the profiler wrote no Perfetto trace")
    with gzip.open(traces[-1], "rt", encoding="utf-8") as handle:
        document = json.load(handle)
    events = document.get("traceEvents", []) if isinstance(document, dict) else document
    return [e for e in events if isinstance(e, dict)]


def op_seconds(
    events: list[dict[str, Any]],
    module_name: str,
    *,
    calls: int | None = None,
    module_text: str | None = None,
) -> tuple[dict[str, float], int, str]:
    """Mean seconds per program run of each op of ``module_name``, on its first device.

    Program runs are the distinct ``args.run_id`` of the events; ``calls`` (the calls made
    under the profiler) stands in where the events carry none.

    ``module_text`` (the module, printed), where given, joins a kernel event whose ``hlo_op``
    is no instruction of it (a GPU's CUDA graph) to the instruction that launched it, by the
    kernel's name (``cost/kernels.py``); a kernel name no instruction explains stays under
    its ``hlo_op``.

    Raises:
        NoOpEvents: No complete event names an op of the module.
    """
    by_device: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        args = event.get("args") or {}
        if event.get("ph") == "X" and args.get("hlo_module") == module_name and "hlo_op" in args:
            by_device[str(args.get("device_ordinal", "0"))].append(event)
    if not by_device:
        raise NoOpEvents(f"the trace has no per-op events of {module_name} on this backend")
    device = min(by_device, key=lambda d: (len(d), d))
    chosen = by_device[device]
    run_ids = {(e.get("args") or {}).get("run_id") for e in chosen} - {None}
    program_runs = len(run_ids) or calls or 1
    totals: dict[str, float] = defaultdict(float)
    kernels = None if module_text is None else _kernels_if_needed(chosen, module_text)
    if kernels is None:
        for event in chosen:
            totals[event["args"]["hlo_op"]] += float(event.get("dur", 0.0)) * 1e-6
    else:
        join = KernelJoin(kernels, (str(e.get("name")) for e in chosen))
        for event in sorted(chosen, key=lambda e: float(e.get("ts", 0.0))):  # launch order
            op = join.instruction(event["args"]["hlo_op"], str(event.get("name")))
            totals[op] += float(event.get("dur", 0.0)) * 1e-6
    return {op: total / program_runs for op, total in totals.items()}, program_runs, device


def _kernels_if_needed(events: list[dict[str, Any]], module_text: str) -> KernelNames | None:
    """The module's kernel names where an event's ``hlo_op`` is none of its instructions
    (read only then: a CPU trace names its instructions)."""
    defined = instruction_names(module_text)
    if all(event["args"]["hlo_op"] in defined for event in events):
        return None
    return module_kernel_names(module_text)


def measure_program(
    artifacts: Any,
    runs: int | None,
    reasons: list[tuple[str, str]],
    progress: ProgressSink | None = None,
) -> OpTimes | None:
    """Measured op times of an inspected run's executable, or ``None`` with the reason.

    The inputs are the run's own seeded inputs (``PreparedCall.concrete_inputs``); nothing is
    compiled again.

    Raises:
        StageError: The executable raised.
    """
    from jaxinspect.inputs.limits import DEFAULT_MAX_INPUT_BYTES
    from jaxinspect.pipeline.timing.calls import split_donated

    call, compiled = artifacts.call, artifacts.compiled
    why = None
    if compiled is None or call is None:
        why = "the program was not compiled"
    elif call.placement.topology is not None:
        from jaxinspect.topologies.gpu import target_phrase

        why = f"compiled for {target_phrase(call.placement.topology)}; nothing runs here"
    if why is not None:
        reasons.append(("cost.measured", why))
        return None
    try:
        with call.explained("drop --measure"):
            args, kwargs = call.concrete_inputs(0, DEFAULT_MAX_INPUT_BYTES)
            inputs = split_donated(call.plan, args, kwargs)
            return measure_op_times(
                compiled, inputs, runs=runs, target=call.target, progress=progress
            )
    except NoOpEvents as exc:
        reasons.append(("cost.measured", str(exc)))
        return None
