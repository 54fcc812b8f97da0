"""Immutable objects: the TPU slices this libtpu can compile for (``jaxinspect topologies``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SliceInfo:
    """One TPU slice libtpu can compile for."""

    name: str  # as --topology takes it: v5e:2x2
    devices: int  # JAX devices: one per TensorCore where a chip has two (v3, v4)
    chips: int
    kind: str  # JAX's device_kind: "TPU v5 lite"
    #: HBM per chip from the built-in device table (``cost --device``); ``None`` if unknown.
    hbm_bytes: int | None
    #: The ``cost --device`` profile of the chip, or ``None``.
    profile: str | None
    #: Where ``hbm_bytes`` comes from (the profile's cited source), or why it is ``None``.
    hbm_source: str = ""


@dataclass(frozen=True, slots=True)
class TopologiesReport:
    """The slices tried, and those libtpu accepted."""

    libtpu_version: str
    slices: tuple[SliceInfo, ...]
    #: Names tried that this libtpu refused (e.g. a newer generation).
    refused: tuple[str, ...] = ()
    #: The public pages the chips' HBM figures are read from, one per generation listed.
    sources: tuple[str, ...] = ()
