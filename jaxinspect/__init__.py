"""jaxinspect: show every stage of JAX's compilation pipeline for one function."""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from jaxinspect.api.diff import InspectionDiff as InspectionDiff
    from jaxinspect.api.diff import diff as diff
    from jaxinspect.api.inspection import Inspection as Inspection
    from jaxinspect.api.inspection import inspect as inspect
    from jaxinspect.runlog.api import compile_log as compile_log

__all__ = ["Inspection", "InspectionDiff", "compile_log", "diff", "inspect"]

#: The Python API's names and the modules that define them, imported when first read.
_LAZY = {
    "compile_log": "jaxinspect.runlog.api",
    "inspect": "jaxinspect.api.inspection",
    "Inspection": "jaxinspect.api.inspection",
    "diff": "jaxinspect.api.diff",
    "InspectionDiff": "jaxinspect.api.diff",
}


def __getattr__(name: str) -> Any:
    # Lazily: `import jaxinspect` (the CLI, --help) stays free of jax.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
