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
