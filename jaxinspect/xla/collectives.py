"""The collectives of an optimized (SPMD-partitioned) HLO module, counted per program run.

The partitioner inserts all-reduces, all-gathers, reduce-scatters, all-to-alls and
permutes; XLA may split each into an async pair, either its own ``-start``/``-done`` opcodes
or an ``async-start``/``async-done`` around a computation holding it (GPU). They are found in
every computation the entry reaches (loop bodies times their trip counts, fusions, async
wrappers), and their device groups are read in XLA's spellings: explicit lists
``{{0,1},{2,3}}``, iota lists ``[2,4]<=[4,2]T(1,0)``, mesh form
``mesh['axis_0'=4,'axis_1'=2] {'axis_1'}``, ``{}`` (every device) and a permute's
``source_target_pairs``. Rows group instructions of one kind over the same groups, whatever
the spelling.

No numpy and no jax here: ``diff`` reads collectives off loose HLO files without them.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

from jaxinspect import jaxapi
from jaxinspect.xla.collectivemodel import COLLECTIVE_KINDS, Collective, CollectiveSummary
from jaxinspect.xla.hlotext import HloComputation, HloInstr, HloText, parse_module
from jaxinspect.xla.ownership import UserCode, library_prefixes
from jaxinspect.xla.shapes import shape_bytes
from jaxinspect.xla.sourcemap import FrameTable, parse_frame_table

#: Collective opcodes, without their ``-start``/``-done`` suffix.
COLLECTIVES = frozenset(COLLECTIVE_KINDS)

_GROUPS = re.compile(
    r"\breplica_groups=("
    r"\{\{[^=]*?\}\}|\{\}"  # explicit lists, or none (one group of every device)
    r"|\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?"  # an iota list
    r"|mesh\[[^\]]*\](?:, device_ids=\(\[[\d,]+\](?:T\([\d,]+\))?\))? \{[^}]*\})"  # mesh axes
)
_PAIRS = re.compile(r"\bsource_target_pairs=(\{\{[\d,{}]*\}\})")
_IOTA = re.compile(r"^\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?$")
_MESH = re.compile(
    r"^mesh\[([^\]]*)\](?:, device_ids=\(\[([\d,]+)\](?:T\(([\d,]+)\))?\))? \{([^}]*)\}$"
)
_MESH_AXIS = re.compile(r"'([^']+)'=(\d+)")
_HEADER_COUNT = re.compile(r"\b(replica_count|num_partitions)=(\d+)")

Groups = tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class MeshLayout:
    """The run's mesh, and where each device XLA's groups name sits in it.

    Attributes:
        axes: Axis names and sizes, in mesh order (``(("data", 4), ("model", 2))``).
        positions: For each logical device id of the program (the numbers in XLA's groups,
            0..N-1 in the executable's device assignment), its row-major index among the
            mesh's devices, or -1 for a device outside the mesh. ``None``: id ``k`` is
            mesh position ``k``, as for a program jitted over that one mesh.
    """

    axes: tuple[tuple[str, int], ...]
    positions: tuple[int, ...] | None = None

    @classmethod
    def of(
        cls,
        axes: tuple[tuple[str, int], ...],
        mesh_device_ids: tuple[int, ...] | None = None,
        program_device_ids: tuple[int, ...] | None = None,
    ) -> MeshLayout:
        """The layout of a mesh whose devices (ids, in mesh order) run a program whose
        device assignment is ``program_device_ids``; without both, ids are mesh positions.

        Raises:
            ValueError: ``mesh_device_ids`` does not hold one id per mesh position.
        """
        if mesh_device_ids is None or program_device_ids is None:
            return cls(axes)
        if len(mesh_device_ids) != math.prod(size for _, size in axes):
            raise ValueError(f"{len(mesh_device_ids)} device ids for a mesh of {axes}")
        index = {device: i for i, device in enumerate(mesh_device_ids)}
        return cls(axes, tuple(index.get(device, -1) for device in program_device_ids))

    def axes_spanned(self, groups: Groups) -> tuple[str, ...] | None:
        """The axes along which members of a group differ; ``None`` if groups do not map."""
        sizes = [size for _, size in self.axes]
        total = math.prod(sizes)
        positions = self.positions
        if positions is None:
            positions = tuple(range(total))
        members = [d for group in groups for d in group]
        if not groups or any(not 0 <= d < len(positions) for d in members):
            return None
        if any(not 0 <= positions[d] < total for d in members):
            return None
        spanned: set[int] = set()
        for group in groups:
            coords = [_coords(positions[d], sizes) for d in group]
            spanned.update(a for a in range(len(sizes)) if len({c[a] for c in coords}) > 1)
        return tuple(name for i, (name, _) in enumerate(self.axes) if i in spanned)


def compiled_collectives(
    compiled: Any,
    mesh_axes: tuple[tuple[str, int], ...] | None = None,
    mesh_device_ids: tuple[int, ...] | None = None,
    *,
    user: UserCode | None = None,
) -> CollectiveSummary:
    """Every collective of a compiled executable (``jax.stages.Compiled``).

    Args:
        compiled: The executable.
        mesh_axes: The mesh's axis names and sizes, to name the axes each group spans;
            ``None`` (one device, or a mesh the run does not know) leaves ``axes`` ``None``.
        mesh_device_ids: The mesh's device ids in mesh order (``mesh.devices.flat``); with
            the executable's device assignment it places XLA's logical ids on the mesh.
            ``None``: logical id ``k`` is mesh position ``k``.
        user: Whose frames name the source line (by default the innermost frame outside
            JAX, jaxinspect and the test harness).

    Raises:
        JaxInspectError: JAX gives no optimized module for the executable.
    """
    text = jaxapi.compiled_module_text(compiled, "the collectives")
    layout = None
    if mesh_axes is not None:
        devices = jaxapi.executable_devices(compiled) if mesh_device_ids is not None else None
        program = None if devices is None else tuple(int(d.id) for d in devices)
        layout = MeshLayout.of(mesh_axes, mesh_device_ids, program)
    return find_collectives(text, layout, user=user)


def spells_no_collective(hlo_text: str) -> bool:
    """True when a printed module spells no collective's opcode anywhere (a string search,
    not a parse): it has none, and ``find_collectives`` finds none.

    Any printing of the module answers alike: the print options add or drop only constants'
    values and control dependencies' ``%names``, neither of which reads `` all-reduce``.
    """
    return "\nENTRY " in hlo_text and not any(f" {op}" in hlo_text for op in COLLECTIVES)


def find_collectives(
    hlo_text: str, mesh: MeshLayout | None = None, *, user: UserCode | None = None
) -> CollectiveSummary:
    """Every collective of a printed optimized module, grouped by kind and device groups.

    Args:
        hlo_text: ``HloModule.to_string`` output; with metadata, rows carry a source line.
        mesh: The run's mesh, to name the axes each group spans.
        user: Whose frames name the source line (default: outside the libraries).

    Raises:
        ValueError: The text is not a printed HLO module.
    """
    if spells_no_collective(hlo_text):
        # A single-device program need not be parsed whole to find none.
        return CollectiveSummary(())
    hlo = parse_module(hlo_text)
    devices = math.prod(int(n) for _, n in _HEADER_COUNT.findall(hlo.header))
    found: list[_Found] = []
    _Walk(hlo, found).computation(hlo.entry, 1, False, False)
    frames = parse_frame_table(hlo_text) if "StackFrames" in hlo_text else FrameTable(())
    owner = user if user is not None else UserCode((), library_prefixes())
    rows: dict[tuple[str, str | Groups, bool], list[_Found]] = {}
    for item in found:
        permute = item.op == "collective-permute"
        parsed = _group_lists(item.groups, pairs=permute, devices=devices)
        key = item.groups if parsed is None else _canonical(parsed, ordered=permute)
        rows.setdefault((item.op, key, item.is_async), []).append(item)
    items = []
    for (op, key, is_async), members in rows.items():
        first = members[0]
        groups = None if isinstance(key, str) else key
        located = (frames.user_location(m.instr.stack_frame_id, owner) for m in members)
        items.append(
            Collective(
                op=op,
                count=sum(m.runs for m in members),
                bytes=sum(m.bytes * m.runs for m in members),
                groups=first.groups,
                group_size=len(groups[0]) if groups else None,
                axes=None if mesh is None or not groups else mesh.axes_spanned(groups),
                is_async=is_async,
                instructions=tuple(m.instr.name for m in members),
                trip_count_unknown=any(m.unknown_trips for m in members),
                op_name=first.instr.op_name,
                source=next((loc for loc in located if loc is not None), None),
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


class _Walk:
    """Depth-first from the entry: loop bodies by their trip counts, into every callee."""

    def __init__(self, hlo: HloText, found: list[_Found]) -> None:
        self.hlo, self.found = hlo, found
        self.names = {c.name for c in hlo.computations}
        self.stack: list[str] = []

    def computation(self, comp: HloComputation, runs: int, unknown: bool, wrapped: bool) -> None:
        """``wrapped``: ``comp`` runs inside an ``async-start`` (its collectives are async)."""
        if comp.name in self.stack:  # a computation cannot call itself; guard against odd text
            return
        self.stack.append(comp.name)
        for instr in comp.instructions:
            self.instruction(comp, instr, runs, unknown, wrapped)
        self.stack.pop()

    def instruction(
        self, comp: HloComputation, instr: HloInstr, runs: int, unknown: bool, wrapped: bool
    ) -> None:
        base, suffix = _split_opcode(instr.opcode)
        if base in COLLECTIVES and suffix != "-done":
            is_async = wrapped or suffix == "-start"
            self.found.append(_found(comp, instr, base, is_async, runs, unknown))
        if instr.opcode == "while":
            unknown = unknown or instr.trip_count is None
            for callee, executions in instr.loop_runs(runs):
                self.computation(self.hlo.computation(callee), executions, unknown, wrapped)
            return
        if instr.opcode in ("async-update", "async-done"):
            return  # they name their async-start's computation, walked once from there
        for role, callee in instr.called:
            if role == "to_apply" and base in COLLECTIVES:
                continue  # the reducer of an all-reduce holds no collectives
            if callee in self.names:
                inner = wrapped or instr.opcode == "async-start"
                self.computation(self.hlo.computation(callee), runs, unknown, inner)


def _split_opcode(opcode: str) -> tuple[str, str]:
    for suffix in ("-start", "-done"):
        if opcode.endswith(suffix):
            return opcode[: -len(suffix)], suffix
    return opcode, ""


def _found(
    comp: HloComputation, instr: HloInstr, op: str, is_async: bool, runs: int, unknown: bool
) -> _Found:
    """One instruction; its bytes per execution are the larger of operands and result."""
    groups = _groups_text(instr)
    operands = sum(shape_bytes(_shape(comp, o)) for o in dict.fromkeys(instr.operands))
    started = instr.opcode.endswith("-start")
    result = shape_bytes(_result_shape(comp, instr) if started else instr.shape)
    return _Found(instr, op, groups, is_async, runs, max(operands, result), unknown)


def _shape(comp: HloComputation, name: str) -> str:
    try:
        return comp.instruction(name).shape
    except KeyError:
        return ""


def _result_shape(comp: HloComputation, start: HloInstr) -> str:
    """The result of an async collective: the shape of the ``-done`` that takes its start.

    A ``-start``'s own shape is a tuple of its operands, result and scratch values.
    """
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
    if "replica_groups=" in instr.attributes or "source_target_pairs=" in instr.attributes:
        return "?"  # a spelling this version does not read: no groups rather than wrong ones
    return "{}"  # no groups: every device in one group


def _canonical(groups: Groups, *, ordered: bool) -> Groups:
    """One key for the same groups spelled differently (a permute's pairs keep direction)."""
    if ordered:
        return tuple(sorted(groups))
    return tuple(sorted(tuple(sorted(g)) for g in groups))


def _group_lists(text: str, *, pairs: bool, devices: int) -> Groups | None:
    """The device groups as tuples of logical device ids, or ``None`` when unreadable.

    ``pairs``: ``text`` holds a permute's source-target pairs, each a two-device group.
    ``devices``: the program's devices (replicas x partitions), the one group of ``{}``.
    """
    if text == "{}":
        return (tuple(range(devices)),) if devices > 1 else None
    if text.startswith("{{"):
        listed = [
            tuple(int(d) for d in g.split(",") if d) for g in re.findall(r"\{([\d,]*)\}", text)
        ]
        if pairs:
            listed = [p for p in listed if len(p) == 2 and p[0] != p[1]]
        return tuple(listed) or None
    iota = _IOTA.match(text)
    if iota is not None:
        shape = _ints(iota.group(1))
        ids = _iota(_ints(iota.group(2)), iota.group(3))
        return _chunks(ids, shape[-1]) if len(ids) == math.prod(shape) else None
    mesh = _MESH.match(text)
    if mesh is not None:
        return _mesh_groups(mesh)
    return None


def _mesh_groups(match: re.Match[str]) -> Groups | None:
    """``mesh[axes], device_ids=(iota) {spanned}``: one group per value of the other axes."""
    axes = [(name, int(size)) for name, size in _MESH_AXIS.findall(match.group(1))]
    sizes = [size for _, size in axes]
    total = math.prod(sizes)
    ids = _iota(_ints(match.group(2)), match.group(3)) if match.group(2) else list(range(total))
    if len(ids) != total:
        return None
    names = [name for name, _ in axes]
    spanned = [names.index(a) for a in re.findall(r"'([^']+)'", match.group(4)) if a in names]
    others = [i for i in range(len(names)) if i not in spanned]
    grid = _transpose(ids, sizes, others + spanned)
    return _chunks(grid, math.prod(sizes[i] for i in spanned))


def _ints(text: str) -> list[int]:
    return [int(d) for d in text.split(",") if d]


def _iota(dims: list[int], perm: str | None) -> list[int]:
    """XLA's iota list: 0..N-1 laid out as ``dims``, transposed by ``perm``, flattened."""
    ids = list(range(math.prod(dims)))
    return _transpose(ids, dims, _ints(perm)) if perm else ids


def _transpose(values: list[int], shape: list[int], perm: list[int]) -> list[int]:
    """``values`` (row-major, ``shape``) with its dimensions reordered as ``perm``, flat."""
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    ranges = [range(shape[p]) for p in perm]
    return [
        values[sum(i * strides[p] for i, p in zip(index, perm, strict=True))]
        for index in itertools.product(*ranges)
    ]


def _chunks(ids: list[int], size: int) -> Groups | None:
    if size < 1 or len(ids) % size:
        return None
    return tuple(tuple(ids[i : i + size]) for i in range(0, len(ids), size))


def _coords(position: int, sizes: list[int]) -> tuple[int, ...]:
    """Row-major coordinates of ``position`` in a grid of ``sizes``."""
    out = []
    for size in reversed(sizes):
        position, coord = divmod(position, size)
        out.append(coord)
    return tuple(reversed(out))
