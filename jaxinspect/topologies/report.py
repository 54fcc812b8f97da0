"""Immutable objects: the TPU slices and GPU targets compiled for from this host
(``jaxinspect topologies``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxinspect.jsonfields import js


@dataclass(frozen=True, slots=True)
class SliceInfo:
    """One TPU slice libtpu can compile for."""

    name: str  # as --topology takes it: v5e:2x2
    devices: int  # JAX devices: one per TensorCore where a chip has two (v3, v4)
    chips: int
    kind: str  # JAX's device_kind: "TPU v5 lite"
    #: HBM per chip from the built-in device table (``cost --device``); ``None`` if unknown.
    hbm_bytes: int | None = field(metadata=js("hbm_bytes_per_chip"))
    #: The ``cost --device`` profile of the chip, or ``None``.
    profile: str | None
    #: Where ``hbm_bytes`` comes from (the profile's cited source), or why it is ``None``.
    hbm_source: str = ""


@dataclass(frozen=True, slots=True)
class GpuModelInfo:
    """One GPU model ``--topology MODEL:GPUS`` compiles for, from its shipped target config."""

    name: str  # as --topology takes it before the count: h100
    kind: str  # the config's device_description_str, JAX's device_kind: "NVIDIA H100 80GB HBM3"
    hbm_bytes: int = field(metadata=js("hbm_bytes_per_gpu"))
    bandwidth_bytes_per_s: int | None = field(metadata=js("hbm_bandwidth_bytes_per_s"))
    compute_capability: str  # "9.0"
    source: str  # the config's cited source


@dataclass(frozen=True, slots=True)
class TopologiesReport:
    """The slices tried, those libtpu accepted, and the GPU models."""

    #: ``None`` without libtpu: no TPU slice is listed (``tpu_note`` says what to install).
    libtpu_version: str | None
    slices: tuple[SliceInfo, ...] = field(metadata=js("topologies"))
    #: Names tried that this libtpu refused (e.g. a newer generation).
    refused: tuple[str, ...] = ()
    #: The public pages the chips' HBM figures are read from, one per generation listed.
    sources: tuple[str, ...] = ()
    #: The GPU models with a shipped target config (listed whether or not the plugin is here).
    gpus: tuple[GpuModelInfo, ...] = ()
    #: What is missing for the TPU slices or the GPU targets to compile, one line each.
    notes: tuple[str, ...] = ()
