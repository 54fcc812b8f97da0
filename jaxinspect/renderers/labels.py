"""Labels of an HLO shape and of an op's source line, shared by the cost, memory and HTML tables."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from jaxinspect.xla.aggregate import XLA_CREATED

if TYPE_CHECKING:
    from jaxinspect.xla.sourcemap import SourceLocation


def shape_label(shape: str) -> str:
    """An HLO shape without layouts; a tuple of more than two is its element count.

    ``(s32[], f32[8,64]{1,0}, f32[100,8,32]{2,1,0})`` -> ``(3 elements)``; the JSON has them all.
    """
    bare = _INDEX_COMMENT.sub("", _LAYOUT.sub("", shape))
    if not bare.startswith("("):
        return bare
    parts = [p.strip() for p in bare[1:-1].split(", ") if p.strip()]
    if len(parts) <= 2:
        return bare
    return f"({len(parts)} elements)"


#: ``{1,0}`` layouts, and tiled ones such as ``{1,0:T(8,128)}``.
_LAYOUT = re.compile(r"\{[^{}]*\}")
#: XLA numbers every fifth tuple element: ``/*index=5*/f32[64]``.
_INDEX_COMMENT = re.compile(r"/\*index=\d+\*/")


def source_label(source: SourceLocation | None, created_by_xla: bool) -> str:
    """``file.py:12 function``, or who made an instruction that has no user line."""
    if source is None:
        return XLA_CREATED if created_by_xla else ""
    function = source.function
    if "<locals>" in function:  # run.<locals>.step -> step
        function = function.rsplit(".", 1)[-1]
    return f"{source.label} {function}"
