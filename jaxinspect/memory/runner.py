"""Entry point of the ``memory`` report: a compiled program and its dump -> a ``MemoryReport``.

The compilation has already happened (with a dump folder, ``pipeline/dumps.py``); nothing here
compiles. ``build_memory_report`` is what the ``memory`` command and the HTML report call.
"""

from __future__ import annotations

from typing import Any

from jaxinspect import jaxapi
from jaxinspect.base.inspection import InspectionReport
from jaxinspect.memory.peak import analyse_dump_texts
from jaxinspect.memory.report import DeviceFit, MemoryPeak, MemoryReport, device_fit
from jaxinspect.pipeline.dumps import DumpedModule
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.profiles import DeviceProfile


def build_memory_report(
    source: InspectionReport,
    compiled: Any,
    dump: DumpedModule,
    *,
    profile: DeviceProfile | None = None,
    user: UserCode | None = None,
) -> MemoryReport:
    """The ``memory`` report of one compiled program from what its compilation dumped.

    Args:
        source: The stages report of the same run (target, devices, ``memory_analysis()``).
        compiled: The ``jax.stages.Compiled`` that wrote the dump (its optimized module gives
            opcodes and source lines).
        dump: Its files, read back (``pipeline/dumps.py``): the buffer assignment and live
            ranges are needed, the memory-usage report is compared when there is one.
        profile: ``--device``: the fit against the profile's capacity.
        user: Whose frames are source lines (default: any frame outside the libraries).

    Raises:
        ValueError: A dump text does not parse (a jaxinspect bug, or an XLA it does not know).
    """
    reasons: list[tuple[str, str]] = []
    peak: MemoryPeak | None = None
    if dump.buffer_assignment is None or dump.live_range is None:
        field = "buffer_assignment" if dump.buffer_assignment is None else "live_range"
        reasons.append(("memory.peak", dump.reason(field) or f"XLA wrote no {field}"))
    else:
        peak = analyse_dump_texts(
            dump.buffer_assignment,
            dump.live_range,
            jaxapi.compiled_module_text(compiled, "the memory report"),
            usage_report=dump.memory_usage_report,
            memory=source.memory,
            user=user,
        )
    fit = _fit(source, peak, profile, reasons)
    return MemoryReport(source, peak, profile, fit, tuple(reasons))


def _fit(
    source: InspectionReport,
    peak: MemoryPeak | None,
    profile: DeviceProfile | None,
    reasons: list[tuple[str, str]],
) -> DeviceFit | None:
    """``--device``'s capacity, else the compiled device's own (a TPU chip's HBM)."""
    if peak is None:
        reasons.append(("memory.fit", "no peak without a buffer assignment"))
        return None
    if profile is not None:
        if profile.memory_bytes is None:
            reasons.append(("memory.fit", f"the {profile.name} profile gives no memory capacity"))
            return None
        return device_fit(profile.name, profile.memory_bytes, peak.peak_bytes)
    capacity = None if source.memory is None else source.memory.capacity_bytes
    if capacity is None:
        reasons.append(("memory.fit", "no --device, and the device's capacity is not known"))
        return None
    return device_fit(source.device_kind, capacity, peak.peak_bytes)
