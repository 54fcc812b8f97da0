"""Immutable snapshot objects and their files' JSON shapes (no jax import).

``summary.json`` is :class:`SummaryFile`: written by ``jsonfields``' encoder, read back by its
typed decode, and its schema generated from it (``schemas/snapshot-summary.schema.json``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any

from jaxinspect.jsonfields import Count, Minimum, decode, encode_object, js

if TYPE_CHECKING:
    from jaxinspect.xla.collectivemodel import CollectiveSummary

#: Version of the snapshot folder layout; bump when files or JSON paths change meaning.
FORMAT_VERSION = 1

#: Stage name -> file holding its normalized text, in pipeline order.
STAGE_FILES: tuple[tuple[str, str], ...] = (
    ("jaxpr", "jaxpr.txt"),
    ("stablehlo", "stablehlo.mlir"),
    ("hlo", "hlo.txt"),
)
#: The stages, in pipeline order.
STAGES = tuple(stage for stage, _ in STAGE_FILES)
SUMMARY_FILE = "summary.json"
#: Source locations, names and the target: kept for people, never compared.
PROVENANCE_FILE = "provenance.json"
#: Every file a snapshot folder holds; nothing else in it is read, written or deleted.
SNAPSHOT_FILES: tuple[str, ...] = (*(f for _, f in STAGE_FILES), SUMMARY_FILE, PROVENANCE_FILE)

#: HLO opcodes counted as collectives (``-start`` async variants fold into their base name).
COLLECTIVE_OPS = (
    "all-gather",
    "all-reduce",
    "all-to-all",
    "collective-broadcast",
    "collective-permute",
    "ragged-all-to-all",
    "reduce-scatter",
)
#: A figure of JAX's cost or memory analysis; null when the backend does not report it.
Figure = Annotated[float, Minimum(0)] | None
OpCounts = tuple[tuple[str, Count], ...]
Numbers = tuple[tuple[str, float | None], ...]


@dataclass(frozen=True, slots=True)
class SnapshotHeader:
    """The toolchain and device that produced a snapshot."""

    jax_version: str
    jaxlib_version: str
    backend: str
    device_kind: str
    x64: bool


@dataclass(frozen=True, slots=True)
class CostFigures:
    """JAX's ``cost_analysis()`` of the compiled program."""

    flops: Figure
    transcendentals: Figure
    bytes_accessed: Figure


@dataclass(frozen=True, slots=True)
class MemoryFigures:
    """JAX's ``memory_analysis()`` of the compiled program, in bytes."""

    argument_bytes: Figure
    output_bytes: Figure
    temp_bytes: Figure
    alias_bytes: Figure
    peak_bytes: Figure
    generated_code_bytes: Figure


COST_KEYS = tuple(f.name for f in fields(CostFigures))
MEMORY_KEYS = tuple(f.name for f in fields(MemoryFigures))


@dataclass(frozen=True, slots=True)
class SnapshotSummary:
    """What a reviewer reads first: op histograms, fusions, collectives, cost and memory.

    ``cost`` and ``memory`` hold ``None`` for values the backend does not report; the reason
    is in ``unavailable`` as ``(json_path, reason)``.

    ``collectives``: executions per program run of each kind of collective (loop trip counts
    applied; a loose HLO text counts each instruction once). ``collective_bytes``: the bytes
    each device moves in them per run, by kind; ``None`` where not recorded (a loose text, or
    a snapshot written before jaxinspect recorded them).
    """

    ops: tuple[tuple[str, OpCounts], ...]
    fusion_count: int | None
    collectives: OpCounts
    cost: Numbers
    memory: Numbers
    unavailable: tuple[tuple[str, str], ...] = ()
    collective_bytes: OpCounts | None = None

    def stage_ops(self, stage: str) -> dict[str, int]:
        """Op histogram of one stage (empty if the stage is absent)."""
        return dict(dict(self.ops).get(stage, ()))

    def metrics(self) -> dict[str, float | None]:
        """Every scalar a ``--fail-on`` rule can name."""
        out: dict[str, float | None] = {**dict(self.cost), **dict(self.memory)}
        out["fusions"] = None if self.fusion_count is None else float(self.fusion_count)
        out["collectives"] = float(sum(n for _, n in self.collectives))
        if self.collective_bytes is not None:  # absent, not null: the two sides may differ
            out["collective_bytes"] = float(sum(n for _, n in self.collective_bytes))
        return out


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a snapshot came from; varies with file moves and renames, so it is not compared."""

    target: str
    function: str
    source_file: str | None
    module_name: str | None
    parameter_names: tuple[str, ...]
    #: The jaxinspect that wrote the snapshot (named when a newer one's format is refused).
    jaxinspect_version: str | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One target's snapshot: header, summary, normalized stage texts and provenance.

    ``header`` is ``None`` only for a loose text file given to ``diff``.
    """

    header: SnapshotHeader | None
    summary: SnapshotSummary
    texts: tuple[tuple[str, str], ...]
    provenance: Provenance | None = None

    def text(self, stage: str) -> str | None:
        """The normalized text of ``stage``, if stored."""
        return dict(self.texts).get(stage)


def collectives_of(hlo_counts: dict[str, int]) -> OpCounts:
    """Collective ops in an HLO histogram, async ``-start`` ops counted as their base op.

    For a loose text: each instruction counts once (no trip counts, unlike a capture).
    """
    found: dict[str, int] = {}
    for op, n in hlo_counts.items():
        base = op.removesuffix("-start")
        if base in COLLECTIVE_OPS:
            found[base] = found.get(base, 0) + n
    return tuple(sorted(found.items()))


def collective_totals(summary: CollectiveSummary) -> tuple[OpCounts, OpCounts]:
    """``(executions, bytes)`` per kind of collective, as ``summary.json`` records them."""
    rows = summary.by_op()
    return (
        tuple((op, count) for op, count, _ in rows),
        tuple((op, size) for op, _, size in rows),
    )


def _known_stages(ops: object) -> tuple[str, str] | None:
    unknown = [s for s in ops if s not in STAGES] if isinstance(ops, dict) else []
    return None if not unknown else (unknown[0], f"absent (not a stage: {', '.join(STAGES)})")


@dataclass(frozen=True, slots=True)
class SummaryFile:
    """The compared summary of one snapshot folder: toolchain header, op histograms, fusions,
    collectives (executions and bytes), cost and memory. Null values are unavailable;
    ``unavailable`` says why.

    Attributes:
        files: The file holding each stage's normalized text.
        ops: Each stage's op histogram (op name -> count).
        fusion_count: Fusions in the optimized HLO; null for a text without them.
        unavailable: Why a value is null, by its JSON path.
    """

    header: SnapshotHeader
    files: tuple[tuple[str, str], ...] = field(metadata=js(mapping=True))
    ops: tuple[tuple[str, OpCounts], ...] = field(
        metadata=js(mapping=2, check=_known_stages, schema={"propertyNames": {"enum": STAGES}})
    )
    fusion_count: Count | None
    #: Executions per program run of each kind of collective (all-reduce, all-gather, ...; an
    #: async start/done pair once), loop trip counts applied. See docs/collectives.md.
    collectives: OpCounts = field(metadata=js(mapping=True))
    cost: CostFigures
    memory: MemoryFigures
    unavailable: tuple[tuple[str, str], ...] = field(metadata=js(mapping=True))
    #: Bytes each device moves per program run in each kind of collective (the collectives
    #: table's bytes/device, summed). Absent in snapshots written before it was recorded; then
    #: not compared.
    collective_bytes: OpCounts | None = field(
        default=None, metadata=js(mapping=True, skip_none=True)
    )


def summary_to_dict(header: SnapshotHeader, summary: SnapshotSummary) -> dict[str, Any]:
    """``summary.json``: the :class:`SummaryFile` of ``summary``."""
    stored = SummaryFile(
        header=header,
        files=STAGE_FILES,
        ops=summary.ops,
        fusion_count=summary.fusion_count,
        collectives=summary.collectives,
        cost=CostFigures(**dict(summary.cost)),
        memory=MemoryFigures(**dict(summary.memory)),
        unavailable=summary.unavailable,
        collective_bytes=summary.collective_bytes,
    )
    return {"format_version": FORMAT_VERSION, **encode_object(stored)}


def summary_from_dict(data: dict[str, Any]) -> tuple[SnapshotHeader, SnapshotSummary]:
    """Inverse of ``summary_to_dict``, checking every value as it reads it.

    Raises:
        DecodeError: Names the first key that is wrong.
    """
    stored = decode(SummaryFile, data, allowed=("format_version",))
    summary = SnapshotSummary(
        ops=tuple(
            sorted(((s, _ranked(c)) for s, c in stored.ops), key=lambda s: STAGES.index(s[0]))
        ),
        fusion_count=stored.fusion_count,
        collectives=_ranked(stored.collectives),
        cost=tuple((k, getattr(stored.cost, k)) for k in COST_KEYS),
        memory=tuple((k, getattr(stored.memory, k)) for k in MEMORY_KEYS),
        unavailable=tuple(sorted(stored.unavailable)),
        collective_bytes=None
        if stored.collective_bytes is None
        else _ranked(stored.collective_bytes),
    )
    return stored.header, summary


def provenance_to_dict(provenance: Provenance) -> dict[str, Any]:
    """``provenance.json``: where the snapshot came from (not compared)."""
    return {
        "target": provenance.target,
        "function": provenance.function,
        "source_file": provenance.source_file,
        "module_name": provenance.module_name,
        "parameter_names": list(provenance.parameter_names),
        "jaxinspect_version": provenance.jaxinspect_version,
    }


def provenance_from_dict(data: dict[str, Any]) -> Provenance:
    """Inverse of ``provenance_to_dict``."""
    return Provenance(
        target=str(data["target"]),
        function=str(data["function"]),
        source_file=data.get("source_file"),
        module_name=data.get("module_name"),
        parameter_names=tuple(str(p) for p in data.get("parameter_names", ())),
        jaxinspect_version=_optional_str(data.get("jaxinspect_version")),
    )


def dump_json(data: dict[str, Any]) -> str:
    """The one byte-stable JSON encoding of snapshot files: sorted keys, 2-space indent.

    Kept apart from ``renderers/jsondoc.py``: these are stored files (versioned by
    ``FORMAT_VERSION``, read back by ``store.py``), not a report, and must not change when
    report output does.
    """
    import json  # here: writing snapshots only, not reading or comparing them

    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _ranked(counts: OpCounts) -> OpCounts:
    """Most frequent first, then by name."""
    return tuple(sorted(counts, key=lambda kv: (-kv[1], kv[0])))
