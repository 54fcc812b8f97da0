"""The ``stages`` report as one JSON document: :class:`StagesDocument`, encoded by
``jsonfields`` (schema: ``schemas/stages.schema.json``, generated from the same type).

:class:`RunFacts` (what ran where) opens every report of a run: ``cost``, ``memory`` and
``passes`` documents flatten it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, cast

from jaxinspect.base.inspection import (
    ArgInfo,
    CostSummary,
    InspectionReport,
    MemorySummary,
    OutputInfo,
    StageText,
    Timings,
)
from jaxinspect.jsonfields import Count, Positive, encode_object, js
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.xla.collectivemodel import Collective

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "stages.schema.json"
SCHEMA_VERSION = 2


@dataclass(frozen=True, slots=True)
class StaticArg:
    """A static argument (or a static leaf of one): not traced, compiled in."""

    path: str
    kind: str = field(metadata=js(schema={"const": "static"}))
    #: ``repr`` of the static value.
    value: str


@dataclass(frozen=True, slots=True)
class ArrayArg:
    """An array (or PRNG key) leaf of the call and how the executable places it."""

    #: ``params['w']``, ``x``, ``batch[0]``...
    path: str
    kind: str = field(metadata=js(schema={"enum": ["array", "key"]}))
    dtype: str
    shape: tuple[Count, ...]
    #: A weakly typed Python scalar's leaf.
    weak_type: bool
    #: How the executable splits the array over the mesh, as a PartitionSpec: ``P('data',
    #: None)``; ``P()`` is replicated. null: on one device (or not compiled yet).
    sharding: str | None
    #: The shape each device holds; null when a device holds the whole array on one device.
    shard_shape: tuple[Count, ...] | None

    @classmethod
    def of(cls, arg: ArgInfo) -> ArrayArg:
        """The leaf as the document writes it."""
        return cls(
            path=arg.path,
            kind=arg.kind,
            dtype=cast(str, arg.dtype),  # set for every array and key leaf (inputs/arrays.py)
            shape=arg.shape or (),
            weak_type=arg.weak_type,
            sharding=arg.sharding,
            shard_shape=arg.shard_shape,
        )


def arg_document(arg: ArgInfo) -> StaticArg | ArrayArg:
    """One argument of ``args``: a static value's keys are not an array's."""
    if arg.kind == "static":
        return StaticArg(arg.path, arg.kind, cast(str, arg.value))  # a static's repr
    return ArrayArg.of(arg)


@dataclass(frozen=True, slots=True)
class DevicesDocument:
    """The devices the executable was compiled for, read back from XLA. Cost and memory
    figures are per device."""

    count: Positive
    #: ``device_kind``: cpu, TPU v5 lite, NVIDIA H100 80GB HBM3.
    kind: str
    #: The platform that compiled the program (as ``backend``).
    platform: str
    #: The TPU slice or GPU target compiled for from this host (``--topology v5e:2x2``,
    #: ``h100:8``), or null for local devices.
    topology: str | None
    #: What a compile for this target does not show, stated once: for a GPU target, that XLA
    #: did not autotune (kernel choices are defaults; graph, fusion, collectives and memory
    #: are real, kernel speed is not). Null otherwise.
    caveat: str | None
    #: ``platform:id (kind)``, one per device, in mesh order.
    names: tuple[str, ...] = field(metadata=js("list", schema={"minItems": 1}))


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What ran where: the keys every report of a run (stages, cost, memory, passes) opens
    with."""

    #: The target as given, e.g. ``sample_programs/mlp.py:predict``.
    target: str
    #: The traced function's name.
    function: str
    #: What was compiled, as Python, with every ``--transform`` applied innermost first:
    #: ``jit(vmap(grad(loss_fn, argnums=0), in_axes=(None, 0)))``.
    composition: str | None
    #: The platform that actually compiled the program (cpu, cuda, rocm, tpu).
    backend: str
    devices: DevicesDocument
    #: The device mesh: axis name -> size, in mesh order; null without one.
    mesh: tuple[tuple[str, Positive], ...] | None = field(metadata=js(mapping=True))
    jax_version: str
    jaxlib_version: str
    #: Whether 64-bit mode was on (only when the spec has a 64-bit leaf).
    x64: bool
    #: Every leaf and static value of the call, in the order of the signature.
    args: tuple[StaticArg | ArrayArg, ...]

    @classmethod
    def of(cls, report: InspectionReport) -> RunFacts:
        """The run facts of ``report``."""
        return cls(
            target=report.target,
            function=report.function_name,
            composition=report.composition,
            backend=report.backend,
            devices=DevicesDocument(
                count=len(report.devices),
                kind=report.device_kind,
                platform=report.backend,
                topology=report.topology,
                caveat=report.caveat,
                names=report.devices,
            ),
            mesh=report.mesh,
            jax_version=report.jax_version,
            jaxlib_version=report.jaxlib_version,
            x64=report.x64,
            args=tuple(arg_document(a) for a in report.args),
        )


#: Top-level keys that say what ran where: the fields of :class:`RunFacts`.
RUN_KEYS = tuple(f.name for f in fields(RunFacts))


@dataclass(frozen=True, slots=True)
class Communication:
    """The program's collectives and what each device moves in them."""

    #: Collectives of the compiled program, one per kind and device groups (empty on one
    #: device), loop trip counts applied; null before compile. See docs/sharding.md.
    collectives: tuple[Collective, ...] | None
    #: Sum of ``collectives[].bytes``: what each device moves in collectives per run; null
    #: before compile.
    communication_bytes: Count | None

    @classmethod
    def of(cls, report: InspectionReport) -> Communication:
        """The collectives of ``report``."""
        summary = report.collectives
        if summary is None:
            return cls(None, None)
        return cls(summary.items, summary.total_bytes)


@dataclass(frozen=True, slots=True)
class StageTexts:
    """The IR of each stage that ran; null for a stage that did not."""

    jaxpr: StageText | None
    stablehlo: StageText | None
    hlo: StageText | None


@dataclass(frozen=True, slots=True)
class StagesDocument:
    """The ``stages`` document: the run, its IR texts, JAX's cost and memory figures and the
    timings."""

    run: RunFacts = field(metadata=js(flatten=True))
    #: Output leaves of the compiled program (empty before compile).
    outputs: tuple[OutputInfo, ...]
    communication: Communication = field(metadata=js(flatten=True))
    stages: StageTexts
    cost: CostSummary | None
    memory: MemorySummary | None
    timings: Timings
    #: Dotted JSON path -> why the value there is null.
    unavailable: tuple[tuple[str, str], ...] = field(metadata=js(mapping=True))

    @classmethod
    def of(cls, report: InspectionReport) -> StagesDocument:
        """The document of ``report``."""
        return cls(
            run=RunFacts.of(report),
            outputs=report.outputs,
            communication=Communication.of(report),
            stages=StageTexts(
                jaxpr=report.stage("jaxpr"),
                stablehlo=report.stage("stablehlo"),
                hlo=report.stage("hlo"),
            ),
            cost=report.cost,
            memory=report.memory,
            timings=report.timings,
            unavailable=report.unavailable,
        )


def render_json(report: InspectionReport) -> str:
    """Indented JSON with sorted keys, so two runs of the same program diff cleanly."""
    return json_text(stages_to_dict(report))


def stages_to_dict(report: InspectionReport) -> dict[str, Any]:
    """The report as the JSON document described by ``schemas/stages.schema.json``."""
    return {"schema_version": SCHEMA_VERSION, **encode_object(StagesDocument.of(report))}
