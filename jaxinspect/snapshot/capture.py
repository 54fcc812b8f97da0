"""Take a snapshot of one target from a single run of the pipeline (imports jax)."""

from __future__ import annotations

from jaxinspect import __version__, jaxapi
from jaxinspect.base.inspection import InspectionReport
from jaxinspect.inputs.spec import Spec
from jaxinspect.inputs.target import LoadedTarget
from jaxinspect.pipeline.stages import StageArtifacts
from jaxinspect.snapshot.model import (
    COST_KEYS,
    MEMORY_KEYS,
    OpCounts,
    Provenance,
    Snapshot,
    SnapshotHeader,
    SnapshotSummary,
    collective_totals,
    collectives_of,
)
from jaxinspect.snapshot.normalize import (
    hlo_parameter_names,
    normalize_hlo,
    normalize_jaxpr,
    normalize_stablehlo,
)
from jaxinspect.stages.runner import InspectOptions, run_inspection

# Sections of the one pipeline run a snapshot needs: every stage, cost and memory, no timings.
_SECTIONS = ("jaxpr", "stablehlo", "hlo", "ops", "cost", "memory")


def capture_snapshot(loaded: LoadedTarget, spec: Spec, backend: str | None = None) -> Snapshot:
    """Trace, lower and compile ``loaded`` once and build its snapshot.

    The persistent compilation cache is off for the run: its key ignores debug info, so a hit
    can return HLO printed with another file's paths and parameter names.

    Raises:
        SpecError: The spec does not fit the function.
        UsageError: The backend is unavailable.
        StageError: The function failed in a stage.
    """
    options = InspectOptions(backend=backend, sections=_SECTIONS, execute=False)
    with jaxapi.compilation_cache_disabled():
        report, artifacts = run_inspection(loaded, spec, options)
    return snapshot_of_run(report, artifacts, loaded.source_file)


def snapshot_of_run(
    report: InspectionReport, artifacts: StageArtifacts, source_file: str | None
) -> Snapshot:
    """The snapshot of a run that went up to compile (its stages report and JAX's objects):
    what ``jaxinspect snapshot`` stores and ``jaxinspect.diff`` compares."""
    raw_hlo = _optimized_hlo_text(artifacts)
    hlo_counts = dict(_stage_counts(report, "hlo"))
    collective_bytes: OpCounts | None = None
    if report.collectives is None:  # not reached: the snapshot sections run up to compile
        collectives = collectives_of(hlo_counts)
    else:
        collectives, collective_bytes = collective_totals(report.collectives)
    summary = SnapshotSummary(
        ops=tuple((s.name, s.op_counts) for s in report.stages),
        fusion_count=hlo_counts.get("fusion", 0),
        collectives=collectives,
        cost=_cost(report),
        memory=_memory(report),
        unavailable=_unavailable(report),
        collective_bytes=collective_bytes,
    )
    texts = (
        ("jaxpr", normalize_jaxpr(_stage_text(report, "jaxpr"))),
        ("stablehlo", normalize_stablehlo(_stage_text(report, "stablehlo"))),
        ("hlo", normalize_hlo(raw_hlo)),
    )
    provenance = Provenance(
        target=report.target,
        function=report.function_name,
        source_file=source_file,
        module_name=raw_hlo.split(",", 1)[0].removeprefix("HloModule ").strip() or None,
        parameter_names=hlo_parameter_names(raw_hlo),
        jaxinspect_version=__version__,
    )
    return Snapshot(_header(report), summary, texts, provenance)


def _optimized_hlo_text(artifacts: StageArtifacts) -> str:
    """The optimized module printed with every constant and without source metadata.

    ``compiled.as_text()`` elides large constants as ``{...}``, which would hide a changed
    weight matrix; printing the ``HloModule`` object ourselves shows them.
    """
    assert artifacts.compiled is not None  # the snapshot sections run up to compile
    module = jaxapi.optimized_hlo_module(artifacts.compiled, "the snapshot's hlo.txt")
    return jaxapi.hlo_module_text(module, large_constants=True, metadata=False)


def _header(report: InspectionReport) -> SnapshotHeader:
    device_kind = report.device_kind
    return SnapshotHeader(
        jax_version=report.jax_version,
        jaxlib_version=report.jaxlib_version,
        backend=report.backend,
        device_kind=device_kind,
        x64=report.x64,
    )


def _stage_text(report: InspectionReport, name: str) -> str:
    stage = report.stage(name)
    assert stage is not None  # the snapshot sections run every stage
    return stage.text


def _stage_counts(report: InspectionReport, name: str) -> OpCounts:
    stage = report.stage(name)
    return () if stage is None else stage.op_counts


def _unavailable(report: InspectionReport) -> tuple[tuple[str, str], ...]:
    # Only the reasons for values the summary holds, sorted as summary.json stores them.
    kept = {"cost", "memory"} | {f"cost.{k}" for k in COST_KEYS}
    kept |= {f"memory.{k}" for k in MEMORY_KEYS}
    return tuple(sorted((path, why) for path, why in report.unavailable if path in kept))


def _cost(report: InspectionReport) -> tuple[tuple[str, float | None], ...]:
    cost = report.cost
    if cost is None:
        return tuple((k, None) for k in COST_KEYS)
    return (
        ("flops", cost.flops),
        ("transcendentals", cost.transcendentals),
        ("bytes_accessed", cost.bytes_accessed),
    )


def _memory(report: InspectionReport) -> tuple[tuple[str, float | None], ...]:
    memory = report.memory
    if memory is None:
        return tuple((k, None) for k in MEMORY_KEYS)
    values = (
        memory.argument_bytes,
        memory.output_bytes,
        memory.temp_bytes,
        memory.alias_bytes,
        memory.peak_bytes,
        memory.generated_code_bytes,
    )
    return tuple(zip(MEMORY_KEYS, values, strict=True))
