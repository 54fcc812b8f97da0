"""XLA's cost of each distinct instruction, computed once and reused for every identical copy.

A model of 96 identical layers prints 96 copies of each layer's instructions, which differ
only in their names (``%fusion.12`` and ``%fusion.57``, ``%fused_computation.3`` and
``%fused_computation.40``). Wrapping each copy into its own module and having XLA parse and
cost it again made the per-op analysis grow with the layer count, not with the distinct work.

Here an instruction's structural key is its wrapped ROOT line and every computation it calls,
with names replaced by their order of first appearance and metadata dropped, plus its operand
shapes. Names never change what XLA's cost analysis counts, so two instructions with equal
keys get the same figures; XLA costs the first, and every copy reuses that figure.
"""

from __future__ import annotations

import re
from typing import Any

from jaxinspect.xla.hlotext import HloComputation, HloInstr, HloText, called_in
from jaxinspect.xla.xlacost import (
    SENTINEL,
    UncostedError,
    XlaCost,
    module_cost,
    strip_metadata,
    wrap_instruction,
    wrapped_root,
)

# Every name an instruction line binds or refers to (computations are keyed without their
# header line, whose parameter names and shapes repeat the parameter instructions).
_NAME = re.compile(r"(%[\w.\-]+)")

_Key = tuple[str, tuple[str, ...], tuple[int, ...]]


def canonical_names(text: str) -> str:
    """``text`` with each distinct name replaced by ``%<n>``, n its order of first appearance.

    Two texts that differ only in their names (a renaming, one to one) give the same result.
    """
    # A split with the name captured puts the names at the odd positions: renaming them in
    # a loop costs no Python call per name, as a ``sub`` callback would.
    parts = _NAME.split(text)
    seen: dict[str, str] = {}
    for i in range(1, len(parts), 2):
        parts[i] = seen.setdefault(parts[i], f"%{len(seen)}")
    return "".join(parts)


class OpCostCache:
    """XLA's per-instruction figures for one module, each distinct instruction costed once."""

    def __init__(self, hlo: HloText, client: Any) -> None:
        self.hlo, self.client = hlo, client
        self._costs: dict[_Key, XlaCost | UncostedError] = {}
        self._computation_ids: dict[str, int] = {}  # computation name -> structure id
        self._structures: dict[tuple[str, tuple[int, ...]], int] = {}
        self._bodies: dict[int, tuple[XlaCost | None, ...]] = {}  # structure id -> costs
        self._roots: dict[str, str] = {}  # renamed line -> renamed wrapped ROOT line
        #: XLA runs, and instructions answered from an earlier identical one (for benchmarks).
        self.costed = self.reused = 0

    def cost(self, comp: HloComputation, instr: HloInstr) -> XlaCost:
        """XLA's figure for one execution of ``instr`` (an instruction of ``comp``).

        Raises:
            UncostedError: XLA gave no figure (as ``module_cost``).
            KeyError, ValueError: The instruction cannot be wrapped alone (as
                ``wrap_instruction``).
        """
        key = self._key(comp, instr)
        known = self._costs.get(key)
        if isinstance(known, XlaCost):
            self.reused += 1
            return known
        if known is not None:
            self.reused += 1
            raise known
        self.costed += 1
        try:
            cost = module_cost(self.client, wrap_instruction(self.hlo, comp, instr))
        except UncostedError as exc:
            # XLA's parse and analysis messages name the instruction: those are asked again
            # for each copy, so each flag quotes its own names. A sentinel's message doesn't.
            if exc.reason == SENTINEL:
                self._costs[key] = exc
            raise
        self._costs[key] = cost
        return cost

    def body_costs(self, comp: HloComputation) -> tuple[XlaCost | None, ...]:
        """``cost`` of each instruction of ``comp`` in order; ``None`` for parameters and
        for instructions that cannot be wrapped or costed alone.

        Computed once per structure: a copy's instructions, position by position, have the
        keys of the first one's (a fusion repeated in every layer is split once).
        """
        structure = self._structure(comp.name)
        known = self._bodies.get(structure)
        if known is None:
            known = tuple(self._cost_or_none(comp, instr) for instr in comp.instructions)
            self._bodies[structure] = known
        return known

    def _cost_or_none(self, comp: HloComputation, instr: HloInstr) -> XlaCost | None:
        if instr.opcode == "parameter":
            return None
        try:
            return self.cost(comp, instr)
        except (KeyError, ValueError):  # UncostedError is a ValueError
            return None

    def _key(self, comp: HloComputation, instr: HloInstr) -> _Key:
        # The wrapped ROOT line is a function of the instruction's line up to names: lines
        # equal after renaming share it, so it is built (splitting the attributes) once per
        # distinct line, not once per layer's copy.
        line = canonical_names(strip_metadata(instr.text))
        root = self._roots.get(line)
        if root is None:
            root = canonical_names(strip_metadata(wrapped_root(comp, instr)[1]))
            self._roots[line] = root
        shapes = tuple(comp.instruction(name).shape for name in dict.fromkeys(instr.operands))
        calls = tuple(self._structure(name) for _, name in instr.called)
        return root, shapes, calls

    def structure(self, name: str) -> int:
        """An id shared by the computations equal to ``name`` up to names, callees included."""
        return self._structure(name)

    def _structure(self, name: str) -> int:
        """An id shared by the computations equal to ``name`` up to names, callees included."""
        known = self._computation_ids.get(name)
        if known is not None:
            return known
        body = strip_metadata(self.hlo.computation(name).text.partition("\n")[2])
        # Callees in order of their names' first appearance in the text, which is the order
        # ``canonical_names`` numbers them in; read off the text in one search rather than
        # instruction by instruction (most of a fused computation's lines call nothing).
        calls = tuple(self._structure(n) for _, n in called_in(body))
        shape = (canonical_names(body), calls)
        found = self._structures.setdefault(shape, len(self._structures))
        self._computation_ids[name] = found
        return found
