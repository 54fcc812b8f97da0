"""The ``diff`` and ``check`` reports as JSON (schemas: ``snapshot-diff``, ``snapshot-check``,
generated from :class:`~jaxinspect.snapshot.diffdoc.DiffDocument` and
:class:`~jaxinspect.snapshot.checkreport.CheckReport`).

One module for both: a check document holds a diff document per changed target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxinspect.jsonfields import encode_object
from jaxinspect.renderers.jsondoc import json_text
from jaxinspect.snapshot.diffdoc import DIFF_SCHEMA_VERSION as DIFF_SCHEMA_VERSION
from jaxinspect.snapshot.diffdoc import DiffDocument

if TYPE_CHECKING:
    from jaxinspect.snapshot.checkreport import CheckReport
    from jaxinspect.snapshot.diffreport import SnapshotDiff
    from jaxinspect.snapshot.thresholds import Verdict

#: The schemas these documents follow, and their versions: bump a schema and its version
#: together on any incompatible change of paths or meanings (a test checks that they agree).
#: (The diff document's version is a field of its type.)
DIFF_SCHEMA = "snapshot-diff.schema.json"
CHECK_SCHEMA = "snapshot-check.schema.json"
CHECK_SCHEMA_VERSION = 1


def render_diff_json(diff: SnapshotDiff, verdict: Verdict | None) -> str:
    """Indented JSON with sorted keys."""
    return json_text(encode_object(DiffDocument.of(diff, verdict)))


def render_check_json(report: CheckReport) -> str:
    """Indented JSON with sorted keys; each changed target's diff is a diff document."""
    return json_text({"schema_version": CHECK_SCHEMA_VERSION, **encode_object(report)})
