"""The multi-case ``stages`` report as JSON (schema: ``jaxinspect/schemas/cases.schema.json``,
generated from :class:`CasesDocument`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from jaxinspect.base.failures import CaseFailure
from jaxinspect.jsonfields import SchemaRef, encode_object, js
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.stages.casereport import CaseComparison
from jaxinspect.stages.jsondoc import SCHEMA as STAGES_SCHEMA
from jaxinspect.stages.jsondoc import stages_to_dict

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "cases.schema.json"
SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class CaseDocument:
    """One case: its full stages document, or why it failed (never both)."""

    #: Exactly one of ``report`` and ``error`` is null.
    JSON_SCHEMA: ClassVar[dict[str, Any]] = {
        "oneOf": [
            {"properties": {"report": {"type": "object"}, "error": {"type": "null"}}},
            {"properties": {"report": {"type": "null"}, "error": {"type": "object"}}},
        ]
    }

    name: str
    #: Where the case is written, e.g. sweep.yaml: cases.b64.
    source: str
    #: Arguments that differ between the cases that ran, e.g. x f32[64,16]; empty for a failed
    #: case.
    distinct_args: tuple[str, ...]
    #: The case's stages document (stages.schema.json); null when the case failed.
    report: Annotated[dict[str, Any], SchemaRef(STAGES_SCHEMA)] | None
    #: Why the case failed: what the single-case command would have printed and exited with.
    error: CaseFailure | None


@dataclass(frozen=True, slots=True)
class CasesDocument:
    """Every case of one target, in the spec's order."""

    #: The target as given.
    target: str
    #: What was compiled, e.g. jit(loss_fn).
    composition: str | None
    cases: tuple[CaseDocument, ...] = field(metadata=js(schema={"minItems": 2}))

    @classmethod
    def of(cls, comparison: CaseComparison) -> CasesDocument:
        """The document of ``comparison``: each case's report as its stages document."""
        return cls(
            comparison.target,
            comparison.composition,
            tuple(
                CaseDocument(
                    case.name,
                    case.source,
                    case.distinct_args,
                    None if case.report is None else stages_to_dict(case.report),
                    case.error,
                )
                for case in comparison.cases
            ),
        )


def render_cases_json(comparison: CaseComparison) -> str:
    """Indented JSON with sorted keys."""
    return json_text(cases_to_dict(comparison))


def cases_to_dict(comparison: CaseComparison) -> dict[str, Any]:
    """The comparison as JSON: one full ``stages`` document (or an error) per case, in order."""
    return {"schema_version": SCHEMA_VERSION, **encode_object(CasesDocument.of(comparison))}
