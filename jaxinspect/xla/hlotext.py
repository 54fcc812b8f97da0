"""Parse the printed optimized HLO module into computations, instructions and attributes."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_COMMENT = re.compile(r"/\*.*?\*/")
_HEADER = re.compile(r"^(ENTRY )?%?([\w.\-]+) \(.*\{$")
_INSTRUCTION = re.compile(r"^\s+(ROOT )?%?([\w.\-]+) = (.*)$")
_OPCODE = re.compile(r"\s*([a-z][\w\-]*)\(")
#: An instruction's called computations: ``calls=%f``, ``body=%b``, ``branch_computations={...}``.
CALLED = re.compile(
    r"\b(calls|to_apply|condition|body|branch_computations|called_computations|"
    r"true_computation|false_computation)=(\{[^}]*\}|%?[\w.\-]+)"
)
_NAME = re.compile(r"%?([\w.\-]+)")
_OP_NAME = re.compile(r'metadata=\{[^{}]*?op_name="((?:[^"\\]|\\.)*)"')
_FRAME_ID = re.compile(r"metadata=\{[^{}]*?stack_frame_id=(\d+)")
_TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_FUSION_KIND = re.compile(r"\bkind=(k\w+)")
# Opcodes whose parentheses hold a literal (a value, a parameter number), not operands.
_LITERAL_OPERANDS = frozenset({"constant", "parameter"})
_TARGET = re.compile(r'custom_call_target="([^"]*)"')
_CLOSING = {"(": ")", "{": "}", "[": "]"}
#: An instruction whose shape is one array (no space, no parenthesis) and whose parentheses
#: hold no bracket or string: ROOT, name, shape, opcode, what the parentheses hold, the rest.
_SIMPLE = re.compile(r"\s+(ROOT )?%?([\w.\-]+) = ([^\s(]+) ([a-z][\w\-]*)\(([^(){}\[\]\"]*)\)(.*)")
#: Operands printed as names alone: ``%a, %b.1``.
_PLAIN_OPERANDS = re.compile(r"%[\w.\-]+(?:, %[\w.\-]+)*")
#: A character that the bracket walks below act on: without one, a split is a plain split.
_NESTING = re.compile(r'[(){}\[\]"]')
_SPECIAL = re.compile(r'[(){}\[\]",\\]')


@dataclass(frozen=True, slots=True)
class HloInstr:
    """One instruction line of the printed module."""

    name: str
    opcode: str
    shape: str
    operands: tuple[str, ...]
    attributes: str  # everything after the operand list
    literal: str  # the text in the parentheses of a constant or parameter, else ""
    is_root: bool
    text: str  # the whole line, comments removed
    # What the properties below find in ``attributes``, found on first use: the analyses ask
    # each instruction many times (a slots class has no ``__dict__`` for ``cached_property``).
    _called: tuple[tuple[str, str], ...] | None = field(
        default=None, init=False, compare=False, repr=False
    )
    _source: tuple[str | None, int | None] | None = field(
        default=None, init=False, compare=False, repr=False
    )

    @property
    def called(self) -> tuple[tuple[str, str], ...]:
        """(role, computation) pairs: ``calls``, ``body``, ``condition``, ``to_apply``..."""
        called = self._called
        if called is None:
            called = called_in(self.attributes)
            object.__setattr__(self, "_called", called)
        return called

    def callee(self, role: str) -> str | None:
        """The first computation called in ``role``, if any."""
        return next((name for r, name in self.called if r == role), None)

    @property
    def op_name(self) -> str | None:
        """JAX's ``op_name`` metadata (the jaxpr path, with ``named_scope`` names)."""
        return self._metadata()[0]

    @property
    def created_by_xla(self) -> bool:
        """No source metadata at all: XLA made the instruction (a backward convolution...)."""
        return self.op_name is None and self.stack_frame_id is None

    @property
    def stack_frame_id(self) -> int | None:
        """Index into the module's ``StackFrames`` table."""
        return self._metadata()[1]

    def _metadata(self) -> tuple[str | None, int | None]:
        """``(op_name, stack_frame_id)``, searched once."""
        if self._source is None:
            name = _OP_NAME.search(self.attributes)
            frame = _FRAME_ID.search(self.attributes)
            source = (
                None if name is None else name.group(1).replace('\\"', '"'),
                None if frame is None else int(frame.group(1)),
            )
            object.__setattr__(self, "_source", source)
            return source
        return self._source

    @property
    def trip_count(self) -> int | None:
        """A while loop's ``known_trip_count``, when XLA proved one."""
        match = _TRIP_COUNT.search(self.attributes)
        return None if match is None else int(match.group(1))

    def loop_runs(self, runs: int) -> tuple[tuple[str, int], ...]:
        """A while loop's body and condition, each with its executions per program run.

        ``runs``: executions of the loop itself. The condition runs once more than the body
        (the test that ends the loop). Without a proved trip count both count once per run
        of the loop: a lower bound, which callers flag.
        """
        trips = self.trip_count
        body, condition = str(self.callee("body")), str(self.callee("condition"))
        if trips is None:
            return ((body, runs), (condition, runs))
        return ((body, runs * trips), (condition, runs * (trips + 1)))

    @property
    def fusion_kind(self) -> str | None:
        """``kLoop``, ``kInput``, ``kOutput`` or ``kCustom`` for a fusion."""
        match = _FUSION_KIND.search(self.attributes)
        return match.group(1) if match and self.opcode == "fusion" else None

    @property
    def attribute_items(self) -> tuple[tuple[str, str], ...]:
        """``(key, value)`` of each ``, key=value`` after the operand list, in printed order."""
        return split_attributes(self.attributes)

    @property
    def custom_call_target(self) -> str | None:
        """The target of a ``custom-call`` (a LAPACK routine, a callback...)."""
        match = _TARGET.search(self.attributes)
        return None if match is None else match.group(1)


def called_in(text: str) -> tuple[tuple[str, str], ...]:
    """(role, computation) pairs of every computation ``text`` calls, in printed order:
    one instruction's attributes, or a computation's lines (metadata stripped)."""
    out: list[tuple[str, str]] = []
    for role, value in CALLED.findall(text):
        out += [(role, n) for n in _NAME.findall(value.strip("{}"))]
    return tuple(out)


@dataclass(frozen=True, slots=True)
class HloComputation:
    """One computation: its header line, instructions and printed text."""

    name: str
    is_entry: bool
    instructions: tuple[HloInstr, ...]
    text: str
    # Built once: every analysis looks operands up by name, and a scan per lookup made
    # walking a 96-layer module quadratic.
    _by_name: dict[str, HloInstr] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, HloInstr] = {}
        for instr in self.instructions:
            by_name.setdefault(instr.name, instr)  # the first, as a scan would find
        object.__setattr__(self, "_by_name", by_name)

    def instruction(self, name: str) -> HloInstr:
        """The instruction called ``name``; raises ``KeyError``."""
        return self._by_name[name]


@dataclass(frozen=True, slots=True)
class HloText:
    """A printed HLO module: computations in printed (callee-first) order and its header."""

    header: str
    computations: tuple[HloComputation, ...]
    # Name -> position in ``computations``, built once (lookups were a scan each).
    _positions: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        positions: dict[str, int] = {}
        for i, comp in enumerate(self.computations):
            positions.setdefault(comp.name, i)
        object.__setattr__(self, "_positions", positions)

    @property
    def entry(self) -> HloComputation:
        """The ENTRY computation."""
        return next(c for c in self.computations if c.is_entry)

    def computation(self, name: str) -> HloComputation:
        """The computation called ``name``; raises ``KeyError``."""
        return self.computations[self._positions[name]]

    def position(self, name: str) -> int:
        """Where computation ``name`` is printed (callees come first); raises ``KeyError``."""
        return self._positions[name]


# A while instruction's line: `%name = shape while(...), ..., backend_config=...`.
_WHILE_LINE = re.compile(r"=\s*\S.*?\bwhile\(")


def unproved_while_loops(text: str) -> int:
    """While loops of a printed module with no ``known_trip_count``: each runs as often as
    its inputs' values say. A line scan, so a run that parses nothing pays no parse; the
    regular expression only sees lines holding ``while(`` (its lazy ``.*?`` walked every
    character of all 32,000 lines of 96 layers: a tenth of a second per 48 layers)."""
    return sum(
        1
        for line in text.splitlines()
        if "while(" in line and _WHILE_LINE.search(line) and not _TRIP_COUNT.search(line)
    )


# The last module parsed is kept: a report reads the same printed module for its memory
# timeline and its graph, and parsing 96 layers takes a second. ``HloText`` is immutable.
@functools.lru_cache(maxsize=1)
def parse_module(text: str) -> HloText:
    """Split a module printed by ``HloModule.to_string`` into computations.

    Raises:
        ValueError: The text has no ENTRY computation or an instruction does not parse.
    """
    lines = text.splitlines()
    header = lines[0] if lines else ""
    comps: list[HloComputation] = []
    for name, is_entry, block in _computation_blocks(lines):
        instrs = tuple(parse_instruction(b) for b in block[1:-1] if b.strip())
        comps.append(HloComputation(name, is_entry, instrs, "\n".join(block)))
    if not any(c.is_entry for c in comps):
        raise ValueError("no ENTRY computation in the HLO text")
    return HloText(header, tuple(comps))


#: An instruction's line anywhere in a module's text, its name captured (``_INSTRUCTION``
#: matches one line and parses it).
_INSTRUCTION_NAME = re.compile(r"^[ \t]+(?:ROOT )?%?([\w.\-]+) = ", re.MULTILINE)


def instruction_names(text: str) -> frozenset[str]:
    """The names the instructions of a printed module define, as ``parse_module`` reads them,
    found by one scan of the text and no parse."""
    return frozenset(_INSTRUCTION_NAME.findall(text))


def count_instructions(text: str) -> int:
    """Instructions in every computation of a printed module, as ``parse_module`` finds them.

    Reads each line once and parses none: for counting the module after every XLA pass.

    Raises:
        ValueError: The text has no ENTRY computation or a line in a computation is not an
            instruction.
    """
    count, entry = 0, False
    for _, is_entry, block in _computation_blocks(text.splitlines()):
        entry |= is_entry
        for line in block[1:-1]:
            if not line.strip():
                continue
            if not _INSTRUCTION.match(line):
                raise ValueError(f"not an HLO instruction: {line[:120]}")
            count += 1
    if not entry:
        raise ValueError("no ENTRY computation in the HLO text")
    return count


def _computation_blocks(lines: list[str]) -> Iterator[tuple[str, bool, list[str]]]:
    """``(name, is_entry, lines from the header to the closing brace)`` of each computation."""
    current: tuple[str, bool, list[str]] | None = None
    for line in lines:
        if current is None:
            match = _HEADER.match(line)
            if match and not line.startswith((" ", "HloModule")):
                current = (match.group(2), bool(match.group(1)), [line])
            continue
        current[2].append(line)
        if line == "}":
            yield current
            current = None


def parse_instruction(line: str) -> HloInstr:
    """Parse ``[ROOT] %name = SHAPE opcode(operands), attributes``.

    Raises:
        ValueError: The line is not an instruction.
    """
    # Most lines (an array shape, operands that are plain names) in one match; the others,
    # and anything this match is not sure of, take the general walk below.
    fast = None if "/*" in line else _SIMPLE.match(line)
    if fast is not None:
        root, name, shape, opcode, inside, attributes = fast.groups()
        if opcode in _LITERAL_OPERANDS:
            return HloInstr(name, opcode, shape, (), attributes, inside, bool(root), line.strip())
        if not inside:
            return HloInstr(name, opcode, shape, (), attributes, "", bool(root), line.strip())
        if _PLAIN_OPERANDS.fullmatch(inside):
            names = tuple(part[1:] for part in inside.split(", "))
            return HloInstr(name, opcode, shape, names, attributes, "", bool(root), line.strip())
    clean = _COMMENT.sub("", line) if "/*" in line else line
    match = _INSTRUCTION.match(clean)
    if match is None:
        raise ValueError(f"not an HLO instruction: {line.strip()[:120]}")
    rest = match.group(3)
    shape_end = balanced_end(rest, 0) if rest.startswith("(") else rest.index(" ")
    shape = rest[:shape_end]
    op = _OPCODE.match(rest, shape_end)
    if op is None:
        raise ValueError(f"no opcode in HLO instruction: {line.strip()[:120]}")
    close = balanced_end(rest, op.end() - 1)
    operands: tuple[str, ...] = ()
    literal = rest[op.end() : close - 1] if op.group(1) in _LITERAL_OPERANDS else ""
    if not literal and op.group(1) not in _LITERAL_OPERANDS:
        parts = _split_top(rest[op.end() : close - 1])
        operands = tuple(_NAME.findall(p.split()[-1])[0] for p in parts if p.strip())
    return HloInstr(
        name=match.group(2),
        opcode=op.group(1),
        shape=shape,
        operands=operands,
        attributes=rest[close:],
        literal=literal,
        is_root=bool(match.group(1)),
        text=clean.strip(),
    )


def split_attributes(text: str) -> tuple[tuple[str, str], ...]:
    """Split ``, k1=v1, k2={..., ...}, k3="a, b"`` into ``(key, value)`` pairs.

    Commas inside brackets and strings (JSON backend configs, metadata) do not split.

    Raises:
        ValueError: A part is not ``key=value``.
    """
    out = []
    for part in _split_top(text, strings=True):
        if not part.strip():
            continue
        key, sep, value = part.strip().partition("=")
        if not sep:
            raise ValueError(f"not an HLO attribute: {part.strip()[:120]}")
        out.append((key, value))
    return tuple(out)


def join_attributes(items: tuple[tuple[str, str], ...]) -> str:
    """The inverse of ``split_attributes``: ``, k1=v1, k2=v2`` (empty for no items)."""
    return "".join(f", {key}={value}" for key, value in items)


def balanced_end(text: str, start: int) -> int:
    """Index just past the bracket group opening at ``start`` (strings skipped)."""
    # Most groups (an operand list) hold no inner bracket or string: one find, no walk.
    closing = _CLOSING.get(text[start : start + 1])
    close = -1 if closing is None else text.find(closing, start + 1)
    if close > 0 and not _NESTING.search(text, start + 1, close):
        return close + 1
    depth, in_string, escaped = 0, False, -1
    for match in _SPECIAL.finditer(text, start):  # only the characters that matter
        i = match.start()
        if i == escaped:
            continue
        ch = text[i]
        if in_string:
            if ch == "\\":
                escaped = i + 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced brackets in HLO text: {text[start : start + 80]}")


def _split_top(text: str, *, strings: bool = False) -> list[str]:
    """Split on commas outside brackets (operands may be printed with tuple shapes).

    ``strings=True`` also keeps commas and brackets inside double-quoted strings together.
    """
    if not _NESTING.search(text):  # nothing to keep together (most operand lists)
        return text.split(",")
    parts, depth, start, in_string, escaped = [], 0, 0, False, -1
    for match in _SPECIAL.finditer(text):  # only the characters that matter
        i = match.start()
        if i == escaped:
            continue
        ch = text[i]
        if in_string:
            if ch == "\\":
                escaped = i + 1
            elif ch == '"':
                in_string = False
        elif ch == '"' and strings:
            in_string = True
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts
