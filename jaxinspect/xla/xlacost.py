"""XLA's own cost accounting of single instructions, each wrapped as a one-instruction module."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from jaxinspect import jaxapi
from jaxinspect.jsonfields import NonNegative
from jaxinspect.xla.hlotext import HloComputation, HloInstr, HloText, join_attributes

# Attributes that name other instructions of the original computation, which the wrapped
# module does not have: XLA's parser rejects them ("instruction 'copy.15' is not defined").
# Ordering constraints change no instruction's cost.
_FOREIGN_ATTRIBUTES = frozenset({"control-predecessors"})
# Metadata points into frame tables the wrapped module does not carry; XLA would warn.
# (Runs of plain characters matched at once, not one alternation per character.)
_METADATA = re.compile(r', metadata=\{[^{}"]*(?:"(?:[^"\\]|\\.)*"[^{}"]*)*\}')

#: Keys of XLA's cost dict that jaxinspect reports per op.
FLOPS, TRANSCENDENTALS, BYTES = "flops", "transcendentals", "bytes accessed"


@dataclass(frozen=True, slots=True)
class XlaCost:
    """XLA's figures for one instruction, run once (missing keys are 0, as in cost_analysis)."""

    flops: NonNegative = 0.0
    transcendentals: NonNegative = 0.0
    bytes_accessed: NonNegative = 0.0

    def scaled(self, factor: float) -> XlaCost:
        """The cost of running ``factor`` times."""
        return XlaCost(
            self.flops * factor, self.transcendentals * factor, self.bytes_accessed * factor
        )

    def plus(self, other: XlaCost) -> XlaCost:
        """Sum of two costs."""
        return XlaCost(
            self.flops + other.flops,
            self.transcendentals + other.transcendentals,
            self.bytes_accessed + other.bytes_accessed,
        )


class UncostedError(ValueError):
    """XLA gave no cost for a wrapped instruction.

    ``reason`` is a short sentence shared by every instruction that failed the same way (the
    "not counted" table groups by it); ``detail`` is XLA's own first line, for JSON readers.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


#: ``UncostedError.reason`` values.
NOT_PARSED = "XLA could not read the instruction wrapped alone (a jaxinspect limitation)"
NOT_ANALYSED = "XLA's cost analysis failed on the instruction"
SENTINEL = "XLA's cost model has no figure for it (it returned a negative sentinel)"


def module_cost(client: Any, text: str) -> XlaCost:
    """XLA's ``HloCostAnalysis`` of a module given as text (through ``jaxapi``).

    Raises:
        UncostedError: XLA rejected the text or returned a sentinel (negative) value.
    """
    try:
        module = jaxapi.parse_hlo_module(text)
    except Exception as exc:  # XLA reports parse failures as runtime errors
        raise UncostedError(NOT_PARSED, _first_line(exc)) from exc
    return module_object_cost(client, module)


def module_object_cost(client: Any, module: Any) -> XlaCost:
    """``module_cost`` of an ``HloModule`` object (an executable's own, not parsed again).

    Raises:
        UncostedError: XLA's analysis failed or returned a sentinel (negative) value.
    """
    try:
        raw = jaxapi.hlo_cost_analysis(client, module)
    except Exception as exc:
        raise UncostedError(NOT_ANALYSED, _first_line(exc)) from exc
    values = [raw.get(key, 0.0) for key in (FLOPS, TRANSCENDENTALS, BYTES)]
    if any(v < 0 or not math.isfinite(v) for v in values):
        raise UncostedError(SENTINEL, f"flops, transcendentals, bytes = {values}")
    return XlaCost(*values)


def _first_line(exc: Exception) -> str:
    """The first non-empty line of XLA's message (the rest repeats the module text)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0][:200] if lines else type(exc).__name__


def wrap_instruction(hlo: HloText, comp: HloComputation, instr: HloInstr) -> str:
    """A module whose ENTRY holds ``instr`` alone, its operands turned into parameters.

    The computations it calls (fused computations, reducers...) are copied along, so XLA
    applies the same rules it applied to the instruction inside the whole program. Control
    predecessors (the copies XLA orders inside loop bodies) are dropped: they name
    instructions the wrapper does not hold and change no cost.
    """
    shapes, body = wrapped_root(comp, instr)
    signature = ", ".join(f"wrap_p{i}: {_no_layout(s)}" for i, s in enumerate(shapes))
    entry = f"ENTRY %wrapped ({signature}) -> {_no_layout(instr.shape)} {{"
    params = [f"  %wrap_p{i} = {shape} parameter({i})" for i, shape in enumerate(shapes)]
    called = [c.text for c in callees(hlo, instr)]
    text = "\n\n".join(["HloModule wrapped", *called, "\n".join([entry, *params, body, "}"])])
    return strip_metadata(text)


def wrapped_root(comp: HloComputation, instr: HloInstr) -> tuple[tuple[str, ...], str]:
    """The shapes of ``instr``'s distinct operands and its line as the wrapper's ROOT.

    Operands are renamed ``%wrap_p0``, ``%wrap_p1``... in order of first use; the line
    still carries metadata (``strip_metadata`` drops it).

    Raises:
        KeyError: An operand is not an instruction of ``comp``.
        ValueError: The attributes do not split into ``key=value`` pairs.
    """
    distinct = {name: i for i, name in enumerate(dict.fromkeys(instr.operands))}
    shapes = tuple(comp.instruction(name).shape for name in distinct)
    renamed = instr.literal or ", ".join(f"%wrap_p{distinct[n]}" for n in instr.operands)
    own = tuple(kv for kv in instr.attribute_items if kv[0] not in _FOREIGN_ATTRIBUTES)
    body = f"  ROOT %{instr.name} = {instr.shape} {instr.opcode}({renamed}){join_attributes(own)}"
    return shapes, body


def strip_metadata(text: str) -> str:
    """``text`` without ``metadata={...}`` attributes."""
    return _METADATA.sub("", text)


def callees(hlo: HloText, instr: HloInstr) -> list[HloComputation]:
    """Computations reachable from ``instr``, in the module's callee-first order."""
    wanted: set[str] = set()
    pending = [name for _, name in instr.called]
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for inner in hlo.computation(name).instructions:
            pending += [n for _, n in inner.called]
    return [hlo.computations[i] for i in sorted(hlo.position(name) for name in wanted)]


def _no_layout(shape: str) -> str:
    """Program-shape spelling of a shape: layouts ``{1,0}`` dropped, as the printer does."""
    out, depth = [], 0
    for ch in shape:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)
