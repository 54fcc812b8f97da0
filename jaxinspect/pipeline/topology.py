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

from jaxinspect.cost.profiles import profile_for_kind
from jaxinspect.errors import UsageError
from jaxinspect.pipeline.nativelog import libtpu_installed, quiet_native_stderr
from jaxinspect.reports.topologies import SliceInfo, TopologiesReport
from jaxinspect.suggest import did_you_mean

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
_EXTRA = 'pip install "jaxinspect[tpu]"'


def share_libtpu() -> None:
    """Let this process load libtpu beside another that holds it (a test run, a second
    jaxinspect): by default libtpu takes a machine-wide lock file, and the second process
    fails with "Internal error when accessing libtpu multi-process lockfile". Compiling for a
    described slice touches no TPU, so sharing is safe; a value the user set is kept."""
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")


def topology_devices(name: str) -> tuple[Any, ...]:
    """The chips of the TPU slice ``name`` (``v5e:2x2``), described by libtpu.

    Raises:
        UsageError: libtpu is not installed (naming the extra), or it refuses ``name``.
    """
    if not libtpu_installed():
        raise UsageError(
            f"--topology {name}: compiling for a TPU slice needs libtpu",
            hint=f"Install it with {_EXTRA} (about 700 MB; no TPU needed).",
        )
    share_libtpu()
    if not _NAME.match(name):
        raise UsageError(
            f"--topology {name!r}: a slice name is GENERATION:SHAPE, e.g. v5e:2x2 or v4:2x2x1",
            hint="`jaxinspect topologies` lists the names this libtpu accepts.",
        )
    try:
        return _devices(name)
    except Exception as exc:  # jaxlib raises JaxRuntimeError(INVALID_ARGUMENT ...)
        reason = str(exc).splitlines()[0].removeprefix("INVALID_ARGUMENT: ")
        known = [c for c in CANDIDATES if c.split(":")[0] == name.split(":")[0]] or CANDIDATES
        raise UsageError(
            f"--topology {name}: libtpu refuses it: {reason}{did_you_mean(name, known)}",
            hint="`jaxinspect topologies` lists the names this libtpu accepts.",
        ) from None


@functools.cache
def _devices(name: str) -> tuple[Any, ...]:
    from jax.experimental import topologies

    with quiet_native_stderr():
        description = topologies.get_topology_desc(topology_name=name, platform="tpu")
    return tuple(description.devices)


def chip_count(devices: tuple[Any, ...] | list[Any]) -> int:
    """Chips under ``devices``: a v3 or v4 chip shows as two devices (one per core)."""
    coords = {tuple(getattr(d, "coords", ()) or ()) for d in devices}
    return len(coords) if coords and coords != {()} else len(devices)


def device_capacity(devices: tuple[Any, ...] | list[Any]) -> tuple[int | None, str]:
    """Memory one device can hold, from the built-in table, and where the figure comes from.

    A chip's HBM is shared by its devices (v3, v4: two cores per chip).
    """
    kind = str(devices[0].device_kind)
    profile = profile_for_kind(kind)
    if profile is None or profile.memory_bytes is None:
        return None, f"no built-in capacity for {kind!r} (cost --device lists the profiles)"
    per_chip = max(1, len(devices) // chip_count(devices))
    share = "" if per_chip == 1 else f", shared by {per_chip} devices per chip"
    return profile.memory_bytes // per_chip, f"{profile.description}{share}: {profile.source}"


def list_slices() -> TopologiesReport:
    """Every slice of ``CANDIDATES`` that this libtpu accepts, with its chip and memory.

    Raises:
        UsageError: libtpu is not installed.
    """
    from importlib.metadata import version

    out = []
    refused = []
    for name in CANDIDATES:
        try:
            devices = topology_devices(name)
        except UsageError:
            if not libtpu_installed():
                raise
            refused.append(name)
            continue
        kind = str(devices[0].device_kind)
        profile = profile_for_kind(kind)
        out.append(
            SliceInfo(
                name=name,
                devices=len(devices),
                chips=chip_count(devices),
                kind=kind,
                hbm_bytes=None if profile is None else profile.memory_bytes,
                profile=None if profile is None else profile.name,
            )
        )
    return TopologiesReport(version("libtpu"), tuple(out), tuple(refused))
