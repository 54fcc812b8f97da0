"""Output path options (``-o``, ``--out``, ``--save``): fixed before any user code runs.

A target or factory may ``os.chdir`` at import; a relative output path resolved after that
would land in the other folder. Commands call ``output_path`` first thing, so the path means
the folder the command was started in. ``-`` is standard output where a command can print
the file there, and a usage error where it cannot (a snapshot folder, a baseline beside a
report on stdout).
"""

from __future__ import annotations

from pathlib import Path

from jaxinspect.errors import UsageError

#: The path that means standard output.
STDOUT = "-"
#: Names of this process's standard output. While a command runs, file descriptor 1 points
#: at stderr (the user's prints go there; cli/capture.py), so opening one of these by name
#: would put the report on stderr: they mean ``-``.
_STDOUT_NAMES = frozenset({"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})


def is_stdout(path: Path) -> bool:
    """Whether the option named standard output (``-o -``, ``-o /dev/stdout``)."""
    return str(path) == STDOUT or str(path) in _STDOUT_NAMES


def output_path(path: Path, option: str, *, stdout_ok: bool = True, why: str = "") -> Path:
    """``path`` made absolute now (``-`` kept as is where standard output is allowed).

    Args:
        path: The option's value.
        option: The option's name, for the message.
        stdout_ok: Whether the command can write this output to standard output.
        why: Why it cannot, when it cannot.

    Raises:
        UsageError: ``-`` where standard output is not allowed.
    """
    if is_stdout(path):
        if stdout_ok:
            return Path(STDOUT)
        raise UsageError(f"{option} -: {why}", hint="Name a path instead of -.")
    return path.absolute()
