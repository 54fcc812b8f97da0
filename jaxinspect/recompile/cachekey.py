"""jit's cache key in readable form (leaves, statics, pytree structure), and how two differ."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from jaxinspect.inputs.binding import CallPlan
from jaxinspect.jsonfields import js
from jaxinspect.usertext import safe_repr


@dataclass(frozen=True, slots=True)
class LeafKey:
    """What jit keys one traced leaf on."""

    path: str
    shape: tuple[int, ...]
    dtype: str
    weak_type: bool
    sharding: str

    @property
    def summary(self) -> str:
        """``f32[64,16] weak on cpu:0`` style one-liner."""
        weak = " weak" if self.weak_type else ""
        return f"{self.dtype}[{','.join(map(str, self.shape))}]{weak} {self.sharding}"


@dataclass(frozen=True, slots=True)
class CacheKey:
    """The parts of a call's signature that select (or force) a compiled executable.

    Attributes:
        leaves: One entry per traced array leaf, in call order.
        static: ``(name, repr(value))`` of each static argument.
        structure: The pytree structure of the traced arguments, as JAX prints it.
    """

    leaves: tuple[LeafKey, ...] = field(metadata=js("args"))
    static: tuple[tuple[str, str], ...] = field(metadata=js(mapping=True))
    structure: str


#: What part of a cache key a :class:`KeyChange` is about: a leaf's ``shape``, ``dtype``,
#: ``weak_type`` or ``sharding``, a ``static`` argument, an ``argument`` present on one side
#: only, or the pytree ``structure``.
KEY_COMPONENTS = ("shape", "dtype", "weak_type", "sharding", "static", "argument", "structure")


@dataclass(frozen=True, slots=True)
class KeyChange:
    """One component that differs: ``x: shape 128×784 → 64×784``."""

    path: str
    #: What differs: a leaf's shape, dtype, weak_type or sharding, a static argument, an
    #: argument on one side only, or the pytree structure.
    component: str = field(metadata=js(schema={"enum": list(KEY_COMPONENTS)}))
    before: str
    after: str

    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("text",)

    def __str__(self) -> str:
        return self.text

    @property
    def text(self) -> str:
        """The change as one line."""
        return f"{self.path}: {self.component} {self.before} → {self.after}"


def build_cache_key(plan: CallPlan, args: list[Any], kwargs: dict[str, Any]) -> CacheKey:
    """The key of a call with abstract ``args``/``kwargs`` (``ShapeDtypeStruct`` trees, statics)."""
    import jax

    leaves: list[LeafKey] = []
    dynamic: list[Any] = []
    positional = iter(args)
    for arg in plan.args:
        value = kwargs[arg.name] if arg.keyword else next(positional)
        if arg.static:
            continue
        dynamic.append(value)
        for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
            leaves.append(
                LeafKey(
                    path=f"{arg.name}{jax.tree_util.keystr(path)}",
                    shape=tuple(int(d) for d in leaf.shape),
                    dtype=str(leaf.dtype),
                    weak_type=bool(getattr(leaf, "weak_type", False)),
                    sharding=describe_sharding(getattr(leaf, "sharding", None)),
                )
            )
    static = tuple((a.name, safe_repr(a.value)) for a in plan.args if a.static)
    structure = str(jax.tree_util.tree_structure(tuple(dynamic)))
    return CacheKey(tuple(leaves), static, structure)


def describe_sharding(sharding: Any) -> str:
    """``cpu:0`` for one device, else the mesh axes and partition spec."""
    if sharding is None:
        return "unspecified"
    devices = sorted(sharding.device_set, key=lambda d: d.id)
    spec = getattr(sharding, "spec", None)
    if len(devices) == 1 and spec is None:
        return f"{devices[0].platform}:{devices[0].id}"
    mesh = getattr(sharding, "mesh", None)
    if mesh is not None and spec is not None:
        from jaxinspect.inputs.placedshards import sharding_text

        # P('data') over data=4,model=2: the spec as written, then the mesh it names.
        axes = ",".join(f"{k}={v}" for k, v in mesh.shape.items())
        return f"{sharding_text(sharding)} over {axes}"
    return f"{type(sharding).__name__}({len(devices)} devices, {spec})"


def key_changes(before: CacheKey, after: CacheKey) -> tuple[KeyChange, ...]:
    """Every component of ``after`` that differs from ``before``, leaves first."""
    changes: list[KeyChange] = []
    old = {leaf.path: leaf for leaf in before.leaves}
    new = {leaf.path: leaf for leaf in after.leaves}
    for path, leaf in new.items():
        if path not in old:
            changes.append(KeyChange(path, "argument", "absent", _short(leaf)))
        else:
            changes += _leaf_changes(old[path], leaf)
    changes += [
        KeyChange(p, "argument", _short(v), "absent") for p, v in old.items() if p not in new
    ]
    old_static, new_static = dict(before.static), dict(after.static)
    for name in [*new_static, *(n for n in old_static if n not in new_static)]:
        was, now = old_static.get(name, "absent"), new_static.get(name, "absent")
        if was != now:
            changes.append(KeyChange(name, "static", was, now))
    # Same leaf paths but another structure: e.g. a list became a tuple.
    if before.structure != after.structure and set(old) == set(new):
        changes.append(KeyChange("(arguments)", "structure", before.structure, after.structure))
    return tuple(changes)


def _leaf_changes(old: LeafKey, new: LeafKey) -> list[KeyChange]:
    pairs = [
        ("shape", _dims(old.shape), _dims(new.shape)),
        ("dtype", old.dtype, new.dtype),
        ("weak_type", str(old.weak_type), str(new.weak_type)),
        ("sharding", old.sharding, new.sharding),
    ]
    return [KeyChange(new.path, c, was, now) for c, was, now in pairs if was != now]


def _dims(shape: tuple[int, ...]) -> str:
    return "×".join(map(str, shape)) if shape else "scalar"


def _short(leaf: LeafKey) -> str:
    return f"{leaf.dtype}[{','.join(map(str, leaf.shape))}]"
