"""The ``cost`` report as one JSON document: :class:`CostDocument`, encoded by ``jsonfields``
(schema: ``jaxinspect/schemas/cost.schema.json``, generated from the same type)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from jaxinspect.base.inspection import CostSummary, MemorySummary
from jaxinspect.cost.loopcost import AssumedTrips
from jaxinspect.cost.report import SORT_KEYS, CostReport, MeasuredCost, OpRow
from jaxinspect.jsonfields import Count, Positive, Seconds, encode_object, js
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.stages.jsondoc import Communication, RunFacts
from jaxinspect.stages.memoryfit import MemoryFit, PeakEstimate
from jaxinspect.xla.aggregate import CostGroup, FlagGroup
from jaxinspect.xla.breakdown import CostFlag, LoopInfo
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.profiles import DeviceProfile
from jaxinspect.xla.reconcile import CostReconciliation
from jaxinspect.xla.roofline import RooflinePoint
from jaxinspect.xla.xlacost import XlaCost

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "cost.schema.json"
SCHEMA_VERSION = 2

#: What every roofline figure is; repeated in the JSON so it travels with the numbers.
ROOFLINE_NOTE = (
    "A model, not a measurement: each op is assumed to run at the device's peak FLOP/s or "
    "peak bandwidth, whichever binds; times are lower bounds."
)

#: JAX's own figures when ``cost_analysis()`` failed (the reason is under ``unavailable``).
_NO_JAX_COST = CostSummary(None, None, None, None)


@dataclass(frozen=True, slots=True)
class FusionCounts:
    """The fusions of the program."""

    #: Fusion kind (kLoop, kInput, kOutput, kCustom) -> fusions of that kind.
    by_kind: tuple[tuple[str, Positive], ...] = field(metadata=js(mapping=True))
    count: Count


@dataclass(frozen=True, slots=True)
class CustomCall:
    """A custom call (LAPACK, a callback...): XLA has no cost for it."""

    instruction: str
    #: Its ``custom_call_target``.
    target: str | None


@dataclass(frozen=True, slots=True)
class RooflineSection:
    """The ops and the program placed on the roofline of ``--device``'s profile."""

    #: What every roofline figure is (the same sentence in every document).
    note: str
    device: DeviceProfile
    program: RooflinePoint | None
    #: The sum of every op's time lower bound: a tighter lower bound than ``program``'s.
    sum_of_op_lower_bounds_s: Seconds


@dataclass(frozen=True, slots=True)
class CostSection:
    """JAX's ``cost_analysis()`` (loop bodies counted once) and jaxinspect's figures: per op,
    grouped, loop-aware, reconciled and on the roofline."""

    jax: CostSummary = field(metadata=js(flatten=True))
    assumed_trips: tuple[AssumedTrips, ...] = field(
        metadata=js(
            doc="--assume-trips: each loop counted with an assumed trip count; non-empty means "
            "these totals (and every op's runs and shares) are an estimate."
        )
    )
    #: The totals without the assumptions (unknown loops counted once: a lower bound); null
    #: when nothing is assumed.
    proved: XlaCost | None
    reconciliation: CostReconciliation | None = field(
        metadata=js(
            doc="Why counted_once differs from JAX's cost_analysis() (the flops, "
            "transcendentals and bytes_accessed above), cause by cause: cost_analysis = "
            "counted_once + backend_model + one_by_one. Null when they agree (CPU and GPU "
            "programs without flags). See docs/cost.md."
        )
    )
    #: Sum of ``cost.ops`` with every op counted once: equals JAX's figures when nothing is
    #: flagged.
    counted_once: XlaCost
    #: Every instruction of the entry computation and of loop bodies and conditions, in
    #: ``--sort`` order; ops XLA does not count (counted false) come after every counted one,
    #: except under ``--sort measured``.
    ops: tuple[OpRow, ...]
    #: ``cost --measure``: the program run under JAX's profiler (null otherwise; the reason is
    #: under ``unavailable['cost.measured']``).
    measured: MeasuredCost | None
    #: The ``--sort`` key of ``ops``.
    sort: str = field(metadata=js(schema={"enum": list(SORT_KEYS)}))
    #: SPMD partitions (num_partitions) of the optimized module; above 1, every figure in this
    #: report (and JAX's own) is per device.
    partitions: Positive
    #: Groups by source line (``file:line``).
    by_line: tuple[CostGroup, ...]
    #: Groups by function (``function (file)``).
    by_function: tuple[CostGroup, ...]
    #: Groups by ``op_name`` scope path.
    by_scope: tuple[CostGroup, ...]
    #: Every while loop, with its trip count and the cost of one trip.
    loops: tuple[LoopInfo, ...]
    #: Instructions not (fully) in the totals: custom-call, unknown-trip-count,
    #: assumed-trip-count (a loop counted with ``--assume-trips``: an estimate), conditional,
    #: unanalysed.
    not_counted: tuple[CostFlag, ...]
    #: ``cost.not_counted`` grouped by kind and reason, largest group first.
    not_counted_groups: tuple[FlagGroup, ...]
    #: Whose frames were the user's when ops were put on source lines.
    user_code: UserCode
    fusions: FusionCounts
    #: Names of copy and transpose instructions.
    data_movement: tuple[str, ...]
    custom_calls: tuple[CustomCall, ...]
    #: The roofline of ``--device``'s profile; null without one.
    roofline: RooflineSection | None

    @classmethod
    def of(cls, report: CostReport) -> CostSection:
        """The ``cost`` object of ``report``'s document."""
        program = report.program
        jax = dataclasses.replace(report.xla or _NO_JAX_COST, loop_aware=report.loop_aware)
        return cls(
            jax=jax,
            assumed_trips=report.assumed_trips,
            proved=report.proved,
            reconciliation=program.reconciliation,
            counted_once=program.counted_once,
            ops=report.rows,
            measured=report.measured,
            sort=report.sort,
            partitions=program.partitions,
            by_line=report.by_line,
            by_function=report.by_function,
            by_scope=report.by_scope,
            loops=program.loops,
            not_counted=program.flags,
            not_counted_groups=report.flag_groups,
            user_code=report.user_code or UserCode(()),
            fusions=FusionCounts(report.fusion_kinds, len(report.fusions)),
            data_movement=tuple(op.name for op in report.data_movement),
            custom_calls=tuple(
                CustomCall(op.name, op.custom_call_target) for op in report.custom_calls
            ),
            roofline=_roofline(report),
        )


def _roofline(report: CostReport) -> RooflineSection | None:
    if report.profile is None or report.roofline_sum_s is None:  # both set with a profile
        return None
    return RooflineSection(
        ROOFLINE_NOTE, report.profile, report.program_roofline, report.roofline_sum_s
    )


@dataclass(frozen=True, slots=True)
class CostMemory:
    """The stages report's memory section (``compiled.memory_analysis()``) plus the peak used
    for fitting and the fit on ``--device``."""

    analysis: MemorySummary = field(metadata=js(flatten=True))
    #: The peak figure used for fitting, where it came from and why.
    peak_estimate: PeakEstimate | None
    #: The peak against ``--device``'s memory capacity; null without a capacity.
    fit: MemoryFit | None


@dataclass(frozen=True, slots=True)
class CostDocument:
    """The ``cost`` document: the run, its collectives, ``cost.*``, ``memory.*`` and the
    reasons for nulls."""

    run: RunFacts = field(metadata=js(flatten=True))
    # The program's collectives travel with its cost.
    communication: Communication = field(metadata=js(flatten=True))
    cost: CostSection
    memory: CostMemory | None
    #: Dotted JSON path -> why the value there is null.
    unavailable: tuple[tuple[str, str], ...] = field(metadata=js(mapping=True))

    @classmethod
    def of(cls, report: CostReport) -> CostDocument:
        """The document of ``report``."""
        source = report.source
        memory = source.memory
        return cls(
            run=RunFacts.of(source),
            communication=Communication.of(source),
            cost=CostSection.of(report),
            memory=None if memory is None else CostMemory(memory, report.peak, report.fit),
            unavailable=tuple({**dict(source.unavailable), **dict(report.unavailable)}.items()),
        )


def render_cost_json(report: CostReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(cost_to_dict(report))


def cost_to_dict(report: CostReport) -> dict[str, Any]:
    """The document: run facts, ``cost.*``, ``memory.*`` and the reasons for nulls."""
    document = encode_object(CostDocument.of(report))
    return {"schema_version": SCHEMA_VERSION, "command": "cost", **document}
