"""Each report's JSON serializer names its schema and the version that schema promises."""

from __future__ import annotations

import json

import pytest

from jaxinspect.bench import baseline
from jaxinspect.errors import ExitCode
from jaxinspect.renderers.bench import jsondoc as bench
from jaxinspect.renderers.cases import jsondoc as cases
from jaxinspect.renderers.cost import jsondoc as cost
from jaxinspect.renderers.jsondoc import SCHEMAS_DIR, failure_to_dict, json_text
from jaxinspect.renderers.memory import jsondoc as memory
from jaxinspect.renderers.passes import jsondoc as passes
from jaxinspect.renderers.recompile import jsondoc as recompile
from jaxinspect.renderers.snapshot import jsondoc as snapshot
from jaxinspect.renderers.stages import jsondoc as stages
from jaxinspect.renderers.topologies import jsondoc as topologies
from jaxinspect.reports.failures import CaseFailure
from jaxinspect.runlog import jsondoc as runlog
from jaxinspect.runlog import model as runlog_model

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
