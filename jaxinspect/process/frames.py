"""Keep jaxinspect's own frames (and its CLI/test harness) out of JAX's source locations."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

from jaxinspect import jaxapi

# Packages whose frames sit between the user's shell and their function; none of them is
# the user's code, and their paths and line numbers would otherwise land in the HLO tables.
_HARNESS_PACKAGES = ("typer", "click", "rich", "_pytest", "pytest", "pluggy")


@functools.cache
def hide_tool_frames() -> None:
    """Register jaxinspect's and its harness's folders with JAX's source-info exclusions."""
    folders = [Path(__file__).parent.parent]  # the jaxinspect package
    for name in _HARNESS_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            folders.append(Path(spec.origin).parent)
    # Frames carry the path as imported, which may run through a symlink (a venv link).
    paths = {str(p) + "/" for f in folders for p in (f.absolute(), f.resolve())}
    if sys.argv and sys.argv[0]:
        script = Path(sys.argv[0])
        paths.update({str(script.absolute()), str(script.resolve())})
    for path in sorted(paths):
        jaxapi.exclude_source_path(path)
