"""The collectives of an optimized (SPMD-partitioned) HLO module, counted per program run.

The partitioner inserts all-reduces, all-gathers, reduce-scatters, all-to-alls and
permutes; XLA may split each into an async ``-start``/``-done`` pair. They are found in every
computation the entry reaches (loop bodies times their trip counts, fusions, async wrappers),
and their device groups are read in XLA's three spellings: explicit lists
``{{0,1},{2,3}}``, iota lists ``[2,4]<=[4,2]T(1,0)``, and mesh form
``mesh['axis_0'=4,'axis_1'=2] {'axis_1'}``.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from jaxinspect.cost.hlotext import HloComputation, HloInstr, HloText, parse_module
from jaxinspect.cost.shapes import shape_bytes
from jaxinspect.reports.collectives import Collective, CollectiveSummary

#: Collective opcodes, without their ``-start``/``-done`` suffix.
COLLECTIVES = frozenset(
    {
        "all-reduce",
        "all-gather",
        "reduce-scatter",
        "all-to-all",
        "collective-permute",
        "collective-broadcast",
        "ragged-all-to-all",
    }
)

_GROUPS = re.compile(
    r"\breplica_groups=("
    r"\{\{[^=]*?\}\}|\{\}"  # explicit lists, or none (one group of every device)
    r"|\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?"  # an iota list
    r"|mesh\[[^\]]*\](?:, device_ids=\([^)]*\))? \{[^}]*\})"  # mesh axes
)
_PAIRS = re.compile(r"\bsource_target_pairs=(\{\{[\d,{}]*\}\})")
_IOTA = re.compile(r"^\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?$")
_MESH = re.compile(
    r"^mesh\[([^\]]*)\](?:, device_ids=\(\[([\d,]+)\](?:T\(([\d,]+)\))?\))? \{([^}]*)\}$"
)
_MESH_AXIS = re.compile(r"'([^']+)'=(\d+)")


@dataclass(frozen=True, slots=True)
class MeshLayout:
    """The run's mesh: axis names and sizes, devices numbered 0..N-1 in mesh order."""

    axes: tuple[tuple[str, int], ...]

    def axes_spanned(self, groups: list[list[int]]) -> tuple[str, ...] | None:
        """The axes along which members of a group differ; ``None`` if groups do not map."""
        sizes = [size for _, size in self.axes]
        total = math.prod(sizes)
        if not groups or any(d >= total for g in groups for d in g):
            return None
        spanned: set[int] = set()
        for group in groups:
            coords = [np.unravel_index(d, sizes) for d in group]
            for axis in range(len(sizes)):
                if len({c[axis] for c in coords}) > 1:
                    spanned.add(axis)
        return tuple(name for i, (name, _) in enumerate(self.axes) if i in spanned)


def find_collectives(hlo_text: str, mesh: MeshLayout | None = None) -> CollectiveSummary:
    """Every collective of the printed optimized module, grouped by kind and device groups."""
    hlo = parse_module(hlo_text)
    found: list[_Found] = []
    _walk(hlo, hlo.entry, 1, False, found, set())
    rows: dict[tuple[str, str, bool], list[_Found]] = defaultdict(list)
    for item in found:
        rows[(item.op, item.groups, item.is_async)].append(item)
    items = []
    for (op, groups, is_async), members in rows.items():
        parsed = _group_lists(groups, pairs=op == "collective-permute")
        items.append(
            Collective(
                op=op,
                count=sum(m.runs for m in members),
                bytes=sum(m.bytes * m.runs for m in members),
                groups=groups,
                group_size=len(parsed[0]) if parsed else None,
                axes=None if mesh is None or parsed is None else mesh.axes_spanned(parsed),
                is_async=is_async,
                instructions=tuple(m.instr.name for m in members),
                trip_count_unknown=any(m.unknown_trips for m in members),
                op_name=members[0].op_name,
            )
        )
    items.sort(key=lambda c: (-c.bytes, c.op, c.groups))
    return CollectiveSummary(tuple(items))


@dataclass(frozen=True, slots=True)
class _Found:
    instr: HloInstr
    op: str
    groups: str
    is_async: bool
    runs: int
    bytes: int
    unknown_trips: bool
    op_name: str | None


def _walk(
    hlo: HloText,
    comp: HloComputation,
    runs: int,
    unknown: bool,
    found: list[_Found],
    stack: set[str],
) -> None:
    if comp.name in stack:  # a computation cannot call itself; guard against odd text
        return
    stack = stack | {comp.name}
    for instr in comp.instructions:
        base, suffix = _split_opcode(instr.opcode)
        if base in COLLECTIVES and suffix != "-done":
            found.append(_found(comp, instr, base, suffix == "-start", runs, unknown))
        if instr.opcode == "while":
            trips = instr.trip_count
            inner = runs * (trips if trips is not None else 1)
            for role in ("body", "condition"):
                callee = instr.callee(role)
                if callee is not None:
                    _walk(
                        hlo, hlo.computation(callee), inner, unknown or trips is None, found, stack
                    )
            continue
        for role, callee in instr.called:
            if role == "to_apply" and base in COLLECTIVES:
                continue  # the reducer of an all-reduce holds no collectives
            if callee in {c.name for c in hlo.computations}:
                _walk(hlo, hlo.computation(callee), runs, unknown, found, stack)


def _split_opcode(opcode: str) -> tuple[str, str]:
    for suffix in ("-start", "-done"):
        if opcode.endswith(suffix):
            return opcode[: -len(suffix)], suffix
    return opcode, ""


def _found(
    comp: HloComputation, instr: HloInstr, op: str, is_async: bool, runs: int, unknown: bool
) -> _Found:
    groups = _groups_text(instr)
    operands = sum(shape_bytes(_shape(comp, o)) for o in dict.fromkeys(instr.operands))
    result = shape_bytes(_result_shape(comp, instr) if is_async else instr.shape)
    return _Found(instr, op, groups, is_async, runs, max(operands, result), unknown, instr.op_name)


def _shape(comp: HloComputation, name: str) -> str:
    try:
        return comp.instruction(name).shape
    except KeyError:
        return ""


def _result_shape(comp: HloComputation, start: HloInstr) -> str:
    """The result of an async collective: the shape of the ``-done`` that takes its start."""
    for instr in comp.instructions:
        if instr.opcode.endswith("-done") and start.name in instr.operands:
            return instr.shape
    return start.shape


def _groups_text(instr: HloInstr) -> str:
    match = _GROUPS.search(instr.attributes)
    if match is not None:
        return match.group(1)
    pairs = _PAIRS.search(instr.attributes)
    if pairs is not None:
        return pairs.group(1)
    return "{}"  # no groups: every device in one group


def _group_lists(text: str, *, pairs: bool) -> list[list[int]] | None:
    """The device groups as lists of device indices, or ``None`` when they cannot be read.

    ``pairs``: ``text`` holds a permute's source-target pairs, each a two-device group.
    """
    if text.startswith("{{"):
        groups = [[int(d) for d in g.split(",") if d] for g in re.findall(r"\{([\d,]*)\}", text)]
        return (_pair_groups(groups) if pairs else groups) or None
    iota = _IOTA.match(text)
    if iota is not None:
        shape = [int(d) for d in iota.group(1).split(",")]
        listed: list[list[int]] = _iota(iota.group(2), iota.group(3)).reshape(shape).tolist()
        return listed
    mesh = _MESH.match(text)
    if mesh is not None:
        return _mesh_groups(mesh)
    return None


def _pair_groups(pairs: list[list[int]]) -> list[list[int]]:
    """Source-target pairs as two-device groups (a permute moves data between them)."""
    return [pair for pair in pairs if len(pair) == 2 and pair[0] != pair[1]]


def _iota(dims: str, perm: str | None) -> np.ndarray:
    shape = [int(d) for d in dims.split(",")]
    ids = np.arange(math.prod(shape)).reshape(shape)
    if perm:
        ids = ids.transpose([int(p) for p in perm.split(",")])
    return ids.reshape(-1)


def _mesh_groups(match: re.Match[str]) -> list[list[int]] | None:
    axes = [(name, int(size)) for name, size in _MESH_AXIS.findall(match.group(1))]
    sizes = [size for _, size in axes]
    total = math.prod(sizes)
    ids = _iota(match.group(2), match.group(3)) if match.group(2) else np.arange(total)
    if len(ids) != total:
        return None
    names = [name for name, _ in axes]
    spanned = [names.index(a) for a in re.findall(r"'([^']+)'", match.group(4)) if a in names]
    others = [i for i in range(len(names)) if i not in spanned]
    grid = ids.reshape(sizes).transpose(others + spanned)
    size = math.prod(sizes[i] for i in spanned)
    groups: list[list[int]] = grid.reshape(-1, size).tolist()
    return groups
