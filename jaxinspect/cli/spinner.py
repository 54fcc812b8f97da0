"""A spinner on stderr while a command works, when someone is there to see it (no jax import)."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext


def spinner(message: str) -> AbstractContextManager[object]:
    """rich's status spinner with ``message`` on stderr; nothing when stderr is no terminal.

    A piped or redirected stderr would show nothing of it (the status is transient), so rich's
    console and live display are not imported and no refresh thread runs for it: 40-60 ms of
    a ``cost -f json`` or ``memory -f json`` run.
    """
    if not sys.stderr.isatty():
        return nullcontext()
    from rich.console import Console

    # Progress goes to stderr so stdout carries the report alone.
    return Console(stderr=True).status(message)
