"""The mesh and sharding grammar of the spec (no jax import).

A sharding is written per dimension, as a ``PartitionSpec`` is: each entry names the mesh axes
that dimension is split over (none, one, or several). Two ways to write one:

- long form, ``sharding: [data, null]``, an entry a name, ``null`` or a list of names
  (``[[data, model], null]``);
- short form, in the leaf itself, the way JAX prints sharded types in a jaxpr:
  ``f32[256@data,784]``, ``f32[256@(data,model),64]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from jaxinspect.errors import SpecError
from jaxinspect.inputs.limits import MAX_DEVICES
from jaxinspect.suggest import did_you_mean

#: One dimension's mesh axes; ``()`` for a dimension that is not split.
DimAxes = tuple[str, ...]
#: A leaf's sharding: one entry per leading dimension (trailing ones are not split).
Sharding = tuple[DimAxes, ...]

_AXIS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class MeshSpec:
    """Mesh axis names and sizes, in order (the devices fill it row-major)."""

    axes: tuple[tuple[str, int], ...]

    @property
    def size(self) -> int:
        """Number of devices the mesh spans."""
        return math.prod(size for _, size in self.axes)

    @property
    def names(self) -> tuple[str, ...]:
        """Axis names in order."""
        return tuple(name for name, _ in self.axes)

    def axis_size(self, name: str) -> int:
        """Size of axis ``name``."""
        return dict(self.axes)[name]

    def __str__(self) -> str:
        return ", ".join(f"{name}={size}" for name, size in self.axes)


def parse_mesh(raw: object, where: str) -> MeshSpec:
    """``{data: 4, model: 2}`` (YAML) to a ``MeshSpec``.

    Raises:
        SpecError: Not a mapping of axis names to positive sizes.
    """
    if not isinstance(raw, Mapping) or not raw:
        raise SpecError(
            f"{where}: expected a mapping of axis names to sizes, e.g. {{data: 4, model: 2}}"
        )
    axes = []
    for name, size in raw.items():
        if not isinstance(name, str) or not _AXIS.match(name):
            raise SpecError(
                f"{where}: {name!r} is not an axis name (ASCII letters, digits and _, "
                "not starting with a digit)"
            )
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise SpecError(f"{where}.{name}: the size must be a positive integer, not {size!r}")
        if size > MAX_DEVICES:
            raise SpecError(f"{where}.{name}: {size} devices is more than {MAX_DEVICES:,}")
        axes.append((name, size))
    mesh = MeshSpec(tuple(axes))
    if mesh.size > MAX_DEVICES:
        raise SpecError(f"{where}: the mesh spans {mesh.size:,} devices, more than {MAX_DEVICES:,}")
    return mesh


def parse_mesh_option(text: str) -> MeshSpec:
    """``--mesh data=4,model=2`` to a ``MeshSpec``.

    Raises:
        SpecError: Not ``NAME=SIZE`` pairs.
    """
    raw: dict[str, object] = {}
    for part in text.split(","):
        name, sep, size = part.strip().partition("=")
        if not sep or not (size.strip().isascii() and size.strip().isdigit()):
            raise SpecError(f"--mesh {text!r}: expected NAME=SIZE[,NAME=SIZE], e.g. data=4,model=2")
        if name.strip() in raw:
            raise SpecError(f"--mesh {text!r}: axis `{name.strip()}` is given twice")
        raw[name.strip()] = int(size)
    return parse_mesh(raw, "--mesh")


def parse_long_sharding(raw: object, where: str) -> Sharding:
    """``[data, null]`` or ``[[data, model], null]`` to a ``Sharding``.

    Raises:
        SpecError: An entry is not a name, ``null`` or a list of names.
    """
    if not isinstance(raw, list):
        raise SpecError(
            f"{where}: expected one entry per dimension, e.g. [data, null], not {raw!r}"
        )
    dims: list[DimAxes] = []
    for i, entry in enumerate(raw):
        if entry is None:
            dims.append(())
        elif isinstance(entry, str):
            dims.append((_axis_name(entry, f"{where}[{i}]"),))
        elif isinstance(entry, list) and entry:
            dims.append(tuple(_axis_name(a, f"{where}[{i}]") for a in entry))
        else:
            raise SpecError(
                f"{where}[{i}]: expected an axis name, null, or a list of axis names, not {entry!r}"
            )
    return _trimmed(dims)


def _trimmed(dims: list[DimAxes]) -> Sharding:
    """Trailing unsplit dimensions dropped: they are implied, as in a ``PartitionSpec``."""
    while dims and not dims[-1]:
        dims.pop()
    return tuple(dims)


def split_short_dims(text: str, where: str) -> tuple[list[str], Sharding | None]:
    """Split ``256@data,784`` into dimension texts and the sharding they carry.

    The sharding is ``None`` when no dimension names an axis.
    """
    parts = _split_outside_parens(text, where)
    dims: list[str] = []
    sharding: list[DimAxes] = []
    for part in parts:
        dim, sep, axes = part.partition("@")
        dims.append(dim)
        if not sep:
            sharding.append(())
            continue
        axes = axes.strip()
        if axes.startswith("(") and axes.endswith(")"):
            names = [a.strip() for a in axes[1:-1].split(",")]
        else:
            names = [axes]
        sharding.append(tuple(_axis_name(a, where) for a in names))
    return dims, (_trimmed(sharding) if any(sharding) else None)


def _split_outside_parens(text: str, where: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise SpecError(f"{where}: unbalanced ')' in [{text}]")
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise SpecError(f"{where}: unbalanced '(' in [{text}]")
    parts.append(text[start:])
    return parts


def _axis_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not _AXIS.match(name.strip()):
        raise SpecError(f"{where}: {name!r} is not a mesh axis name")
    return name.strip()


def format_sharding(sharding: Sharding) -> str:
    """The sharding as a ``PartitionSpec`` reads: ``P('data', None)``; ``P()`` replicated."""
    entries = []
    for axes in sharding:
        if not axes:
            entries.append("None")
        elif len(axes) == 1:
            entries.append(repr(axes[0]))
        else:
            entries.append("(" + ", ".join(repr(a) for a in axes) + ")")
    return f"P({', '.join(entries)})"


def check_sharding(
    sharding: Sharding, shape: tuple[int, ...], mesh: MeshSpec | None, where: str
) -> None:
    """Check ``sharding`` against a leaf's ``shape`` and the ``mesh``.

    Raises:
        SpecError: No mesh, an unknown axis, an axis used twice, more entries than
            dimensions, or a dimension its axes do not divide, naming the leaf.
    """
    mesh = check_axes(sharding, mesh, where)
    if len(sharding) > len(shape):
        raise SpecError(
            f"{where}: the sharding has {len(sharding)} entries for a leaf of rank {len(shape)}"
        )
    for i, axes in enumerate(sharding):
        ways = math.prod(mesh.axis_size(a) for a in axes)
        if shape[i] % ways:
            over = "×".join(f"{a}={mesh.axis_size(a)}" for a in axes)
            raise SpecError(
                f"{where}: dimension {i} of size {shape[i]} does not divide by {ways} ({over})"
            )


def check_axes(sharding: Sharding, mesh: MeshSpec | None, where: str) -> MeshSpec:
    """Check that ``sharding`` names axes of ``mesh``, each once; returns the mesh.

    Raises:
        SpecError: No mesh, an unknown axis, or an axis used twice.
    """
    if mesh is None:
        raise SpecError(
            f"{where}: a sharding needs a mesh",
            hint="Add `mesh: {data: 4}` to the spec (or --mesh data=4 with --arg).",
        )
    seen: set[str] = set()
    for axes in sharding:
        for axis in axes:
            if axis not in mesh.names:
                raise SpecError(
                    f"{where}: axis `{axis}` is not in the mesh ({mesh})"
                    f"{did_you_mean(axis, mesh.names)}"
                )
            if axis in seen:
                raise SpecError(f"{where}: axis `{axis}` shards two dimensions")
            seen.add(axis)
    return mesh
