"""Errors to messages and exit codes, for every command (imports neither typer nor jax).

Commands end with ``SystemExit``: typer passes it through, and so does this handler, which
turns jaxinspect's own errors into one message on stderr and bugs into a traceback. The whole
mapping, signals and closed pipes included, is in docs/exit-codes.md.
"""

import errno
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from jaxinspect.cli.interrupts import sigint_received
from jaxinspect.cli.streams import describe_os_error, is_closed_pipe, print_error, silence_stdout
from jaxinspect.errors import ExitCode, JaxInspectError

#: OSErrors that describe the machine, not a bug: a full or read-only disk, no permission.
ENVIRONMENT_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EIO", "EFBIG", "EBADF")
    if hasattr(errno, name)
)


@contextmanager
def errors_to_exit_codes(debug: bool) -> Iterator[None]:
    """Map jaxinspect's errors to messages on stderr and exit codes; only bugs get tracebacks.

    Also: a closed stdout ends the run quietly (141); a full or read-only disk is a one-line
    error (2); and a ``SystemExit``, ``KeyboardInterrupt`` or other ``BaseException`` raised
    by the user's code where no ``pipeline.usercode.user_code`` caught it is exit 3, while
    jaxinspect's own ``SystemExit`` and a real Ctrl-C pass through.
    """
    from jaxinspect.pipeline.errtrace import show_callback_tracebacks
    from jaxinspect.pipeline.nativelog import show_native_logs

    show_native_logs(debug)  # libtpu's start-up chatter is shown with --debug only
    show_callback_tracebacks(debug)
    # --debug adds the Python traceback to a message; it never changes the exit code.
    try:
        yield
    except JaxInspectError as exc:
        _traceback_if(debug)
        fail(exc.message, _without_debug_advice(exc.hint) if debug else exc.hint, exc.exit_code)
    except OSError as exc:
        if is_closed_pipe(exc):
            end_on_closed_pipe()
        if exc.errno not in ENVIRONMENT_ERRNOS:
            _internal_error()
        _traceback_if(debug)
        fail(_describe_io_error(exc), None, ExitCode.USAGE_ERROR)
    except Exception:
        _internal_error()
    except BaseException as exc:
        if _rich_broken_pipe(exc):
            end_on_closed_pipe()
        if not _raised_by_user(exc):
            if isinstance(exc, KeyboardInterrupt):  # a real Ctrl-C
                raise SystemExit(int(ExitCode.INTERRUPTED)) from None
            raise  # jaxinspect's own SystemExit
        _traceback_if(debug)
        fail(
            f"your code raised {type(exc).__name__}{_argument(exc)}; it cannot end the run",
            None if debug else "Run with --debug for the full Python traceback.",
            ExitCode.TARGET_FAILED,
        )


def _traceback_if(debug: bool) -> None:
    """With ``--debug``, the traceback of the exception being handled, on stderr."""
    if debug:
        traceback.print_exc()


def _without_debug_advice(hint: str | None) -> str | None:
    """The hint without its lines asking for --debug (the run already has it), else ``None``."""
    if hint is None:
        return None
    kept = [line for line in hint.splitlines() if "--debug" not in line]
    return "\n".join(kept) or None


def _internal_error() -> NoReturn:
    traceback.print_exc()
    fail(
        "internal error in jaxinspect (a bug; please report it with the traceback above)",
        None,
        ExitCode.INTERNAL_ERROR,
    )


def _raised_by_user(exc: BaseException) -> bool:
    """Whether ``exc`` was raised in the user's code (not by jaxinspect, and not a real Ctrl-C)."""
    from jaxinspect.pipeline.errtrace import is_user_frame

    if isinstance(exc, KeyboardInterrupt) and sigint_received():
        return False
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return is_user_frame(tb.tb_frame.f_code.co_filename)


def _rich_broken_pipe(exc: BaseException) -> bool:
    """Whether ``exc`` is rich's ``SystemExit(1)`` from ``Console.on_broken_pipe``."""
    tb = exc.__traceback__
    if not isinstance(exc, SystemExit) or tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_name == "on_broken_pipe"


def _argument(exc: BaseException) -> str:
    return f"({exc.args[0]!r})" if exc.args else ""


def _describe_io_error(exc: OSError) -> str:
    what = describe_os_error(exc)
    if exc.filename is None:
        return f"cannot write the output: {what}"
    return f"{exc.filename}: {what}"


def end_on_closed_pipe() -> NoReturn:
    """Nobody reads stdout any more: drop the rest of the report and exit 141, quietly."""
    silence_stdout()
    raise SystemExit(int(ExitCode.CLOSED_PIPE))


def fail(message: str, hint: str | None, code: ExitCode) -> NoReturn:
    """Print ``message`` (and ``hint``) on stderr and exit with ``code``."""
    print_error(message)
    if hint:
        print_error(hint, prefix="Hint")
    raise SystemExit(int(code))
