"""JSON embedded in the report's ``<script type="application/json">`` elements."""

from __future__ import annotations

import json

_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def embedded_json(value: object, *, compact: bool = False) -> str:
    """``value`` as JSON to embed in a ``<script>`` element, with no ``<``, ``>`` or ``&``.

    ``</script>`` ends the element and ``<!--<script>`` puts the HTML parser in a state
    where the page's own next ``</script>`` no longer ends it, so the report's script is
    swallowed as data; JSON's ``\\u003c`` escapes read back as the same strings.
    """
    separators = (",", ":") if compact else None
    return json.dumps(value, sort_keys=True, separators=separators).translate(_SCRIPT_SAFE)
