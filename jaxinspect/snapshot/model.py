"""Immutable snapshot objects and their files' JSON shapes (no jax import)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
COST_KEYS = ("flops", "transcendentals", "bytes_accessed")
MEMORY_KEYS = (
    "argument_bytes",
    "output_bytes",
    "temp_bytes",
    "alias_bytes",
    "peak_bytes",
    "generated_code_bytes",
)

OpCounts = tuple[tuple[str, int], ...]
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


def summary_to_dict(header: SnapshotHeader, summary: SnapshotSummary) -> dict[str, Any]:
    """``summary.json``: see ``schemas/snapshot-summary.schema.json``."""
    out: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "header": {
            "jax_version": header.jax_version,
            "jaxlib_version": header.jaxlib_version,
            "backend": header.backend,
            "device_kind": header.device_kind,
            "x64": header.x64,
        },
        "files": dict(STAGE_FILES),
        "ops": {stage: dict(counts) for stage, counts in summary.ops},
        "fusion_count": summary.fusion_count,
        "collectives": dict(summary.collectives),
        "cost": dict(summary.cost),
        "memory": dict(summary.memory),
        "unavailable": dict(summary.unavailable),
    }
    if summary.collective_bytes is not None:
        out["collective_bytes"] = dict(summary.collective_bytes)
    return out


def summary_from_dict(data: dict[str, Any]) -> tuple[SnapshotHeader, SnapshotSummary]:
    """Inverse of ``summary_to_dict``; raises ``KeyError``/``TypeError`` on a malformed one."""
    h = data["header"]
    header = SnapshotHeader(
        jax_version=str(h["jax_version"]),
        jaxlib_version=str(h["jaxlib_version"]),
        backend=str(h["backend"]),
        device_kind=str(h["device_kind"]),
        x64=bool(h["x64"]),
    )
    summary = SnapshotSummary(
        ops=_ordered_ops(data["ops"]),
        fusion_count=data["fusion_count"],
        collectives=_counts(data["collectives"]),
        cost=tuple((k, data["cost"].get(k)) for k in COST_KEYS),
        memory=tuple((k, data["memory"].get(k)) for k in MEMORY_KEYS),
        unavailable=tuple(sorted((str(k), str(v)) for k, v in data["unavailable"].items())),
        collective_bytes=_counts(data["collective_bytes"]) if "collective_bytes" in data else None,
    )
    return header, summary


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
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _ordered_ops(raw: dict[str, Any]) -> tuple[tuple[str, OpCounts], ...]:
    order = [stage for stage, _ in STAGE_FILES]
    stages = sorted(raw, key=lambda s: (order.index(s) if s in order else len(order), s))
    return tuple((stage, _counts(raw[stage])) for stage in stages)


def _counts(raw: dict[str, Any]) -> OpCounts:
    return tuple(sorted(((str(k), int(v)) for k, v in raw.items()), key=lambda kv: (-kv[1], kv[0])))
