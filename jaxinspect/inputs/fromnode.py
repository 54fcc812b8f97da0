"""``from:`` nodes of the spec grammar: a subtree built by a Python factory (no jax import)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jaxinspect.errors import SpecError, TargetError
from jaxinspect.inputs.target import parse_target
from jaxinspect.suggest import did_you_mean

#: Keys a ``from:`` node may have.
FROM_KEYS = ("from", "kwargs", "path")


@dataclass(frozen=True, slots=True)
class FromNode:
    """A pytree the spec asks a Python function to build, evaluated abstractly.

    Attributes:
        ref: The factory, ``file.py:name`` or ``package.module:name``.
        kwargs: Keyword arguments for the factory, as YAML gave them.
        where: The spec key holding the node (``spec.yaml: args.state``), for messages.
        folder: The spec file's folder, which a relative ``file.py`` is resolved against;
            ``None``: the current folder.
        path: Keys, attribute names or indices selecting a part of the factory's result.
    """

    ref: str
    kwargs: tuple[tuple[str, Any], ...] = field(default=(), hash=False)
    where: str = field(default="", compare=False)
    folder: str | None = None
    path: tuple[str | int, ...] = ()

    @property
    def label(self) -> str:
        """``from: file.py:name`` plus the selected part, for messages."""
        part = "".join(f"[{p!r}]" for p in self.path)
        return f"from: {self.ref}{part}"


@dataclass(frozen=True, slots=True, eq=False)
class ValueNode:
    """A pytree given as a Python object (arrays or ``ShapeDtypeStruct``s), not as YAML.

    The pytest fixture's ``args=`` and a callable-pytree target's own arrays use it.
    """

    value: Any
    where: str


def is_from_mapping(raw: object) -> bool:
    """Whether a YAML mapping is a ``from:`` node rather than a dict argument."""
    return isinstance(raw, Mapping) and "from" in raw


def parse_from(raw: Mapping[Any, Any], where: str, folder: str | None) -> FromNode:
    """Validate a ``{from: ..., kwargs: {...}, path: [...]}`` mapping.

    Raises:
        SpecError: An unknown key, a malformed reference, or kwargs that are not a mapping.
    """
    for key in raw:
        if key not in FROM_KEYS:
            raise SpecError(
                f"{where}: unknown key `{key}` in a `from:` node"
                f"{did_you_mean(str(key), FROM_KEYS)}; it takes from, kwargs and path"
            )
    ref = raw["from"]
    if not isinstance(ref, str):
        raise SpecError(
            f"{where}.from: expected FILE.py:NAME or package.module:NAME, not {ref!r}",
            hint="e.g. `from: train.py:init_state`",
        )
    try:
        parse_target(ref)
    except TargetError as exc:
        raise SpecError(f"{where}.from: {exc.message.replace('target ', '', 1)}") from None
    return FromNode(
        ref=ref,
        kwargs=_parse_kwargs(raw.get("kwargs"), f"{where}.kwargs"),
        where=where,
        folder=folder,
        path=_parse_path(raw.get("path"), f"{where}.path"),
    )


def _parse_kwargs(raw: object, where: str) -> tuple[tuple[str, Any], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise SpecError(f"{where}: expected a mapping of keyword arguments, not {raw!r}")
    out = []
    for name, value in raw.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SpecError(f"{where}: {name!r} is not a valid keyword argument name")
        out.append((name, value))
    return tuple(out)


def _parse_path(raw: object, where: str) -> tuple[str | int, ...]:
    if raw is None:
        return ()
    items = raw if isinstance(raw, list) else [raw]
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise SpecError(
                f"{where}: {item!r} is not a key, attribute name or index; "
                "write a list such as [state, params]"
            )
    return tuple(items)
