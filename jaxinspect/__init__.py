"""jaxinspect: show every stage of JAX's compilation pipeline for one function."""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from jaxinspect.runlog.api import compile_log as compile_log

__all__ = ["compile_log"]


def __getattr__(name: str) -> Any:
    # Lazily: `import jaxinspect` (the CLI, --help) stays free of jax.
    if name == "compile_log":
        from jaxinspect.runlog.api import compile_log

        return compile_log
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
