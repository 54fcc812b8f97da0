"""End a finished command's process without the interpreter's teardown (no jax import)."""

import atexit
import os
from typing import NoReturn

from jaxinspect.process.streams import flush_std_streams, print_error, stdout_to_stderr


def exit_without_teardown(code: object) -> NoReturn:
    """End the process now, skipping the interpreter's teardown of every module and object.

    That teardown costs about 0.2 s once jax is loaded (a sixth of a small ``stages`` run) and
    about 50 ms after a large ``diff`` (hundreds of thousands of line strings), and a command
    has nothing left to do by then: every file it writes is closed on the spot. atexit
    handlers (jax's own clean-up among them) still run, and the standard streams are flushed.
    """
    if isinstance(code, str):
        print_error(code)
    status = code if isinstance(code, int) else int(code is not None)
    # The report first, before the redirection below flushes it and ignores a failure: a
    # TextIOWrapper whose flush fails drops the text it held, so a later flush succeeds and a
    # report lost to a closed pipe would end with 0.
    status = flush_std_streams(status)
    # No public API runs them (os._exit would skip them). The user's handlers may print:
    # that goes to stderr, after the report.
    with stdout_to_stderr():
        atexit._run_exitfuncs()
    # A report that cannot be delivered (closed pipe, full disk) changes a 0 or 1 status.
    os._exit(flush_std_streams(status))
