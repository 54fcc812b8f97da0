"""The rich console every command prints its report on (no jax import)."""

import os
import sys
from typing import Any

#: Columns used where stdout is not a terminal and COLUMNS is unset.
PIPED_WIDTH = 120


def stdout_console() -> Any:
    """A console on stdout that never soft-wraps; 120 columns wide off a terminal.

    rich falls back to 80 columns where stdout is a file or a pipe, which folds op names and
    source locations in saved reports and CI logs; a terminal's width, or COLUMNS, still wins.
    """
    from rich.console import Console

    width = None if sys.stdout.isatty() or "COLUMNS" in os.environ else PIPED_WIDTH
    return Console(soft_wrap=False, width=width)


#: Variables that make rich write escape codes to a pipe, or size its console otherwise.
_RICH_ENVIRONMENT = (
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "COLUMNS",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
)


def plain_stdout_width() -> int | None:
    """The width ``stdout_console`` lays out at where it writes plain text, else ``None``.

    Plain text: stdout is no terminal, nothing in the environment tells rich otherwise, and
    its encoding is UTF-8 (rich draws table rules in ASCII elsewhere). There a renderer may
    write what rich would without importing rich (``snapshot.plainsummary``).
    """
    if sys.platform == "win32" or any(name in os.environ for name in _RICH_ENVIRONMENT):
        return None
    stdout = sys.stdout
    try:
        if stdout.isatty():
            return None
    except (AttributeError, ValueError):  # no stdout, or a closed one: let rich decide
        return None
    encoding = (getattr(stdout, "encoding", None) or "utf-8").lower()
    return PIPED_WIDTH if encoding.startswith("utf") else None
