"""JSON embedded in the report's ``<script type="application/json">`` elements."""

from __future__ import annotations

import json


def embedded_json(value: object, *, compact: bool = False) -> str:
    """``value`` as JSON to embed in a ``<script>`` element, with no ``<``, ``>`` or ``&``.

    ``</script>`` ends the element and ``<!--<script>`` puts the HTML parser in a state
    where the page's own next ``</script>`` no longer ends it, so the report's script is
    swallowed as data; JSON's ``\\u003c`` escapes read back as the same strings.
    """
    separators = (",", ":") if compact else None
    text = json.dumps(value, sort_keys=True, separators=separators)
    # Three replaces, not str.translate: with a character mapped to several, translate looks
    # every character up in its table (0.5 s on 3.8 MB of JSON, the replaces 0.03 s).
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
