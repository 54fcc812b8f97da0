"""The ``passes`` report as one JSON document (schema: ``schemas/passes.schema.json``, generated
from :class:`PassesDocument`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jaxinspect.jsonfields import encode_object, js
from jaxinspect.passes.report import PassesReport, PassStep, PassTotals
from jaxinspect.passes.timereport import PassTimes
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.stages.jsondoc import RUN_KEYS, RunFacts, stages_to_dict

#: The schema this document follows, and its version: bump both on any incompatible change of
#: paths or meanings (a test checks that they agree).
SCHEMA = "passes.schema.json"
SCHEMA_VERSION = 1


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
        run = RunFacts.of(report.source)
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
