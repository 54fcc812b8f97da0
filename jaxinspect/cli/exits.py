"""Errors and command outcomes to messages and exit codes (imports neither typer nor jax).

A command returns an ``Outcome`` (or nothing: exit 0) and ``run_command`` ends it with the
code the outcome maps to; typer passes that ``SystemExit`` through, and so does the handler,
which turns jaxinspect's own errors into one message on stderr and bugs into a traceback. The
whole mapping, signals and closed pipes included, is in docs/exit-codes.md.
"""

import errno
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NoReturn, ParamSpec

from jaxinspect.base.failures import worst_exit_code
from jaxinspect.errors import ExitCode, JaxInspectError
from jaxinspect.process.interrupts import sigint_received
from jaxinspect.process.streams import (
    describe_os_error,
    is_closed_pipe,
    print_error,
    silence_stdout,
)

P = ParamSpec("P")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a command that ran to its end found, for its exit code (``outcome_exit_code``).

    Attributes:
        differences: A comparison found a change, or a gate failed (``--fail-on``,
            ``--max-compiles``, a latency baseline).
        failures: The exit codes of the cases or targets that failed while the others ran
            on; their errors are on stderr already.
    """

    differences: bool = False
    failures: tuple[ExitCode, ...] = ()


def outcome_exit_code(outcome: Outcome | None) -> ExitCode:
    """The worst failure's code, else 1 for differences, else 0 (also for no outcome)."""
    if outcome is None:
        return ExitCode.OK
    found = ExitCode.DIFFERENCES if outcome.differences else ExitCode.OK
    return worst_exit_code([found, *outcome.failures])


def run_command(body: Callable[[], Outcome | None], debug: bool, *, jax_logs: bool = True) -> None:
    """Run a command's ``body`` under ``errors_to_exit_codes``; exit with its outcome's code.

    Returns when the code is 0 (typer then exits 0); raises ``SystemExit`` otherwise.
    """
    with errors_to_exit_codes(debug, jax_logs=jax_logs):
        outcome = body()
    code = outcome_exit_code(outcome)
    if code:
        raise SystemExit(int(code))


def exits_by_outcome(command: Callable[P, Outcome | None]) -> Callable[P, None]:
    """``command`` (a typer command with a ``debug`` option) run by ``run_command``.

    typer reads the options from ``command``'s own signature (``functools.wraps``).
    """

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        run_command(lambda: command(*args, **kwargs), bool(kwargs.get("debug", False)))

    return run


#: OSErrors that describe the machine, not a bug: a full or read-only disk, no permission.
ENVIRONMENT_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EIO", "EFBIG", "EBADF")
    if hasattr(errno, name)
)


@contextmanager
def errors_to_exit_codes(debug: bool, *, jax_logs: bool = True) -> Iterator[None]:
    """Map jaxinspect's errors to messages on stderr and exit codes; only bugs get tracebacks.

    Also: a closed stdout ends the run quietly (141); a full or read-only disk is a one-line
    error (2); and a ``SystemExit``, ``KeyboardInterrupt`` or other ``BaseException`` raised
    by the user's code where no ``pipeline.usercode.user_code`` caught it is exit 3, while
    jaxinspect's own ``SystemExit`` and a real Ctrl-C pass through.

    ``jax_logs``: whether to show JAX's and libtpu's logs with ``--debug`` only; a body that
    runs no JAX (``diff`` of stored files) passes ``False`` and skips importing ``logging``
    (about 6 ms of a large ``diff``).
    """
    if jax_logs:
        from jaxinspect.process.errtrace import callback_tracebacks_shown, show_callback_tracebacks
        from jaxinspect.process.nativelog import native_logs_shown, show_native_logs

        # Process-wide switches, put back after: in-process callers (tests, the API) go on.
        shown = native_logs_shown(), callback_tracebacks_shown()
        show_native_logs(debug)  # libtpu's start-up chatter is shown with --debug only
        show_callback_tracebacks(debug)
    # --debug adds the Python traceback to a message; it never changes the exit code.
    try:
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
    finally:
        if jax_logs:
            show_native_logs(shown[0])
            show_callback_tracebacks(shown[1])


def _traceback_if(debug: bool) -> None:
    """With ``--debug``, the traceback of the exception being handled, on stderr."""
    if debug:
        import traceback  # on failure only: a few milliseconds of every run otherwise

        traceback.print_exc()


def _without_debug_advice(hint: str | None) -> str | None:
    """The hint without its lines asking for --debug (the run already has it), else ``None``."""
    if hint is None:
        return None
    kept = [line for line in hint.splitlines() if "--debug" not in line]
    return "\n".join(kept) or None


def _internal_error() -> NoReturn:
    import traceback

    traceback.print_exc()
    fail(
        "internal error in jaxinspect (a bug; please report it with the traceback above)",
        None,
        ExitCode.INTERNAL_ERROR,
    )


def _raised_by_user(exc: BaseException) -> bool:
    """Whether ``exc`` was raised in the user's code (not by jaxinspect, and not a real Ctrl-C)."""
    from jaxinspect.process.errtrace import is_user_frame

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
