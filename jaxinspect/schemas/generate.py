"""Generate the JSON Schemas of the documents from the report types that describe them.

The frozen dataclasses are the one description of each document: :mod:`jaxinspect.jsonfields`
writes them, and this module turns the same fields, metadata and ``JSON_PROPERTIES`` into a
schema. Descriptions come from the code: a field's ``#:`` comment, its entry in the class
docstring's ``Attributes:`` section, or ``js(doc=...)``. The schema files in this folder are
this module's output, committed so that readers and tests need no code to read them::

    python -m jaxinspect.schemas.generate          # rewrite the generated files
    python -m jaxinspect.schemas.generate --check  # exit 1 when a file is not current
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any

from jaxinspect import jsonfields

SCHEMAS_DIR = Path(__file__).resolve().parent
_DRAFT = "https://json-schema.org/draft/2020-12/schema"
_ID = "https://github.com/jaxinspect/jaxinspect/schemas/"

#: Columns a value may take on one line of a generated file.
_WIDTH = 100
_SCALARS: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


@dataclass(frozen=True, slots=True)
class Document:
    """One generated schema file: the report type it describes and the keys around it."""

    file: str
    title: str
    description: str
    root: Callable[[], Any]  # imported late: reading one schema imports only its report
    #: The constant keys written beside the type's (``schema_version``, ``command``...).
    consts: tuple[tuple[str, object], ...]
    with_id: bool = True
    #: For a file of definitions other schemas share (not a document): the name of the
    #: definition of ``root``, which is then any type expression.
    defs_name: str | None = None


def _topologies() -> type:
    from jaxinspect.topologies.report import TopologiesReport

    return TopologiesReport


def _baseline() -> type:
    from jaxinspect.bench.baseline import Baseline

    return Baseline


def _passes() -> type:
    from jaxinspect.passes.jsondoc import PassesDocument

    return PassesDocument


def _recompile() -> type:
    from jaxinspect.recompile.report import SweepReport

    return SweepReport


def _bench() -> type:
    from jaxinspect.bench.jsondoc import BenchDocument

    return BenchDocument


def _runlog() -> type:
    from jaxinspect.runlog.jsondoc import RunlogDocument

    return RunlogDocument


def _diff() -> type:
    from jaxinspect.snapshot.diffdoc import DiffDocument

    return DiffDocument


def _check() -> type:
    from jaxinspect.snapshot.checkreport import CheckReport

    return CheckReport


def _stages() -> type:
    from jaxinspect.stages.jsondoc import StagesDocument

    return StagesDocument


def _cost() -> type:
    from jaxinspect.cost.jsondoc import CostDocument

    return CostDocument


def _memory() -> type:
    from jaxinspect.memory.jsondoc import MemoryDocument

    return MemoryDocument


def _cases() -> type:
    from jaxinspect.stages.casesjsondoc import CasesDocument

    return CasesDocument


def _collectives() -> Any:
    from jaxinspect.xla.collectivemodel import Collective

    return tuple[Collective, ...] | None


def _summary() -> type:
    from jaxinspect.snapshot.model import SummaryFile

    return SummaryFile


#: The documents whose schema is generated whole, in file-name order.
DOCUMENTS = (
    Document(
        file="bench-baseline.schema.json",
        title="jaxinspect latency baseline",
        description=(
            "The file `jaxinspect bench --save FILE` writes and `--baseline FILE` reads: every "
            "sample a latency gate judges, and the environment they were measured in."
        ),
        root=_baseline,
        consts=(("schema_version", 1), ("kind", "jaxinspect-bench-baseline")),
    ),
    Document(
        file="bench.schema.json",
        title="jaxinspect bench report",
        description=(
            "The document `jaxinspect bench --format json` writes to stdout. Seconds are "
            "measured with time.perf_counter (process_start: wall clock between processes). A "
            "null value has its reason under `unavailable`, keyed by the value's dotted path."
        ),
        root=_bench,
        consts=(("schema_version", 1), ("command", "bench")),
    ),
    Document(
        file="cases.schema.json",
        title="jaxinspect stages report over several cases",
        description=(
            "What `jaxinspect stages --format json` writes for a spec with several `cases:` and "
            "no --case. Each `report` is a full stages document (stages.schema.json), or null "
            "when the case failed; `error` then says why (the command exits with the worst "
            "failed case's exit code)."
        ),
        root=_cases,
        consts=(("schema_version", 1),),
    ),
    Document(
        file="collectives.defs.json",
        title="jaxinspect collectives (definitions shared by report schemas)",
        description=(
            "Not a document of its own: the collectives[] list that renderers/collectives.py "
            "writes (one entry per kind of collective and device groups, largest bytes first; "
            "null before compile), for the report schemas to use. See docs/collectives.md."
        ),
        root=_collectives,
        consts=(),
        defs_name="collectives",
    ),
    Document(
        file="cost.schema.json",
        title="jaxinspect cost report",
        description=(
            "The document `jaxinspect cost --format json` writes to stdout. "
            "cost.flops/transcendentals/bytes_accessed are JAX's own cost_analysis(); "
            "jaxinspect's figures are under cost.loop_aware and cost.ops. A null value has its "
            "reason under `unavailable`, keyed by its dotted path. See docs/cost.md."
        ),
        root=_cost,
        consts=(("schema_version", 2), ("command", "cost")),
    ),
    Document(
        file="memory.schema.json",
        title="jaxinspect memory report",
        description=(
            "The document `jaxinspect memory --format json` writes to stdout: XLA's buffer "
            "assignment of one compilation, the bytes live at each step of its schedule, the "
            "buffers live at the peak, and XLA's own figures beside them. Byte counts are exact "
            "integers. A null value has its reason under `unavailable`, keyed by its dotted path "
            "(memory.peak covers every key read off the buffer assignment). See docs/memory.md."
        ),
        root=_memory,
        consts=(("schema_version", 1), ("command", "memory")),
    ),
    Document(
        file="passes.schema.json",
        title="jaxinspect passes report",
        description=(
            "The document `jaxinspect passes --format json` writes to stdout: one compilation's "
            "module at every step from StableHLO to the scheduled module XLA compiled, read off "
            "XLA's pass-by-pass dump. passes[0] is the module entering XLA (its diff is from the "
            "StableHLO), then one entry per snapshot XLA wrote (after each pass that changed the "
            "module, and at each pipeline's start), and last the optimized module. Op counts are "
            "instructions over every computation, fused computations included (StableHLO "
            "operations for passes[0].ops_before). A null value has its reason under "
            "`unavailable`, keyed by its dotted path. See docs/passes.md."
        ),
        root=_passes,
        consts=(("schema_version", 1), ("command", "passes")),
    ),
    Document(
        file="recompile.schema.json",
        title="jaxinspect recompile report",
        description=(
            "The document `jaxinspect recompile --format json` writes to stdout: every case of "
            "the spec sent, in order, through one jitted function, with the compilations JAX "
            "really did (counted with jax.monitoring events)."
        ),
        root=_recompile,
        consts=(("schema_version", 1),),
    ),
    Document(
        file="runlog.schema.json",
        title="jaxinspect compile log",
        description=(
            "The document `jaxinspect run --format json` writes to stderr (or -o FILE) when the "
            "program ends, and `jaxinspect.compile_log().to_json()` returns: every XLA "
            "compilation the program did, in order."
        ),
        root=_runlog,
        consts=(("schema_version", 1),),
    ),
    Document(
        file="snapshot-check.schema.json",
        title="jaxinspect check --format json",
        description=(
            "The document `jaxinspect check --format json` writes to stdout: every manifest "
            "target against its stored snapshot, with its status and, when it changed, its diff."
        ),
        root=_check,
        consts=(("schema_version", 1),),
    ),
    Document(
        file="snapshot-diff.schema.json",
        title="jaxinspect diff --format json",
        description=(
            "The document `jaxinspect diff --format json` writes to stdout: what differs between "
            "two snapshots (toolchain, op counts, summary numbers, normalized texts)."
        ),
        root=_diff,
        consts=(),
    ),
    Document(
        file="snapshot-summary.schema.json",
        title="jaxinspect snapshot summary.json",
        description=(
            "The file `summary.json` of a snapshot folder, which `diff` and `check` compare: "
            "read back by the same type that wrote it (jaxinspect.snapshot.model.SummaryFile)."
        ),
        root=_summary,
        consts=(("format_version", 1),),
    ),
    Document(
        file="stages.schema.json",
        title="jaxinspect stages report",
        description=(
            "The document `jaxinspect stages --format json` writes to stdout. A null value "
            "always has its reason under `unavailable`, keyed by the value's dotted path."
        ),
        root=_stages,
        consts=(("schema_version", 2),),
    ),
    Document(
        file="topologies.schema.json",
        title="jaxinspect topologies --format json",
        description=(
            "The TPU slices this libtpu can compile for, and the NVIDIA GPU models with a "
            "shipped target config, from this host (--topology NAME)."
        ),
        root=_topologies,
        consts=(("schema_version", 2),),
        with_id=False,
    ),
)


def document_schema(doc: Document) -> dict[str, Any]:
    """The whole schema of ``doc``: its head, its root object and the ``$defs`` it refers to."""
    defs: dict[str, Any] = {}
    head: dict[str, Any] = {"$schema": _DRAFT}
    if doc.with_id:
        head["$id"] = _ID + doc.file
    head.update(title=doc.title, description=doc.description)
    if doc.defs_name is not None:
        named = _type_schema(doc.root(), defs)
        return {**head, "$defs": {doc.defs_name: named, **dict(sorted(defs.items()))}}
    root = _object_schema(doc.root(), defs)
    fixed = {key: {"const": value} for key, value in doc.consts}
    out = {
        **head,
        "type": "object",
        "required": [*fixed, *root["required"]],
        "additionalProperties": False,
        "properties": {**fixed, **root["properties"]},
    }
    if defs:
        out["$defs"] = dict(sorted(defs.items()))
    return out


def schema_text(doc: Document) -> str:
    """The file's text: indented JSON, each value on one line where it fits in 100 columns."""
    return _compact(document_schema(doc), 0) + "\n"


def _compact(value: Any, depth: int, lead: int = 0) -> str:
    """``value`` at nesting ``depth``, after ``lead`` characters of its line (its key)."""
    flat = json.dumps(value, ensure_ascii=False)
    pad = "  " * (depth + 1)
    if len(flat) + len(pad) + lead <= _WIDTH or not isinstance(value, dict | list) or not value:
        return flat
    if isinstance(value, list):
        items = [_compact(v, depth + 1) for v in value]
    else:
        items = [
            f"{json.dumps(k)}: {_compact(v, depth + 1, len(json.dumps(k)) + 2)}"
            for k, v in value.items()
        ]
    open_, close = "[]" if isinstance(value, list) else "{}"
    return open_ + "\n" + ",\n".join(pad + i for i in items) + "\n" + "  " * depth + close


def _object_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    """An object with one property per written field and property of ``cls``, all required
    (every document writes every key, ``null`` where a value is missing)."""
    notes = _field_notes(cls)
    hints = _field_types(cls)
    properties: dict[str, Any] = {}
    absent: list[str] = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if meta.get(jsonfields.OMIT):
            continue
        if meta.get(jsonfields.FLATTEN):
            properties.update(_object_schema(hints[f.name], defs)["properties"])
            continue
        value_type = hints[f.name]
        depth = int(meta.get(jsonfields.MAPPING, 0))
        schema = (
            _mapping_schema(value_type, defs, depth) if depth else _type_schema(value_type, defs)
        )
        schema.update(meta.get(jsonfields.SCHEMA, {}))
        if "const" in schema:  # a constant's type goes without saying
            schema = {"const": schema["const"]}
        key = meta.get(jsonfields.KEY, f.name)
        if meta.get(jsonfields.SKIP_NONE):
            # Absent rather than null: the key is optional and, when present, never null.
            schema = _without_null(schema)
            absent.append(key)
        properties[key] = _described(schema, meta.get(jsonfields.DOC) or notes.get(f.name))
    for entry in getattr(cls, "JSON_PROPERTIES", ()):
        key, attr = (entry, entry) if isinstance(entry, str) else entry
        prop = getattr(cls, attr)
        namespace = vars(sys.modules[cls.__module__])
        returned = typing.get_type_hints(prop.fget, namespace, include_extras=True)["return"]
        properties[key] = _described(_type_schema(returned, defs), _first_paragraph(prop.__doc__))
    out: dict[str, Any] = {"type": "object"}
    doc = _first_paragraph(inspect.getdoc(cls))
    if doc:
        out["description"] = doc
    required = [k for k in properties if k not in absent]
    out.update(required=required, additionalProperties=False, properties=properties)
    out.update(getattr(cls, "JSON_SCHEMA", {}))  # a rule between fields, e.g. one of two null
    return out


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    kinds = schema.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        rest = [k for k in kinds if k != "null"]
        return {**schema, "type": rest[0] if len(rest) == 1 else rest}
    options = [s for s in schema.get("anyOf", ()) if s != {"type": "null"}]
    if len(options) == 1:
        return {**options[0], **{k: v for k, v in schema.items() if k != "anyOf"}}
    return schema


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is type(None) or tp is None:
        return {"type": "null"}
    if origin is typing.Annotated:  # a bound beside the type, or another file's description
        refs = [a for a in args[1:] if isinstance(a, jsonfields.SchemaRef)]
        if refs:
            return {"$ref": _ID + refs[0].target}
        out = _type_schema(args[0], defs)
        for bound in args[1:]:
            if isinstance(bound, jsonfields.Minimum):
                out["minimum"] = bound.value
        return out
    if origin in (types.UnionType, typing.Union):
        parts = [_type_schema(a, defs) for a in args]
        simple = [p for p in parts if set(p) == {"type"} and isinstance(p["type"], str)]
        if len(simple) == len(parts):
            return {"type": [p["type"] for p in parts]}
        nullable = [p for p in parts if p != {"type": "null"}]
        if len(nullable) < len(parts) and len(nullable) == 1 and "type" in nullable[0]:
            only = dict(nullable[0])
            only["type"] = [only["type"], "null"]
            return only
        return {"anyOf": parts}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type_schema(args[0], defs)}
        return {
            "type": "array",
            "prefixItems": [_type_schema(a, defs) for a in args],
            "items": False,
        }
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1], defs)}
    if isinstance(tp, type) and issubclass(tp, Enum):
        values = [m.value for m in tp]
        return {"type": _SCALARS[type(values[0])], "enum": values}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # a placeholder first: a type may refer to itself
            defs[name] = _object_schema(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    raise TypeError(f"no JSON Schema for {tp!r}")


def _mapping_schema(tp: Any, defs: dict[str, Any], depth: int = 1) -> dict[str, Any]:
    """``tuple[tuple[str, V], ...]`` (or ``| None``) written as an object of ``V`` (``depth``
    > 1: ``V`` is pairs too, written as an object)."""
    nullable = typing.get_origin(tp) in (types.UnionType, typing.Union)
    inner = next(a for a in typing.get_args(tp) if a is not type(None)) if nullable else tp
    pair = typing.get_args(inner)[0]
    value_type = typing.get_args(pair)[1]
    value = (
        _mapping_schema(value_type, defs, depth - 1)
        if depth > 1
        else _type_schema(value_type, defs)
    )
    return {"type": ["object", "null"] if nullable else "object", "additionalProperties": value}


def _described(schema: dict[str, Any], text: str | None) -> dict[str, Any]:
    # Draft 2020-12 allows keywords beside ``$ref``: a description there describes the use.
    return {**schema, "description": text} if text else schema


@cache
def _field_types(cls: type) -> dict[str, Any]:
    """The field types of ``cls``, read in its module (annotations are strings there)."""
    namespace = vars(sys.modules[cls.__module__])
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.metadata.get(jsonfields.OMIT):
            continue  # its type may be imported only for type checkers
        out[f.name] = eval(f.type, namespace) if isinstance(f.type, str) else f.type  # noqa: S307
    return out


#: ``    name: text`` (or ``    a, b: text``) in a docstring's ``Attributes:`` section.
_ATTRIBUTE = re.compile(r"^    (\w+(?:, \w+)*): (.*)$")
#: A field line of a class body, with its inline comment if any (two spaces before ``#``, as
#: formatted: a ``#`` inside the annotation, ``SchemaRef("f.json#/properties/x")``, is not one).
_FIELD = re.compile(r"^    (\w+): .*?(?:  #\s*(.*))?$")


def _field_notes(cls: type) -> dict[str, str]:
    """Each field's description: its ``#:`` comment lines or inline comment, else its entry
    in the class docstring's ``Attributes:`` section."""
    notes: dict[str, str] = {}
    doc = inspect.getdoc(cls) or ""
    names: list[str] = []
    for line in doc.partition("Attributes:")[2].splitlines():
        match = _ATTRIBUTE.match(line)
        if match:
            names = match.group(1).split(", ")
            notes.update(dict.fromkeys(names, match.group(2)))
        elif names and line.startswith("        "):
            notes.update({n: notes[n] + " " + line.strip() for n in names})
        else:
            names = []
    try:
        source = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        source = []
    comment: list[str] = []
    for line in source:
        stripped = line.strip()
        if stripped.startswith("#:"):
            comment.append(stripped[2:].strip())
            continue
        match = _FIELD.match(line)
        if match and (comment or match.group(2)):
            notes[match.group(1)] = " ".join(comment) if comment else match.group(2)
        comment = []
    return {k: _plain(v) for k, v in notes.items()}


def _plain(text: str) -> str:
    """Docstring markup as the schemas write prose: without reST double backquotes."""
    return text.replace("``", "`")


def _first_paragraph(doc: str | None) -> str:
    """A docstring's first paragraph on one line."""
    return _plain(" ".join((doc or "").split("\n\n", 1)[0].split()))


def main(argv: list[str], folder: Path = SCHEMAS_DIR) -> int:
    """Rewrite the generated schema files in ``folder``, or with ``--check`` name those that
    are not current (exit status 1)."""
    check = "--check" in argv
    stale = []
    for doc in DOCUMENTS:
        path = folder / doc.file
        text = schema_text(doc)
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(doc.file)
        if not check:
            path.write_text(text, encoding="utf-8")
    if check and stale:
        print("not current (run python -m jaxinspect.schemas.generate): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
