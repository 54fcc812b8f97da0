"""The shape-spec grammar: YAML or ``--arg`` text to an immutable ``Spec`` (no jax import)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeAlias

from jaxinspect.errors import SpecError
from jaxinspect.inputs.fromnode import FromNode, ValueNode, is_from_mapping, parse_from
from jaxinspect.inputs.leaves import LeafSpec, parse_leaf, parse_long_leaf
from jaxinspect.inputs.limits import MAX_DEVICES
from jaxinspect.inputs.shardspec import (
    MeshSpec,
    Sharding,
    check_axes,
    check_sharding,
    parse_long_sharding,
    parse_mesh,
)
from jaxinspect.suggest import did_you_mean

#: Top-level keys a spec may have.
KNOWN_KEYS = (
    "args",
    "static",
    "donate",
    "mesh",
    "devices",
    "topology",
    "out_shardings",
    "python_numbers",
    "inputs",
)
#: ``python_numbers:`` values: how Python numbers in ``from:`` results are passed to jit.
PYTHON_NUMBERS = ("traced", "static")
#: The key of the tuple form, ``{tuple: [a, b]}`` (a mapping with that key alone).
TUPLE_KEY = "tuple"
#: Where executed inputs come from (``inputs:``, ``--inputs``): seeded random values for every
#: leaf, or the arrays ``from:`` factories return (YAML leaves stay random, having no values).
INPUT_SOURCES = ("random", "factory")
#: Keys people write by analogy with other tools, and what to write instead.
_MISTAKEN_KEYS = {
    "shardings": "write `sharding:` on each leaf (or f32[256@data,784]), or `out_shardings:`",
    "in_shardings": "write `sharding:` on each leaf (or f32[256@data,784])",
}


@dataclass(frozen=True, slots=True)
class ListNode:
    """A YAML sequence of pytree nodes, passed as a Python list, or a tuple if written so.

    ``{tuple: [a, b]}`` is the tuple form: a pytree's structure tells a tuple from a list, so
    an argument a function receives as a tuple (diffrax's ``y0=(prey, predator)``) must be one.
    """

    items: tuple[Node, ...]
    is_tuple: bool = False

    def pack(self, values: list[Any]) -> list[Any] | tuple[Any, ...]:
        """``values`` in this node's container: a list, or a tuple for the tuple form."""
        return tuple(values) if self.is_tuple else values


@dataclass(frozen=True, slots=True)
class DictNode:
    """A YAML mapping of pytree nodes (passed to the function as a dict)."""

    items: tuple[tuple[str, Node], ...]


Node: TypeAlias = LeafSpec | ListNode | DictNode | FromNode | ValueNode


@dataclass(frozen=True, slots=True)
class Spec:
    """A parsed shape spec.

    Attributes:
        source: Where it came from (a file path, or ``--arg``), used in error messages.
        args: Argument pytrees, each named by parameter (mapping form) or ``None`` (list form).
        static: Compile-time constants by parameter name, lists turned into tuples.
    """

    source: str
    args: tuple[tuple[str | None, Node], ...]
    static: tuple[tuple[str, Any], ...] = ()
    #: Parameter names whose buffers are donated to the computation (``donate_argnames``).
    donate: tuple[str, ...] = ()
    #: ``args: {from: ...}``: one factory builds every argument (``args`` is then empty).
    args_from: FromNode | None = None
    #: ``mesh:``: the device mesh the leaves' shardings name.
    mesh: MeshSpec | None = None
    #: ``devices:``: how many devices of the backend to set up (CPU: before JAX starts).
    devices: int | None = None
    #: ``topology:``: a TPU slice or GPU target to compile for from here (``v5e:2x2``, ``h100:8``).
    topology: str | None = None
    #: ``out_shardings:``: one entry per output leaf, ``None`` where XLA chooses.
    out_shardings: tuple[Sharding | None, ...] | None = None
    #: ``python_numbers:``: ``traced`` or ``static`` for Python numbers in ``from:`` results;
    #: ``None`` follows the target (see ``inputs.numbers``).
    python_numbers: str | None = None
    #: ``inputs:``: what execution feeds the program, one of ``INPUT_SOURCES``.
    inputs: str = "random"

    @property
    def positional(self) -> bool:
        """Whether ``args`` was written as a list (bound positionally)."""
        return bool(self.args) and self.args[0][0] is None

    def leaves(self) -> tuple[LeafSpec, ...]:
        """Every YAML leaf of every argument, depth first (``from:`` subtrees have none)."""
        out: list[LeafSpec] = []
        for _, node in self.args:
            _collect_leaves(node, out)
        return tuple(out)

    @property
    def needs_x64(self) -> bool:
        """Whether any leaf is 64-bit, which turns on JAX's x64 mode for the run."""
        return any(leaf.is_64bit for leaf in self.leaves())

    @property
    def input_bytes(self) -> int:
        """Bytes of the concrete inputs its YAML leaves describe (``from:`` ones not counted)."""
        return sum(leaf.nbytes for leaf in self.leaves())

    @property
    def has_factories(self) -> bool:
        """Whether any argument comes from Python (``from:`` or a given value)."""
        return self.args_from is not None or any(has_factory(node) for _, node in self.args)


def _collect_leaves(node: Node, out: list[LeafSpec]) -> None:
    if isinstance(node, LeafSpec):
        out.append(node)
    elif isinstance(node, ListNode):
        for item in node.items:
            _collect_leaves(item, out)
    elif isinstance(node, DictNode):
        for _, item in node.items:
            _collect_leaves(item, out)


def has_factory(node: Node) -> bool:
    """Whether ``node`` holds a ``from:`` node or a given value anywhere."""
    if isinstance(node, FromNode | ValueNode):
        return True
    if isinstance(node, ListNode):
        return any(has_factory(item) for item in node.items)
    if isinstance(node, DictNode):
        return any(has_factory(item) for _, item in node.items)
    return False


def load_spec(path: str | Path) -> Spec:
    """Read and parse a YAML spec file.

    Raises:
        SpecError: The file is missing, not valid YAML, or not a valid spec.
    """
    folder = str(Path(path).parent)
    return parse_spec_text(read_spec_file(path), source=str(path), folder=folder)


def read_spec_file(path: str | Path) -> str:
    """The text of a spec file.

    Raises:
        SpecError: The file is missing or unreadable.
    """
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{p}: spec file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: cannot read spec file: {exc}") from None


def parse_spec_text(text: str, *, source: str, folder: str | None = None) -> Spec:
    """Parse spec YAML text; ``source`` names it in errors, ``folder`` anchors ``from:`` files."""
    return parse_spec_document(parse_yaml(text, source=source), source=source, folder=folder)


def parse_yaml(text: str, *, source: str) -> object:
    """Load spec YAML within the size and depth limits (``jaxinspect.inputs.yamlload``).

    Raises:
        SpecError: Invalid YAML (with line and column), an unsafe tag, a duplicate key, or a
            document over the limits.
    """
    from jaxinspect.inputs.yamlload import load_yaml

    # Brackets are YAML flow syntax: `[f32[2], f32[3]]` does not parse unquoted.
    hint = "Inside [...] or {...}, quote leaves: ['f32[2]', 'f32[3]'], or use block style."
    return load_yaml(text, source=source, syntax_hint=hint)


def parse_spec_document(document: object, *, source: str, folder: str | None = None) -> Spec:
    """Validate an already-loaded YAML document as a spec.

    ``folder`` is where relative ``from: file.py:name`` paths start (the spec file's folder);
    ``None``: the current folder.
    """
    if document is None:
        raise SpecError(f"{source}: the spec is empty", hint="Write at least `args:`.")
    if not isinstance(document, Mapping):
        raise SpecError(
            f"{source}: the spec must be a mapping with `args:` (and optionally `static:`), "
            f"not a {_yaml_type(document)}"
        )
    if "cases" in document:
        raise SpecError(
            f"{source}: `cases:` holds several argument sets; here one spec is expected",
            hint="Pick one case with --case NAME (a case cannot hold `cases:` itself).",
        )
    for key in document:
        if not isinstance(key, str):
            raise SpecError(f"{source}: top-level key {key!r} is not a name; use `args`, `static`")
        if key in _MISTAKEN_KEYS:
            raise SpecError(f"{source}: unknown top-level key `{key}`: {_MISTAKEN_KEYS[key]}")
        if key not in KNOWN_KEYS:
            raise SpecError(
                f"{source}: unknown top-level key `{key}`{did_you_mean(key, KNOWN_KEYS)}"
            )
    if "args" not in document:
        raise SpecError(f"{source}: missing top-level key `args`")
    if is_from_mapping(document["args"]):
        args_from = parse_from(document["args"], f"{source}: args", folder)
        args: tuple[tuple[str | None, Node], ...] = ()
    else:
        args_from = None
        args = _parse_args(document["args"], source, folder)
    static = _parse_static(document.get("static"), source)
    overlap = {name for name, _ in args} & {name for name, _ in static}
    if overlap:
        name = sorted(str(n) for n in overlap)[0]
        raise SpecError(f"{source}: `{name}` is given both under `args` and under `static`")
    donate = _parse_donate(document.get("donate"), source)
    for name in donate:
        if name in {n for n, _ in static}:
            raise SpecError(
                f"{source}: donate: `{name}` is under `static`; only traced arguments "
                "(under `args`) have buffers to donate"
            )
        # List-form args are named by the signature; binding checks those.
        if args and args[0][0] is not None and name not in {n for n, _ in args}:
            raise SpecError(
                f"{source}: donate: `{name}` is not under `args`"
                f"{did_you_mean(name, [str(n) for n, _ in args])}"
            )
    spec = Spec(
        source=source,
        args=args,
        static=static,
        donate=donate,
        args_from=args_from,
        mesh=parse_mesh(document["mesh"], f"{source}: mesh") if "mesh" in document else None,
        devices=_parse_devices(document.get("devices"), f"{source}: devices"),
        topology=_parse_topology(document.get("topology"), f"{source}: topology"),
        out_shardings=_parse_out_shardings(document.get("out_shardings"), source),
        python_numbers=_parse_python_numbers(document.get("python_numbers"), source),
        inputs=parse_input_source(document.get("inputs", "random"), f"{source}: inputs"),
    )
    # Without a mesh, a sharded leaf may still meet one from --mesh: that is checked when the
    # command line is applied (and again before anything is placed).
    check_placement(spec, mesh_given_later=spec.mesh is None)
    return spec


def with_placement(
    spec: Spec,
    *,
    mesh: MeshSpec | None = None,
    devices: int | None = None,
    topology: str | None = None,
) -> Spec:
    """``spec`` with the command line's ``--mesh``/``--devices``/``--topology`` over its own.

    Raises:
        SpecError: The result does not hold together (see ``check_placement``).
    """
    if mesh is None and devices is None and topology is None:
        return spec
    changed = replace(
        spec,
        mesh=mesh if mesh is not None else spec.mesh,
        # One of --devices/--topology replaces the other that the spec may name.
        devices=devices if devices is not None else (None if topology else spec.devices),
        topology=topology if topology is not None else (None if devices else spec.topology),
    )
    check_placement(changed)
    return changed


def check_placement(spec: Spec, *, mesh_given_later: bool = False) -> None:
    """Check every leaf's sharding and the output shardings against the spec's mesh.

    ``mesh_given_later``: a sharding without a mesh is not (yet) an error.

    Raises:
        SpecError: A sharding without a mesh, an axis not in the mesh, a dimension its axes
            do not divide, or ``devices:`` beside ``topology:``, naming the key.
    """
    if spec.devices is not None and spec.topology is not None:
        raise SpecError(
            f"{spec.source}: `devices` and `topology` both say which devices to use; give one",
            hint="A topology brings its own chips (v5e:2x2 has 4).",
        )
    if spec.mesh is None and mesh_given_later:
        return
    for where, leaf in _leaves_with_paths(spec):
        if leaf.sharding is not None:
            check_sharding(leaf.sharding, leaf.shape, spec.mesh, f"{where}.sharding")
    for i, sharding in enumerate(spec.out_shardings or ()):
        if sharding is not None:
            check_axes(sharding, spec.mesh, f"{spec.source}: out_shardings[{i}]")


def _leaves_with_paths(spec: Spec) -> list[tuple[str, LeafSpec]]:
    out: list[tuple[str, LeafSpec]] = []

    def walk(node: Node, where: str) -> None:
        if isinstance(node, LeafSpec):
            out.append((where, node))
        elif isinstance(node, ListNode):
            for i, item in enumerate(node.items):
                walk(item, f"{where}[{i}]")
        elif isinstance(node, DictNode):
            for key, item in node.items:
                walk(item, f"{where}.{key}")

    for i, (name, node) in enumerate(spec.args):
        walk(
            node, f"{spec.source}: args.{name}" if name is not None else f"{spec.source}: args[{i}]"
        )
    return out


def _parse_python_numbers(raw: object, source: str) -> str | None:
    if raw is None or raw in PYTHON_NUMBERS:
        return raw
    raise SpecError(
        f"{source}: python_numbers: expected `traced` (as jax.jit) or `static` "
        f"(as equinox.filter_jit), not {raw!r}"
    )


def parse_input_source(raw: object, where: str) -> str:
    """Validate ``inputs:`` (or ``--inputs``): ``random`` or ``factory``.

    Raises:
        SpecError: Any other value, naming ``where``.
    """
    if raw not in INPUT_SOURCES:
        shown = str(raw) if isinstance(raw, str) else repr(raw)
        raise SpecError(
            f"{where}: expected random or factory, not {shown}{did_you_mean(shown, INPUT_SOURCES)}",
            hint="factory: run on the arrays that `from:` factories return; "
            "random: seeded random values for every input (the default).",
        )
    return str(raw)


def with_inputs(spec: Spec, source: str | None) -> Spec:
    """``spec`` with the command line's ``--inputs`` over its own ``inputs:``."""
    if source is None:
        return spec
    return replace(spec, inputs=parse_input_source(source, "--inputs"))


def _parse_devices(raw: object, where: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise SpecError(f"{where}: expected a positive number of devices, not {raw!r}")
    if raw > MAX_DEVICES:
        raise SpecError(f"{where}: {raw} devices is more than {MAX_DEVICES:,}")
    return raw


def _parse_topology(raw: object, where: str) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or ":" not in raw:
        raise SpecError(
            f"{where}: expected a TPU slice name like v5e:2x2 or a GPU target like h100:8, "
            f"not {raw!r}"
        )
    return raw.strip()


def _parse_out_shardings(raw: object, source: str) -> tuple[Sharding | None, ...] | None:
    if raw is None:
        return None
    where = f"{source}: out_shardings"
    if not isinstance(raw, list):
        raise SpecError(
            f"{where}: expected a list with one entry per output leaf, e.g. [[data, null]] "
            "for one output split over `data` on its first dimension"
        )
    return tuple(
        None if entry is None else parse_long_sharding(entry, f"{where}[{i}]")
        for i, entry in enumerate(raw)
    )


def _parse_donate(raw: object, source: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list):
        raise SpecError(
            f"{source}: donate must be a list of parameter names, not a {_yaml_type(raw)}"
        )
    seen: list[str] = []
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name.isidentifier():
            raise SpecError(f"{source}: donate[{i}]: {name!r} is not a valid parameter name")
        if name in seen:
            raise SpecError(f"{source}: donate[{i}]: `{name}` is listed twice")
        seen.append(name)
    return tuple(seen)


def parse_arg_options(options: list[str]) -> Spec:
    """Build a spec from repeated ``--arg name=DTYPE[DIMS]`` options."""
    args: list[tuple[str | None, Node]] = []
    seen: set[str] = set()
    for option in options:
        name, sep, leaf = option.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise SpecError(
                f"--arg {option!r}: expected NAME=DTYPE[DIMS], e.g. --arg x=f32[8,4]",
            )
        if name in seen:
            raise SpecError(f"--arg {option!r}: parameter `{name}` is given twice")
        seen.add(name)
        args.append((name, parse_leaf(leaf, where=f"--arg {name}")))
    return Spec(source="--arg", args=tuple(args))


def _parse_args(
    raw: object, source: str, folder: str | None
) -> tuple[tuple[str | None, Node], ...]:
    if raw is None:
        return ()
    if isinstance(raw, Mapping):
        out: list[tuple[str | None, Node]] = []
        for name, value in raw.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise SpecError(f"{source}: args: {name!r} is not a valid parameter name")
            out.append((name, _parse_node(value, f"{source}: args.{name}", folder)))
        return tuple(out)
    if isinstance(raw, list):
        return tuple(
            (None, _parse_node(value, f"{source}: args[{i}]", folder))
            for i, value in enumerate(raw)
        )
    raise SpecError(
        f"{source}: args must be a mapping by parameter name or a list "
        f"(or {{from: FILE.py:NAME}}), not a {_yaml_type(raw)}"
    )


def _parse_node(raw: object, where: str, folder: str | None) -> Node:
    if isinstance(raw, str):
        return parse_leaf(raw, where=where)
    if isinstance(raw, bool):
        return LeafSpec("bool", (), weak_type=False)
    if isinstance(raw, int):
        return LeafSpec("int32", (), weak_type=True)
    if isinstance(raw, float):
        return LeafSpec("float32", (), weak_type=True)
    if isinstance(raw, list):
        return ListNode(tuple(_parse_node(v, f"{where}[{i}]", folder) for i, v in enumerate(raw)))
    if isinstance(raw, Mapping):
        if TUPLE_KEY in raw and len(raw) == 1:
            return _parse_tuple(raw[TUPLE_KEY], f"{where}.{TUPLE_KEY}", folder)
        if is_from_mapping(raw):
            return parse_from(raw, where, folder)
        if "shape" in raw or "dtype" in raw:
            return parse_long_leaf(raw, where)
        items = []
        for key, value in raw.items():
            if not isinstance(key, str):
                raise SpecError(f"{where}: mapping key {key!r} must be a string")
            items.append((key, _parse_node(value, f"{where}.{key}", folder)))
        return DictNode(tuple(items))
    raise SpecError(
        f"{where}: expected a leaf like f32[8,4], a list or a mapping "
        f"(or {{from: FILE.py:NAME}}), not a {_yaml_type(raw)}"
    )


def _parse_tuple(raw: object, where: str, folder: str | None) -> ListNode:
    if not isinstance(raw, list):
        raise SpecError(
            f"{where}: a tuple is written {{tuple: [item, ...]}}, with a list, "
            f"not a {_yaml_type(raw)}"
        )
    items = tuple(_parse_node(v, f"{where}[{i}]", folder) for i, v in enumerate(raw))
    return ListNode(items, is_tuple=True)


def _parse_static(raw: object, source: str) -> tuple[tuple[str, Any], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise SpecError(
            f"{source}: static must be a mapping by parameter name, not a {_yaml_type(raw)}"
        )
    out = []
    for name, value in raw.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SpecError(f"{source}: static: {name!r} is not a valid parameter name")
        out.append((name, _freeze_static(value, f"{source}: static.{name}")))
    return tuple(out)


def _freeze_static(value: object, where: str) -> Any:
    # jit requires static arguments to be hashable, so YAML lists become tuples.
    if isinstance(value, list):
        return tuple(_freeze_static(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, Mapping):
        raise SpecError(
            f"{where}: static values must be hashable; a mapping is not (use a list or scalar)"
        )
    return value


def _yaml_type(value: object) -> str:
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__
