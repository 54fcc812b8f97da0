"""Errors to messages and exit codes, for every command (imports neither typer nor jax).

Commands end with ``SystemExit``: typer passes it through, and so does this handler, which
turns jaxinspect's own errors into one message on stderr and bugs into a traceback.
"""

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from jaxinspect.errors import ExitCode, JaxInspectError


@contextmanager
def errors_to_exit_codes(debug: bool) -> Iterator[None]:
    """Map jaxinspect's errors to messages on stderr and exit codes; only bugs get tracebacks."""
    try:
        yield
    except JaxInspectError as exc:
        if debug:
            raise
        fail(exc.message, exc.hint, exc.exit_code)
    except Exception:  # SystemExit and KeyboardInterrupt pass: they are not Exceptions
        if debug:
            raise
        traceback.print_exc()
        fail(
            "internal error in jaxinspect (a bug; please report it with the traceback above)",
            None,
            ExitCode.INTERNAL_ERROR,
        )


def fail(message: str, hint: str | None, code: ExitCode) -> NoReturn:
    """Print ``message`` (and ``hint``) on stderr and exit with ``code``."""
    print(f"Error: {message}", file=sys.stderr)
    if hint:
        print(f"Hint: {hint}", file=sys.stderr)
    raise SystemExit(int(code))
