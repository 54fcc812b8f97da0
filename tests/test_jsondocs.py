"""Each report's JSON serializer names its schema and the version that schema promises."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, ClassVar

import pytest

from jaxinspect.base.failures import CaseFailure
from jaxinspect.bench import baseline
from jaxinspect.bench import jsondoc as bench
from jaxinspect.cost import jsondoc as cost
from jaxinspect.errors import ExitCode
from jaxinspect.jsonfields import SchemaRef, encode, js
from jaxinspect.memory import jsondoc as memory
from jaxinspect.passes import jsondoc as passes
from jaxinspect.recompile import jsondoc as recompile
from jaxinspect.renderers.jsondoc import SCHEMAS_DIR, failure_to_dict, json_text
from jaxinspect.runlog import jsondoc as runlog
from jaxinspect.runlog import model as runlog_model
from jaxinspect.schemas import generate
from jaxinspect.snapshot import jsondoc as snapshot
from jaxinspect.stages import casesjsondoc as cases
from jaxinspect.stages import jsondoc as stages
from jaxinspect.topologies import jsondoc as topologies

#: (schema file, the version its serializer writes), one row per JSON report.
SERIALIZERS = (
    (stages.SCHEMA, stages.SCHEMA_VERSION),
    (cases.SCHEMA, cases.SCHEMA_VERSION),
    (cost.SCHEMA, cost.SCHEMA_VERSION),
    (memory.SCHEMA, memory.SCHEMA_VERSION),
    (passes.SCHEMA, passes.SCHEMA_VERSION),
    (bench.SCHEMA, bench.SCHEMA_VERSION),
    (recompile.SCHEMA, recompile.SCHEMA_VERSION),
    (snapshot.DIFF_SCHEMA, snapshot.DIFF_SCHEMA_VERSION),
    (snapshot.CHECK_SCHEMA, snapshot.CHECK_SCHEMA_VERSION),
    ("bench-baseline.schema.json", baseline.SCHEMA_VERSION),
    (topologies.SCHEMA, topologies.SCHEMA_VERSION),
    (runlog.SCHEMA, runlog_model.SCHEMA_VERSION),
)


@pytest.mark.parametrize(("schema", "version"), SERIALIZERS, ids=[s for s, _ in SERIALIZERS])
def test_serializer_version_is_its_schemas(schema: str, version: int) -> None:
    document = json.loads((SCHEMAS_DIR / schema).read_text())
    assert document["properties"]["schema_version"] == {"const": version}
    assert "schema_version" in document["required"]


def test_every_report_schema_has_a_serializer() -> None:
    # snapshot-summary.schema.json is the stored snapshot file (format_version), not a report.
    reports = {p.name for p in SCHEMAS_DIR.glob("*.schema.json")} - {"snapshot-summary.schema.json"}
    assert reports == {schema for schema, _ in SERIALIZERS}


def test_json_text_is_sorted_indented_and_ends_with_a_newline() -> None:
    assert json_text({"b": [1], "a": None}) == '{\n  "a": null,\n  "b": [\n    1\n  ]\n}\n'


def test_failure_object_drops_the_exception() -> None:
    failure = CaseFailure("boom\n  at f", ExitCode.TARGET_FAILED, "trace", "fix it", ValueError())
    assert failure_to_dict(failure) == {
        "message": "boom\n  at f",
        "exit_code": 3,
        "stage": "trace",
        "hint": "fix it",
    }


@pytest.mark.parametrize("doc", generate.DOCUMENTS, ids=[d.file for d in generate.DOCUMENTS])
def test_generated_schema_is_current(doc: generate.Document) -> None:
    # The committed file is what the generator writes from today's report types: a field
    # added, renamed or left out changes the schema in the same commit.
    committed = (SCHEMAS_DIR / doc.file).read_text(encoding="utf-8")
    assert committed == generate.schema_text(doc), "run: python -m jaxinspect.schemas.generate"


def test_generator_check_mode_names_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "recompile.schema.json"
    stale.write_text("{}\n")
    assert generate.main(["--check"], folder=tmp_path) == 1
    assert stale.read_text() == "{}\n"
    assert generate.main([], folder=tmp_path) == 0
    assert generate.main(["--check"], folder=tmp_path) == 0
    assert stale.read_text() == (SCHEMAS_DIR / "recompile.schema.json").read_text()


def test_encoder_writes_renames_mappings_flattening_and_properties() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Inner:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Outer:
        JSON_PROPERTIES: ClassVar[tuple[object, ...]] = ("double", ("half_key", "half"))
        renamed: int = dataclasses.field(metadata=js("other"))
        hidden: str = dataclasses.field(metadata=js(omit=True))
        pairs: tuple[tuple[str, int], ...] = dataclasses.field(metadata=js(mapping=True))
        inner: Inner = dataclasses.field(metadata=js(flatten=True))
        items: tuple[Inner, ...] = ()
        code: ExitCode = ExitCode.OK

        @property
        def double(self) -> int:
            return 2 * self.renamed

        @property
        def half(self) -> float:
            return self.renamed / 2

    obj = Outer(4, "x", (("k", 1),), Inner(7), (Inner(1),), ExitCode.TARGET_FAILED)
    assert encode(obj) == {
        "other": 4,
        "pairs": {"k": 1},
        "a": 7,
        "items": [{"a": 1}],
        "code": 3,
        "double": 8,
        "half_key": 2.0,
    }
    with pytest.raises(TypeError, match="no JSON form for object"):
        encode(object())


def test_decode_reads_a_baseline_back_and_names_the_first_wrong_field() -> None:
    from jaxinspect.bench.baseline import read_baseline
    from jaxinspect.bench.report import GateRounds
    from jaxinspect.jsonfields import DecodeError, encode_object

    document = {
        "target": "a.py:f",
        "spec": "x=f32[3]",
        "environment": {
            "backend": "cpu",
            "device_kind": "cpu",
            "jax_version": "0",
            "jaxlib_version": "0",
            "python_version": "3",
            "platform": "linux",
            "cpu_count": None,
            "x64": False,
        },
        "gate": {
            "calls_per_round": 2,
            "target_min_s": [1],
            "target_median_s": [0.5],
            "reference_min_s": [0.25],
        },  # fmt: skip
        "cold": {"compile": [0.0, 1.5]},
    }
    baseline = read_baseline(document)
    assert baseline.gate == GateRounds(2, (1.0,), (0.5,), (0.25,))
    assert baseline.cold == (("compile", (0.0, 1.5)),)
    assert encode_object(baseline) == document  # read and written by the same description
    for path, value, expected in [
        ("environment.x64", "no", "true or false"),
        ("environment.cpu_count", 0, "a positive integer or null"),
        ("gate.target_min_s", [0], "a list of 1 to 1000 positive finite seconds"),
        ("environment.extra", 1, "absent (not one of its fields)"),
    ]:
        outer, key = path.split(".")
        broken = {**document, outer: {**document[outer], key: value}}
        with pytest.raises(DecodeError) as caught:
            read_baseline(broken)
        assert (caught.value.path, caught.value.expected) == (path, expected)
    with pytest.raises(DecodeError, match="`spec` must be a string"):
        read_baseline({k: v for k, v in document.items() if k != "spec"})


@dataclasses.dataclass(frozen=True)
class _Optional:
    name: str
    gate: str | None = dataclasses.field(default=None, metadata=js(skip_none=True))
    note: str | None = None


def test_a_skip_none_field_is_absent_when_none_and_written_otherwise() -> None:
    # The encoder's fast path for plain values must not write the null a field leaves out
    # (bench's `gate` without --baseline).
    assert encode(_Optional("a")) == {"name": "a", "note": None}
    assert encode(_Optional("a", gate="g")) == {"name": "a", "gate": "g", "note": None}


@dataclasses.dataclass(frozen=True)
class _Either:
    JSON_SCHEMA: ClassVar[dict[str, object]] = {"minProperties": 1}
    report: Annotated[dict[str, object], SchemaRef("stages.schema.json")] | None
    args: Annotated[list[object], SchemaRef("stages.schema.json#/properties/args")]


def test_a_schema_ref_is_a_reference_to_another_file_and_json_schema_adds_keywords() -> None:
    schema = generate._object_schema(_Either, {})
    stages = "https://github.com/jaxinspect/jaxinspect/schemas/stages.schema.json"
    assert schema["properties"] == {
        "report": {"anyOf": [{"$ref": stages}, {"type": "null"}]},
        "args": {"$ref": stages + "#/properties/args"},
    }
    assert schema["minProperties"] == 1
    assert encode(_Either(None, [{"path": "x"}])) == {"report": None, "args": [{"path": "x"}]}
