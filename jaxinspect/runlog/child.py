"""The program under ``jaxinspect run``: the user's script or module, with the recorder on.

``python -m jaxinspect.runlog.child FD path|module TARGET [ARGS...]``. The program runs as
``python TARGET ARGS`` (or ``python -m TARGET ARGS``) would run it: ``__main__``, ``sys.argv``,
``sys.path[0]``, its own stdout and stderr, its exit code; an uncaught exception prints its
traceback (without this module's frames) and exits 1, Ctrl-C exits 130. Each compilation is
written to file descriptor FD as one JSON line the moment it completes, so the parent has
the log even when the program dies without unwinding.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback
from typing import NoReturn

from jaxinspect.runlog.model import Compilation

#: The exit code of a program ended by Ctrl-C (128 + SIGINT), as a shell reports it.
INTERRUPTED = 130


def main(argv: list[str]) -> NoReturn:
    """Run the program that ``argv`` names, recording its compilations to the log pipe."""
    fd, mode, target, *args = argv
    log = os.fdopen(int(fd), "w", buffering=1, encoding="utf-8")
    os.set_inheritable(log.fileno(), False)  # the program's own children do not hold it open
    from jaxinspect.runlog.recorder import CompileRecorder

    def write(compilation: Compilation) -> None:
        log.write(json.dumps(compilation.to_dict()) + "\n")

    recorder = CompileRecorder(write)
    recorder.start()
    sys.exit(_run(mode, target, args))


def _run(mode: str, target: str, args: list[str]) -> str | int | None:
    """The program's exit status: its ``sys.exit`` argument, 1 on an exception, 130 on Ctrl-C."""
    try:
        if mode == "module":
            sys.argv = [target, *args]  # runpy puts the module's file in argv[0]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exit_:
        return exit_.code
    except KeyboardInterrupt as exc:
        _print_traceback(exc)
        return INTERRUPTED
    except BaseException as exc:
        _print_traceback(exc)
        return 1
    return 0


def _print_traceback(exc: BaseException) -> None:
    """The traceback Python would print, starting at the program's own frame."""
    tb = exc.__traceback__
    # This module's frame and runpy's come first; the program's start after them.
    while tb is not None and (
        tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__)
        or tb.tb_frame.f_globals.get("__name__") == "runpy"
    ):
        tb = tb.tb_next
    sys.stderr.flush()
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
    sys.stderr.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
