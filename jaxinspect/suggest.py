"""Close-match suggestions for error messages ("did you mean ...?")."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return `` (did you mean a, b?)`` for close matches of ``name``, or an empty string."""
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    return f" (did you mean {', '.join(close)}?)" if close else ""
