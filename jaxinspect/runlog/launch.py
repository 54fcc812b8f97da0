"""Run a program in a child Python with the recorder, and collect its compile log (no jax).

The child inherits stdin, stdout and stderr: the program's output is the program's. Its
compilations come back over a pipe, one JSON line each. A Ctrl-C that reaches jaxinspect
alone (``kill -INT``) is passed on to the child; one typed at the terminal reaches both
processes at once (one process group), so it is passed on only when it did not come that way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from types import FrameType

from jaxinspect.runlog.child import INTERRUPTED
from jaxinspect.runlog.model import Compilation, CompileLog


def run_program(
    target: str, args: list[str], *, module: bool, max_compiles: int | None
) -> CompileLog:
    """Run ``target`` (a script path, or a module name with ``module``) to its end; its log."""
    read_fd, write_fd = os.pipe()
    command = [sys.executable, "-m", "jaxinspect.runlog.child", str(write_fd)]
    command += ["module" if module else "path", target, *args]
    running: list[subprocess.Popen[bytes]] = []
    interrupted = False

    def forward(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        interrupted = True
        if running and not _terminal_sent_it():
            running[0].send_signal(signal.SIGINT)

    # Installed before the child starts: a handled signal is reset to the default in the
    # child at exec, an ignored one (a background job's SIGINT) would stay ignored there.
    main = threading.current_thread() is threading.main_thread()  # signal.signal's rule
    previous = signal.signal(signal.SIGINT, forward) if main else None
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(command, pass_fds=(write_fd,), stdout=_stdout_fd())
    except BaseException:
        _restore(previous)
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    running.append(proc)
    try:
        with os.fdopen(read_fd, encoding="utf-8") as pipe:
            lines = list(pipe)  # until the child (and only it) closes its end
        code = proc.wait()
    finally:
        _restore(previous)
    if code < 0:  # ended by a signal: the shell's 128 + N
        code = 128 - code
    compilations = tuple(Compilation.from_dict(json.loads(line)) for line in lines if line.strip())
    return CompileLog(
        program=f"-m {target}" if module else target,
        compilations=compilations,
        exit_code=code,
        interrupted=interrupted or code == INTERRUPTED,
        max_compiles=max_compiles,
    )


def _terminal_sent_it() -> bool:
    """Whether we are in the terminal's foreground group, which a typed Ctrl-C reaches whole."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False


def _stdout_fd() -> int | None:
    """The real stdout's descriptor (the CLI points fd 1 at stderr during a run), or inherit."""
    try:
        return sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return None


def _restore(previous: object) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)  # type: ignore[arg-type]
