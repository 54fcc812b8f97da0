"""TPU slices compiled for from any host, through libtpu (``pip install "jaxinspect[tpu]"``).

``jax.experimental.topologies`` describes a slice's chips without the hardware; a program
sharded over them compiles with the real TPU compiler (tiled layouts, collectives, XLA's time
estimate, per-chip memory) but cannot run here.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from jaxinspect.errors import UsageError
from jaxinspect.process.nativelog import libtpu_installed, quiet_native_stderr
from jaxinspect.suggest import did_you_mean
from jaxinspect.topologies.report import SliceInfo, TopologiesReport
from jaxinspect.xla.profiles import profile_for_kind

#: Slice names tried by ``jaxinspect topologies``: the shapes Cloud TPU sells per generation.
#: Which of them libtpu accepts is asked of libtpu itself.
CANDIDATES = (
    "v3:2x2",
    "v3:4x4",
    "v4:2x2x1",
    "v4:2x2x2",
    "v4:2x2x4",
    "v4:4x4x4",
    "v5e:2x2",
    "v5e:2x4",
    "v5e:4x4",
    "v5e:4x8",
    "v5e:8x8",
    "v5e:8x16",
    "v5e:16x16",
    "v5p:2x2x1",
    "v5p:2x2x2",
    "v5p:2x4x4",
    "v5p:4x4x4",
    "v6e:2x2",
    "v6e:2x4",
    "v6e:4x4",
    "v6e:4x8",
    "v6e:8x8",
    "v6e:8x16",
    "v6e:16x16",
    "v7:2x2x1",
)

_NAME = re.compile(r"^[A-Za-z0-9_ ]+[=_:][0-9x]+(_twisted|_untwisted)?$")
#: A Cloud TPU accelerator type (``v5litepod-16``, ``v4-8``): people know slices by these.
_ACCELERATOR_TYPE = re.compile(r"^(v\d+[a-z]*)-(\d+)$")
#: Generations whose accelerator types count TensorCores, two per chip (v4-8: four chips);
#: the others count chips (v5litepod-16, v6e-16: sixteen).
_TYPE_COUNTS_CORES = frozenset({"v2", "v3", "v4", "v5p"})
_TYPE_GENERATION = {"v5litepod": "v5e"}
_EXTRA = 'pip install "jaxinspect[tpu]"'
_LISTS_THEM = "`jaxinspect topologies` lists every name this libtpu accepts."


def share_libtpu() -> None:
    """Let this process load libtpu beside another that holds it (a test run, a second
    jaxinspect): by default libtpu takes a machine-wide lock file, and the second process
    fails with "Internal error when accessing libtpu multi-process lockfile". Compiling for a
    described slice touches no TPU, so sharing is safe; a value the user set is kept."""
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")


def topology_devices(name: str) -> tuple[Any, ...]:
    """The chips of the TPU slice ``name`` (``v5e:2x2``), described by libtpu, or the GPUs of
    the GPU target ``name`` (``h100:8``), described by JAX's CUDA plugin.

    Raises:
        UsageError: libtpu (or the CUDA plugin) is not installed (naming the extra), cannot
            start, or refuses ``name`` (listing the names it accepts).
    """
    from jaxinspect.topologies import gpu as gputarget

    if gputarget.looks_like_gpu(name):
        return gputarget.describe_target(name)
    model = name.rpartition(":")[0].strip().lower()
    if model and not re.match(r"^v\d", model) and did_you_mean(model, tuple(gputarget.MODELS)):
        gputarget.parse_target(name)  # a misspelt GPU model: refused with the GPU models listed
    # A malformed name is the user's first mistake, whether or not libtpu is installed.
    if not _NAME.match(name):
        suggestion = ""
        if libtpu_installed():  # the names it accepts, for a "did you mean"
            share_libtpu()
            suggestion = _as_slice_name(name)
        raise UsageError(
            f"--topology {name!r}: a slice name is GENERATION:SHAPE, e.g. v5e:2x2 or v4:2x2x1,"
            " or a GPU target MODEL:GPUS, e.g. h100:8"
            f"{suggestion}",
            hint=_LISTS_THEM,
        )
    if not libtpu_installed():
        raise UsageError(
            f"--topology {name}: compiling for a TPU slice needs libtpu",
            hint=f"Install it with {_EXTRA} (about 700 MB; no TPU needed).",
        )
    share_libtpu()
    described = _describe(name)
    if isinstance(described, str):
        raise UsageError(f"--topology {name}: {_refusal(name, described)}", hint=_LISTS_THEM)
    return described


@functools.cache
def _describe(name: str) -> tuple[Any, ...] | str:
    """The devices of slice ``name``, or libtpu's reason for refusing the name.

    Raises:
        UsageError: libtpu failed otherwise (it could not start); what it wrote to stderr is
            part of the message.
    """
    from jax.experimental import topologies

    with quiet_native_stderr():
        try:
            description = topologies.get_topology_desc(topology_name=name, platform="tpu")
        except Exception as exc:  # jaxlib's JaxRuntimeError: "INVALID_ARGUMENT: <why>"
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            if first.startswith("INVALID_ARGUMENT: "):
                return first.removeprefix("INVALID_ARGUMENT: ").rstrip(".")
            raise UsageError(
                f"--topology {name}: libtpu could not describe the slice: {first}",
                hint=f"The tpu extra pins libtpu to this JAX; reinstall it with {_EXTRA}.",
            ) from None
    return tuple(description.devices)


def accepted(names: tuple[str, ...] = CANDIDATES) -> tuple[str, ...]:
    """Those of ``names`` that this libtpu describes (each probe takes milliseconds)."""
    return tuple(n for n in names if not isinstance(_describe(n), str))


def _refusal(name: str, reason: str) -> str:
    """Why ``name`` was refused and what this libtpu accepts instead."""
    generation = name.split(":")[0]
    family = accepted(tuple(c for c in CANDIDATES if c.split(":")[0] == generation))
    if family:
        listing = f"{generation} slices it accepts include {', '.join(family)}"
    else:
        generations = dict.fromkeys(n.split(":")[0] for n in accepted())
        listing = f"generations it accepts: {', '.join(generations)}"
    return f"libtpu refuses it ({reason}); {listing}{did_you_mean(name, family or accepted())}"


def _as_slice_name(name: str) -> str:
    """`` (v5e-16 is an accelerator type; the slice is v5e:4x4)``, or an empty string."""
    typed = _ACCELERATOR_TYPE.match(name)
    if typed is None:
        return did_you_mean(name, accepted())
    generation = _TYPE_GENERATION.get(typed[1], typed[1])
    chips = int(typed[2]) // (2 if generation in _TYPE_COUNTS_CORES else 1)
    for candidate in accepted(tuple(c for c in CANDIDATES if c.startswith(generation + ":"))):
        devices = _describe(candidate)
        if not isinstance(devices, str) and chip_count(devices) == chips:
            return f" ({name} is a Cloud TPU accelerator type; as a slice: {candidate})"
    return ""


def chip_count(devices: tuple[Any, ...] | list[Any]) -> int:
    """Chips under ``devices``: a v3 or v4 chip shows as two devices (one per core)."""
    coords = {tuple(getattr(d, "coords", ()) or ()) for d in devices}
    return len(coords) if coords and coords != {()} else len(devices)


def device_capacity(devices: tuple[Any, ...] | list[Any]) -> tuple[int | None, str]:
    """Memory one device can hold, from the built-in table, and where the figure comes from.

    A chip's HBM is shared by its devices: libtpu describes a v3 or v4 chip as two devices of
    one TensorCore each (``num_cores`` 1), a v5p chip as one device spanning both (2).
    """
    from jaxinspect.topologies import gpu as gputarget

    gpu = gputarget.device_capacity(devices)
    if gpu is not None:
        return gpu
    kind = str(devices[0].device_kind)
    profile = profile_for_kind(kind)
    if profile is None or profile.memory_bytes is None:
        return None, f"no built-in capacity for {kind!r} (cost --device lists the profiles)"
    cores = int(getattr(devices[0], "num_cores", 1) or 1)
    per_chip = max(1, profile.tensorcores // cores)
    share = "" if per_chip == 1 else f", shared by {per_chip} devices per chip"
    return profile.memory_bytes // per_chip, f"{profile.description}{share}: {profile.source}"


def list_slices() -> TopologiesReport:
    """Every slice of ``CANDIDATES`` that this libtpu accepts, with its chip and memory.

    Raises:
        UsageError: libtpu is not installed, or cannot start.
    """
    from importlib.metadata import version

    from jaxinspect.topologies import gpu as gputarget

    gpu_missing = gputarget.missing_pieces()
    if not libtpu_installed():
        if gpu_missing is not None:
            raise UsageError(
                "jaxinspect topologies: listing TPU slices needs libtpu, and GPU targets JAX's "
                "CUDA plugin",
                hint=f'Install {_EXTRA} (about 700 MB) or "jaxinspect[cuda]" (about 575 MB); '
                "neither needs the hardware.",
            )
        note = f"TPU slices: {_EXTRA} (about 700 MB; no TPU needed)"
        return TopologiesReport(None, (), gpus=gputarget.model_infos(), notes=(note,))
    share_libtpu()
    slices = []
    for name in accepted():
        devices = _describe(name)
        assert not isinstance(devices, str)  # accepted() kept only described names
        slices.append(_slice_info(name, devices))
    refused = tuple(n for n in CANDIDATES if isinstance(_describe(n), str))
    pages = (profile_for_kind(s.kind) for s in slices)
    sources = tuple(dict.fromkeys(p.url for p in pages if p is not None and p.url))
    notes = () if gpu_missing is None else (f"GPU targets: {gpu_missing}",)
    return TopologiesReport(
        version("libtpu"), tuple(slices), refused, sources, gputarget.model_infos(), notes
    )


def _slice_info(name: str, devices: tuple[Any, ...]) -> SliceInfo:
    kind = str(devices[0].device_kind)
    profile = profile_for_kind(kind)
    return SliceInfo(
        name=name,
        devices=len(devices),
        chips=chip_count(devices),
        kind=kind,
        hbm_bytes=None if profile is None else profile.memory_bytes,
        profile=None if profile is None else profile.name,
        hbm_source=f"no built-in figure for {kind!r}" if profile is None else profile.source,
    )
