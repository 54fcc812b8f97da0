"""What every JSON report shares: its encoding, and the error object of a failed case.

Each report's own serializer is ``renderers/<report>/jsondoc.py``, beside the report's schema
version; the schemas are ``jaxinspect/schemas/<name>.schema.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxinspect.jsonfields import encode_object
from jaxinspect.renderers.jsonwrite import dumps_indented

if TYPE_CHECKING:
    from jaxinspect.base.failures import CaseFailure

#: The folder of the JSON schemas that every ``--format json`` document follows.
SCHEMAS_DIR = Path(__file__).resolve().parent.parent / "schemas"


def json_text(document: dict[str, Any]) -> str:
    """Indented JSON with sorted keys and a final newline, so two runs diff cleanly.

    The text of ``json.dumps(document, indent=2, sort_keys=True)``, written faster
    (``renderers/jsonwrite.py``).
    """
    return dumps_indented(document) + "\n"


def failure_to_dict(failure: CaseFailure) -> dict[str, object]:
    """The ``error`` object of a failed case (same shape in every sweep schema)."""
    return encode_object(failure)
