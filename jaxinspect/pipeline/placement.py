"""Where a run's arrays live: one device, or a mesh of devices (CPU, GPU, or a TPU slice).

The spec's ``mesh:``, ``devices:`` and ``topology:`` (or ``--mesh``/``--devices``/``--topology``)
decide the devices; each leaf's ``sharding:`` becomes a ``NamedSharding`` on the mesh, and a
leaf without one is replicated over it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from jaxinspect.errors import SpecError, UsageError
from jaxinspect.inputs.shardspec import MeshSpec, Sharding
from jaxinspect.inputs.spec import Spec, check_placement
from jaxinspect.pipeline.backend import reserve_cpu_devices, select_devices


@dataclass(frozen=True, slots=True)
class Placement:
    """The devices of a run and, with a mesh, the JAX ``Mesh`` over them.

    Attributes:
        devices: The devices the program is compiled for (the mesh's, in mesh order).
        mesh: JAX's mesh, or ``None`` for a single-device run.
        mesh_spec: The mesh as the spec wrote it.
        topology: The TPU slice or GPU target compiled for from this host, or ``None``: a local
            backend whose devices can run the program.
    """

    devices: tuple[Any, ...]
    mesh: Any | None = None
    mesh_spec: MeshSpec | None = None
    topology: str | None = None

    @property
    def device(self) -> Any:
        """The first device (the only one without a mesh)."""
        return self.devices[0]

    @property
    def can_execute(self) -> bool:
        """Whether the devices exist here (a topology's are descriptions of remote chips)."""
        return self.topology is None

    def sharding(self, leaf_sharding: Sharding | None = None) -> Any:
        """The JAX sharding of a leaf: split as written, else replicated (or on the device).

        Several devices and no mesh (a ``shard_map`` target that builds its own): ``None``,
        an uncommitted input that jit places where the program's mesh needs it.
        """
        if self.mesh is None:
            if len(self.devices) > 1:
                return None
            return jax.sharding.SingleDeviceSharding(self.device)
        spec = jax.sharding.PartitionSpec(*(_entry(axes) for axes in leaf_sharding or ()))
        return jax.sharding.NamedSharding(self.mesh, spec)


def _entry(axes: tuple[str, ...]) -> Any:
    if not axes:
        return None
    return axes[0] if len(axes) == 1 else axes


def place(spec: Spec, backend: str | None) -> Placement:
    """The devices and mesh a run of ``spec`` uses.

    Without ``topology``, ``devices`` (else the mesh's size, else 1) devices of ``backend``;
    CPU devices are set up before the backend starts if needed.

    Raises:
        UsageError: The backend is unavailable or has too few devices, or ``--backend``
            contradicts ``--topology``.
        SpecError: The mesh needs more devices than the run has.
    """
    check_placement(spec)  # a sharded leaf with no mesh must not run unsharded
    mesh_spec = spec.mesh
    if spec.topology is not None:
        from jaxinspect.topologies.gpu import looks_like_gpu
        from jaxinspect.topologies.tpu import topology_devices

        platform = "gpu" if looks_like_gpu(spec.topology) else "tpu"
        if backend not in (None, platform, "cuda" if platform == "gpu" else platform):
            raise UsageError(
                f"--backend {backend} with --topology {spec.topology}: the topology is "
                f"{platform.upper()}"
            )

        devices = tuple(topology_devices(spec.topology))
        where = f"topology {spec.topology} ({len(devices)} devices)"
    else:
        count = spec.devices or (mesh_spec.size if mesh_spec else 1)
        if backend in (None, "cpu"):
            reserve_cpu_devices(count)
        devices = select_devices(backend, count)
        where = f"{count} device{'s' if count > 1 else ''}"
    if mesh_spec is None:
        # A topology without a mesh: one chip. Local devices: all, for the target's own mesh.
        return Placement(devices[:1] if spec.topology else devices, topology=spec.topology)
    if mesh_spec.size > len(devices):
        raise SpecError(
            f"{spec.source}: mesh ({mesh_spec}) needs {mesh_spec.size} devices; "
            f"the run has {where}",
            hint="Give --devices N (CPU) or a larger --topology, or a smaller mesh.",
        )
    used = devices[: mesh_spec.size]
    grid = np.array(used, dtype=object).reshape([size for _, size in mesh_spec.axes])
    mesh = jax.sharding.Mesh(grid, mesh_spec.names)
    return Placement(used, mesh, mesh_spec, spec.topology)


def devices_needed(spec: Spec) -> int:
    """How many local devices a run of ``spec`` uses (a topology's chips are not local)."""
    if spec.topology is not None:
        return 1
    return spec.devices or (spec.mesh.size if spec.mesh else 1)


def reserve_devices(specs: list[Spec], backend: str | None) -> None:
    """Set up enough CPU devices for every spec before anything starts JAX's backend.

    Importing a target can start it (a module that builds its mesh at import), so commands
    call this before loading the target.

    Raises:
        UsageError: The CPU backend already started with too few devices.
    """
    if any(s.topology is not None for s in specs):
        from jaxinspect.topologies.gpu import keep_cuda_uninitialized, looks_like_gpu
        from jaxinspect.topologies.tpu import share_libtpu

        share_libtpu()  # before anything loads libtpu
        if any(s.topology and looks_like_gpu(s.topology) for s in specs):
            keep_cuda_uninitialized()  # before the target's import can start JAX's backends
    if backend in (None, "cpu"):
        reserve_cpu_devices(max((devices_needed(s) for s in specs), default=1))


def constrain_outputs(
    function: Callable[..., Any], shardings: tuple[Sharding | None, ...], placement: Placement
) -> Callable[..., Any]:
    """``function`` with its output leaves constrained to ``out_shardings`` (``None``: free).

    A constraint on each output is what ``jit(out_shardings=...)`` does, without needing the
    output's structure before tracing, so the program is still traced once.
    """

    @functools.wraps(function)
    def constrained(*args: Any, **kwargs: Any) -> Any:
        out = function(*args, **kwargs)
        leaves, tree = jax.tree_util.tree_flatten(out)
        if len(leaves) != len(shardings):
            raise SpecError(
                f"out_shardings has {len(shardings)} entries; the function returns "
                f"{len(leaves)} array{'s' if len(leaves) != 1 else ''}",
                hint="Give one entry per output leaf, in order (null lets XLA choose).",
            )
        placed = [
            leaf if sharding is None else _constrain(leaf, sharding, placement, i)
            for i, (leaf, sharding) in enumerate(zip(leaves, shardings, strict=True))
        ]
        return jax.tree_util.tree_unflatten(tree, placed)

    return constrained


def _constrain(leaf: Any, sharding: Sharding, placement: Placement, index: int) -> Any:
    shape = tuple(getattr(leaf, "shape", ()))
    if len(sharding) > len(shape):
        raise SpecError(
            f"out_shardings[{index}]: {len(sharding)} entries for an output of rank {len(shape)}"
        )
    for dim, axes in enumerate(sharding):
        ways = (
            math.prod(placement.mesh_spec.axis_size(a) for a in axes) if placement.mesh_spec else 1
        )
        if shape[dim] % ways:
            raise SpecError(
                f"out_shardings[{index}]: output dimension {dim} of size {shape[dim]} "
                f"does not divide by {ways}"
            )
    return jax.lax.with_sharding_constraint(leaf, placement.sharding(sharding))
