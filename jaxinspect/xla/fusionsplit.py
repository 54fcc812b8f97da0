"""Split a fusion's FLOPs among the fused instructions, so each source line gets its share."""

from __future__ import annotations

from dataclasses import dataclass

from jaxinspect.xla.hlotext import HloInstr
from jaxinspect.xla.neighbours import Metadata, NeighbourMetadata
from jaxinspect.xla.opcache import OpCostCache
from jaxinspect.xla.ownership import UserCode
from jaxinspect.xla.sourcemap import FrameTable, SourceLocation


@dataclass(frozen=True, slots=True)
class CostShare:
    """The fraction of a fusion's FLOPs and transcendentals one fused instruction accounts for."""

    instruction: str
    opcode: str
    source: SourceLocation | None
    op_name: str | None
    flops_fraction: float
    transcendentals_fraction: float
    #: The fused instruction has no source metadata: XLA made it.
    created_by_xla: bool = False


def split_fusion(
    xla: OpCostCache,
    fusion: HloInstr,
    frames: FrameTable,
    user: UserCode,
    metadata: tuple[NeighbourMetadata, Metadata] | None = None,
) -> tuple[CostShare, ...]:
    """Shares of ``fusion``'s cost, one per fused instruction that computes something.

    Each fused instruction is costed alone by XLA; the fusion's own figure (which XLA may
    count slightly differently as a whole) is then divided in those proportions, so shares
    always add up to the fusion's cost. Bytes are not split: a fusion reads its operands and
    writes its output once, at its root's source line. ``metadata``: the module's neighbour
    rule and the fusion's own metadata, for fused instructions XLA left without any.
    """
    callee = fusion.callee("calls")
    if callee is None:
        return ()
    comp = xla.hlo.computation(callee)
    parts = []
    # Parameters have no cost; nor has a custom call fused in: no share, not a wrong one.
    for instr, cost in zip(comp.instructions, xla.body_costs(comp), strict=True):
        if cost is not None and (cost.flops or cost.transcendentals):
            parts.append((instr, cost.flops, cost.transcendentals))
    flops = sum(p[1] for p in parts)
    transcendentals = sum(p[2] for p in parts)
    shares = []
    for instr, f, t in parts:
        own = Metadata(instr.op_name, instr.stack_frame_id)
        placed = own if metadata is None else metadata[0].of(comp, instr, metadata[1])
        shares.append(
            CostShare(
                instruction=instr.name,
                opcode=instr.opcode,
                source=frames.user_location(placed.frame_id, user),
                op_name=placed.op_name,
                flops_fraction=f / flops if flops else 0.0,
                transcendentals_fraction=t / transcendentals if transcendentals else 0.0,
                created_by_xla=placed.created_by_xla,
            )
        )
    return tuple(shares)
