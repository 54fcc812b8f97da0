"""Per-instruction cost of the optimized HLO, loop bodies multiplied by their trip counts."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jaxinspect.jsonfields import Count, Positive, js
from jaxinspect.xla.fusionsplit import CostShare, split_fusion
from jaxinspect.xla.hlotext import HloComputation, HloInstr, HloText, parse_module
from jaxinspect.xla.neighbours import Metadata, NeighbourMetadata
from jaxinspect.xla.opcache import OpCostCache
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.shapes import element_type, shape_bytes
from jaxinspect.xla.sourcemap import FrameTable, SourceLocation, parse_frame_table
from jaxinspect.xla.xlacost import UncostedError, XlaCost

if TYPE_CHECKING:
    from jaxinspect.xla.reconcile import CostReconciliation

#: Every kind of flag (``assumed-trip-count``: ``cost/loopcost.py``).
FLAG_KINDS = (
    "custom-call",
    "unknown-trip-count",
    "assumed-trip-count",
    "conditional",
    "unanalysed",
)
#: Flag kinds that make the loop-aware figure a lower bound.
LOWER_BOUND_KINDS = ("custom-call", "unknown-trip-count", "unanalysed")
#: Why a loop without a proved trip count is flagged.
UNKNOWN_TRIPS = "XLA proved no trip count: the body is counted once per run of the loop"
#: ``HloInstr.loop_runs`` order: a while loop's body, then its condition.
_ROLES = ("body", "condition")


@dataclass(frozen=True, slots=True)
class OpCost:
    """One top-level instruction of the entry computation or of a loop body."""

    name: str  # HLO instruction name.
    computation: str  # The entry computation or a loop body/condition.
    opcode: str
    shape: str  # Output shape as HLO prints it, with layout.
    dtype: str | None
    fusion_kind: str | None  # kLoop, kInput, kOutput or kCustom for a fusion.
    #: Opcodes inside a fusion, with counts.
    fused_ops: tuple[tuple[str, Positive], ...] = field(metadata=js(mapping=True))
    custom_call_target: str | None
    #: Executions per program run: the product of the enclosing loops' trip counts (an
    #: unknown trip count counts 1).
    runs: Positive
    per_run: XlaCost | None  # XLA's figures for one execution; null: XLA does not count it.
    input_bytes: Count  # Bytes of the distinct operands.
    output_bytes: Count
    op_name: str | None  # JAX's op_name metadata, with named_scope names.
    #: The innermost frame under ``cost.user_code.roots``; else the innermost frame outside
    #: JAX, jaxlib, jaxinspect and its harness; null when there is none (see created_by_xla).
    source: SourceLocation | None
    #: A fusion's FLOPs divided among its fused instructions (empty: all at ``source``).
    shares: tuple[CostShare, ...] = field(default=(), metadata=js(omit=True))
    #: The instruction has no source metadata, and no neighbour lent it any: XLA made it
    #: (inserted copies, backward convolutions).
    created_by_xla: bool = False
    #: The neighbouring instruction whose op_name and source this one took, having no
    #: metadata of its own (XLA stripped it, e.g. a rewritten dot); null when they are its
    #: own. Rule in docs/cost.md (``xla/neighbours.py``).
    source_from: str | None = None
    #: The while loops it runs in, outermost first: (loop instruction, "body" or "condition").
    loops: tuple[tuple[str, str], ...] = field(default=(), metadata=js(omit=True))

    @property
    def total(self) -> XlaCost | None:
        """Cost over the whole program run (``per_run`` x ``runs``)."""
        if self.per_run is None or self.runs == 1:  # most ops run once: no new object
            return self.per_run
        return self.per_run.scaled(self.runs)


@dataclass(frozen=True, slots=True)
class LoopInfo:
    """A while loop: its computations, trip count and how often the loop itself runs."""

    name: str = field(metadata=js("instruction"))
    computation: str
    body: str
    condition: str
    #: XLA's known_trip_count; null when unknown (the body is then counted once).
    trip_count: Count | None
    #: How often the loop itself starts per program run (assumed trips of enclosing loops
    #: included).
    runs: Positive
    source: SourceLocation | None
    #: The loops it runs in, outermost first, as ``OpCost.loops``.
    enclosing: tuple[tuple[str, str], ...] = field(default=(), metadata=js(omit=True))
    #: ``--assume-trips``: the trip count assumed for a loop XLA could not count.
    assumed_trips: Positive | None = None
    #: One trip: the body once and the condition once, inner loops at their trip counts
    #: (``cost/loopcost.py``); ``None`` before it is computed.
    per_trip: XlaCost | None = None
    #: Some op of the loop is not counted (a custom call...): ``per_trip`` is a lower bound.
    per_trip_lower_bound: bool = False

    @property
    def trips(self) -> int | None:
        """The trip count counted with: proved, else assumed, else ``None`` (counted once)."""
        return self.trip_count if self.trip_count is not None else self.assumed_trips


@dataclass(frozen=True, slots=True)
class CostFlag:
    """An instruction whose cost is not (fully) in the totals, and why."""

    kind: str = field(metadata=js(schema={"enum": list(FLAG_KINDS)}))
    instruction: str
    computation: str
    #: A short sentence shared by every instruction flagged for the same cause (grouped on).
    reason: str
    #: What is particular to this instruction (XLA's own message), else ``reason`` again.
    detail: str


@dataclass(frozen=True, slots=True)
class ProgramCost:
    """Per-op costs of one optimized module and their totals."""

    ops: tuple[OpCost, ...]
    loops: tuple[LoopInfo, ...]
    flags: tuple[CostFlag, ...]
    #: SPMD partitions of the module: above 1, every figure is per device, not global.
    partitions: int = 1
    #: Why ``counted_once`` differs from the backend's ``cost_analysis()``; ``None`` when
    #: they agree or it was not asked (``xla/reconcile.py``).
    reconciliation: CostReconciliation | None = None

    @property
    def loop_aware(self) -> XlaCost:
        """Sum over ops of cost x runs: each loop body counted as often as it runs."""
        return _sum(op.total for op in self.ops)

    @property
    def counted_once(self) -> XlaCost:
        """Sum over ops, each counted once: XLA's own way of adding up a module."""
        return _sum(op.per_run for op in self.ops)

    @property
    def lower_bound(self) -> bool:
        """True when some work is left out of the totals (custom calls, unknown trip counts)."""
        return any(flag.kind in LOWER_BOUND_KINDS for flag in self.flags)


def _sum(costs: Any) -> XlaCost:
    # Three running sums in the order ``XlaCost.plus`` would add them (the same figures),
    # without an object per op.
    flops = transcendentals = bytes_accessed = 0.0
    for cost in costs:
        if cost is not None:
            flops += cost.flops
            transcendentals += cost.transcendentals
            bytes_accessed += cost.bytes_accessed
    return XlaCost(flops, transcendentals, bytes_accessed)


def analyse_module(
    text: str, client: Any, user: UserCode, *, split_fusions: bool = True
) -> tuple[ProgramCost, FrameTable]:
    """Cost every instruction of a module printed with metadata and large constants.

    Args:
        text: ``HloModule.to_string`` output (metadata and frame tables included).
        client: The backend client whose cost model XLA applies.
        user: Whose frames are the user's (``--user-code``) and which are libraries.
        split_fusions: Also cost each fused instruction, to share a fusion's FLOPs among
            source lines (not needed for totals; about doubles the work).
    """
    hlo = parse_module(text)
    frames = parse_frame_table(text)
    walker = _Walker(hlo, frames, client, user, split_fusions)
    walker.walk(hlo.entry, 1, ())
    partitions = re.search(r"\bnum_partitions=(\d+)", hlo.header)
    program = ProgramCost(
        tuple(walker.ops),
        tuple(walker.loops),
        tuple(walker.flags),
        int(partitions.group(1)) if partitions else 1,
    )
    return program, frames


class _Walker:
    """Depth-first walk from the entry into loop bodies, accumulating rows."""

    def __init__(
        self,
        hlo: HloText,
        frames: FrameTable,
        client: Any,
        user: UserCode,
        split_fusions: bool,
    ) -> None:
        self.hlo, self.frames, self.client, self.user = hlo, frames, client, user
        self.split_fusions = split_fusions
        self.xla = OpCostCache(hlo, client)  # each distinct instruction costed once
        self.metadata = NeighbourMetadata(hlo)  # metadata-less instructions borrow
        self.ops: list[OpCost] = []
        self.loops: list[LoopInfo] = []
        self.flags: list[CostFlag] = []
        self._fused_counts: dict[int, tuple[tuple[str, int], ...]] = {}  # structure -> counts

    def walk(self, comp: HloComputation, runs: int, path: tuple[tuple[str, str], ...]) -> None:
        for instr in comp.instructions:
            if instr.opcode == "while":
                self._loop(comp, instr, runs, path)
            elif instr.opcode == "call" and instr.callee("to_apply"):
                self.walk(self.hlo.computation(str(instr.callee("to_apply"))), runs, path)
            elif instr.opcode != "parameter":
                self.ops.append(self._op(comp, instr, runs, path))

    def _loop(
        self, comp: HloComputation, instr: HloInstr, runs: int, path: tuple[tuple[str, str], ...]
    ) -> None:
        body, cond = str(instr.callee("body")), str(instr.callee("condition"))
        trips = instr.trip_count
        source = self._source(instr)
        self.loops.append(
            LoopInfo(instr.name, comp.name, body, cond, trips, runs, source, enclosing=path)
        )
        if trips is None:
            self._flag("unknown-trip-count", instr, comp, UNKNOWN_TRIPS)
        for (callee, executions), role in zip(instr.loop_runs(runs), _ROLES, strict=True):
            self.walk(self.hlo.computation(callee), executions, (*path, (instr.name, role)))

    def _op(
        self, comp: HloComputation, instr: HloInstr, runs: int, loops: tuple[tuple[str, str], ...]
    ) -> OpCost:
        per_run = self._xla_cost(comp, instr)
        if instr.opcode == "conditional":
            self._flag(
                "conditional",
                instr,
                comp,
                "data-dependent branch: XLA's figure is the costliest branch, per run",
            )
        inputs = sum(shape_bytes(comp.instruction(o).shape) for o in dict.fromkeys(instr.operands))
        metadata = self.metadata.of(comp, instr)
        return OpCost(
            name=instr.name,
            computation=comp.name,
            opcode=instr.opcode,
            shape=instr.shape,
            dtype=element_type(instr.shape),
            fusion_kind=instr.fusion_kind,
            fused_ops=self._fused_ops(instr),
            custom_call_target=instr.custom_call_target,
            runs=runs,
            per_run=per_run,
            input_bytes=inputs,
            output_bytes=shape_bytes(instr.shape),
            op_name=metadata.op_name,
            source=self.frames.user_location(metadata.frame_id, self.user),
            shares=self._shares(instr, per_run, metadata),
            created_by_xla=metadata.created_by_xla,
            source_from=metadata.borrowed_from,
            loops=loops,
        )

    def _shares(
        self, instr: HloInstr, per_run: XlaCost | None, metadata: Metadata
    ) -> tuple[CostShare, ...]:
        if (
            not self.split_fusions
            or instr.opcode != "fusion"
            or per_run is None
            or not per_run.flops + per_run.transcendentals
        ):
            return ()
        return split_fusion(self.xla, instr, self.frames, self.user, (self.metadata, metadata))

    def _xla_cost(self, comp: HloComputation, instr: HloInstr) -> XlaCost | None:
        """XLA's figure, or ``None`` (flagged) where it has none."""
        target = instr.custom_call_target
        try:
            cost = self.xla.cost(comp, instr)
        except UncostedError as exc:
            if instr.opcode.endswith("-done"):
                # The wait of an async pair (slice-done, copy-done on TPU): its work is the
                # -start's, which is costed; XLA cannot read the done alone.
                return XlaCost()
            if instr.opcode != "custom-call":
                self._flag("unanalysed", instr, comp, exc.reason, exc.detail)
                return None
            # XLA answers -1 ("unknown") for custom calls it cannot model (LAPACK on CPU).
            why = "XLA has no cost model for it"
            self._flag("custom-call", instr, comp, f"target {target!r}: {why}")
            return None
        except (KeyError, ValueError) as exc:  # the printed instruction did not parse back
            why = "jaxinspect could not wrap the instruction alone"
            self._flag("unanalysed", instr, comp, why, f"{type(exc).__name__}: {exc}"[:200])
            return None
        if instr.opcode == "custom-call" and not cost.flops:
            # Some backends model library calls (cuBLAS GEMMs on GPU); zero FLOPs means not.
            why = "XLA counts its bytes but no FLOPs"
            self._flag("custom-call", instr, comp, f"target {target!r}: {why}")
        return cost

    def _flag(
        self, kind: str, instr: HloInstr, comp: HloComputation, reason: str, detail: str = ""
    ) -> None:
        self.flags.append(CostFlag(kind, instr.name, comp.name, reason, detail or reason))

    def _fused_ops(self, instr: HloInstr) -> tuple[tuple[str, int], ...]:
        callee = instr.callee("calls") if instr.opcode == "fusion" else None
        if callee is None:
            return ()
        # Counted once per structure: the fusions of 96 identical layers are 96 copies of
        # each fused computation, whose opcodes their structure spells.
        structure = self.xla.structure(callee)
        known = self._fused_counts.get(structure)
        if known is None:
            counts = Counter(
                i.opcode
                for i in self.hlo.computation(callee).instructions
                if i.opcode != "parameter"
            )
            known = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
            self._fused_counts[structure] = known
        return known

    def _source(self, instr: HloInstr) -> SourceLocation | None:
        return self.frames.user_location(instr.stack_frame_id, self.user)
