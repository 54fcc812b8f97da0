"""Source metadata for instructions XLA left without any, taken from their neighbours.

XLA drops the metadata of instructions it rewrites: the ``dot`` of a matrix-vector product
loses its ``op_name`` and ``stack_frame_id`` while the bitcast next to it (in the fusion that
consumes it) still says ``op_name="jit(loss)/dot_general" stack_frame_id=2``. Without a rule,
"(created by XLA)" took 100% of ``jnp.sum(jnp.tanh(X @ w))``.

The rule, for an instruction with neither an ``op_name`` nor a ``stack_frame_id``:

1. its operands in the same computation, in order: the first one that has a stack frame
   (its own, or one it took by this rule) gives its ``op_name`` and frame;
2. else its users in the same computation, in order; a user that is a fusion answers with
   the first instruction inside it that reads the matching fused parameter and has a frame
   (the consumer proper), else with the fusion's own metadata;
3. else, for an instruction inside a fused computation, the fusion instruction's;
4. else none: the instruction stays "(created by XLA)".

One forward pass (operands) and one backward pass (users) per computation: linear in the
module's size. Instructions that carry an ``op_name`` without a frame (parameters named
after arguments) keep what they have and lend nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxinspect.xla.hlotext import HloComputation, HloInstr, HloText


@dataclass(frozen=True, slots=True)
class Metadata:
    """The source metadata an instruction is placed with.

    Attributes:
        op_name: JAX's ``op_name`` (the jaxpr path).
        frame_id: Index into the module's ``StackFrames`` table.
        borrowed_from: The neighbour it came from; ``None`` when the instruction's own.
    """

    op_name: str | None
    frame_id: int | None
    borrowed_from: str | None = None

    @property
    def created_by_xla(self) -> bool:
        """No metadata of its own and none borrowed: XLA made it, and nothing says where."""
        return self.op_name is None and self.frame_id is None


def _own(instr: HloInstr) -> Metadata:
    return Metadata(instr.op_name, instr.stack_frame_id)


class NeighbourMetadata:
    """Metadata of every instruction of a module, neighbours lending to those without."""

    def __init__(self, hlo: HloText) -> None:
        self.hlo = hlo
        self._filled: dict[str, dict[str, Metadata]] = {}  # computation -> name -> borrowed
        self._readers: dict[str, dict[int, Metadata]] = {}  # fused computation -> parameter

    def of(self, comp: HloComputation, instr: HloInstr, fusion: Metadata | None = None) -> Metadata:
        """``instr``'s metadata in ``comp``; ``fusion``: the calling fusion's, for rule 3."""
        own = _own(instr)
        if not own.created_by_xla:
            return own
        borrowed = self._computation(comp).get(instr.name)
        if borrowed is not None:
            return borrowed
        if fusion is not None and fusion.frame_id is not None:
            source = fusion.borrowed_from or "the fusion"
            return Metadata(fusion.op_name, fusion.frame_id, source)
        return own

    def _computation(self, comp: HloComputation) -> dict[str, Metadata]:
        found = self._filled.get(comp.name)
        if found is None:
            found = self._filled[comp.name] = self._fill(comp)
        return found

    def _fill(self, comp: HloComputation) -> dict[str, Metadata]:
        missing = [i for i in comp.instructions if _own(i).created_by_xla]
        if not missing:
            return {}
        known: dict[str, Metadata] = {
            i.name: m for i in comp.instructions if (m := _own(i)).frame_id is not None
        }
        filled: dict[str, Metadata] = {}
        # Operands first: instructions are printed in an order where operands come first.
        for instr in missing:
            lender = next((o for o in instr.operands if o in known), None)
            if lender is not None:
                filled[instr.name] = known[instr.name] = _lent(known[lender], lender)
        users: dict[str, list[tuple[HloInstr, int]]] = {}
        for instr in comp.instructions:
            for index, operand in enumerate(instr.operands):
                users.setdefault(operand, []).append((instr, index))
        for instr in reversed(missing):
            if instr.name in filled:
                continue
            for user, index in users.get(instr.name, ()):
                lent = self._consumer(user, index, known)
                if lent is not None:
                    filled[instr.name] = known[instr.name] = lent
                    break
        return filled

    def _consumer(self, user: HloInstr, index: int, known: dict[str, Metadata]) -> Metadata | None:
        """What ``user`` lends to its operand ``index``: inside a fusion, the instruction
        reading that parameter; else the user's own (or borrowed) metadata."""
        callee = user.callee("calls") if user.opcode == "fusion" else None
        if callee is not None:
            inner = self._parameter_reader(self.hlo.computation(callee), index)
            if inner is not None:
                return inner
        found = known.get(user.name)
        return None if found is None else _lent(found, user.name)

    def _parameter_reader(self, fused: HloComputation, index: int) -> Metadata | None:
        readers = self._readers.get(fused.name)
        if readers is None:  # once per fused computation, however many operands ask
            readers = self._readers[fused.name] = _parameter_readers(fused)
        return readers.get(index)


def _parameter_readers(fused: HloComputation) -> dict[int, Metadata]:
    """Parameter number -> the metadata of the first instruction reading it that has a frame."""
    numbers = {
        i.name: int(i.literal.strip())
        for i in fused.instructions
        if i.opcode == "parameter" and i.literal.strip().isdigit()
    }
    readers: dict[int, Metadata] = {}
    for instr in fused.instructions:
        own = _own(instr)
        if own.frame_id is None:
            continue
        for operand in instr.operands:
            number = numbers.get(operand)
            if number is not None and number not in readers:
                readers[number] = _lent(own, instr.name)
    return readers


def _lent(metadata: Metadata, lender: str) -> Metadata:
    return Metadata(metadata.op_name, metadata.frame_id, metadata.borrowed_from or lender)
