"""The ``passes`` report as one JSON document (schema: ``schemas/passes.schema.json``, generated
from :class:`PassesDocument`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from jaxinspect.jsonfields import SchemaRef, encode_object, js
from jaxinspect.passes.report import PassesReport, PassStep, PassTotals
from jaxinspect.passes.timereport import PassTimes
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.stages.jsondoc import RUN_KEYS, run_keys, stages_to_dict
from jaxinspect.stages.jsondoc import SCHEMA as STAGES_SCHEMA

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "passes.schema.json"
SCHEMA_VERSION = 1


def _stages(key: str) -> SchemaRef:
    """A run key as the stages document has it, described in its schema."""
    return SchemaRef(f"{STAGES_SCHEMA}#/properties/{key}")


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What ran where: ``stages.RUN_KEYS`` of the run's stages document, described there."""

    target: Annotated[str, _stages("target")]
    function: Annotated[str, _stages("function")]
    composition: Annotated[str | None, _stages("composition")]
    backend: Annotated[str, _stages("backend")]
    devices: Annotated[dict[str, Any], _stages("devices")]
    mesh: Annotated[dict[str, int] | None, _stages("mesh")]
    jax_version: Annotated[str, _stages("jax_version")]
    jaxlib_version: Annotated[str, _stages("jaxlib_version")]
    x64: Annotated[bool, _stages("x64")]
    args: Annotated[list[dict[str, Any]], _stages("args")]


@dataclass(frozen=True, slots=True)
class PassesDocument:
    """The run's facts, every step of XLA's passes, their totals and the reasons for nulls."""

    run: RunFacts = field(metadata=js(flatten=True))
    #: The HLO module's name (jit_predict).
    module: str
    #: Every entry in order; null when XLA wrote no pass snapshots (see unavailable.passes).
    passes: tuple[PassStep, ...] | None
    totals: PassTotals
    #: Dotted path -> reason, for every null value (the stages document's reasons for the
    #: keys this document has, then its own).
    unavailable: tuple[tuple[str, str], ...] = field(metadata=js(mapping=True))
    #: Only with --time: where the compilation's time went, read off a profile of the run's
    #: one compilation.
    time: PassTimes | None = field(default=None, metadata=js(skip_none=True))

    @classmethod
    def of(cls, report: PassesReport) -> PassesDocument:
        """The document of ``report``: the run's facts as its stages document has them."""
        base = stages_to_dict(report.source)
        run = RunFacts(**run_keys(base))
        # The stages report's reasons for keys this document has (not its cost, timings...).
        keys = {*RUN_KEYS, "module", "passes", "totals"}
        inherited = {k: v for k, v in base["unavailable"].items() if _top_key(k) in keys}
        unavailable = {**inherited, **dict(report.unavailable)}
        return cls(run, report.module, report.steps, report.totals, tuple(unavailable.items()),
                   report.time)  # fmt: skip


def render_passes_json(report: PassesReport) -> str:
    """Indented JSON with sorted keys."""
    return json_text(passes_to_dict(report))


def passes_to_dict(report: PassesReport) -> dict[str, Any]:
    """The document: run facts, ``passes[]``, ``totals`` and the reasons for nulls."""
    document = encode_object(PassesDocument.of(report))
    return {"schema_version": SCHEMA_VERSION, "command": "passes", **document}


def _top_key(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]
