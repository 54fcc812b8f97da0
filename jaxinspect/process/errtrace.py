"""Format an exception from the user's code: JAX's message plus only the user's own frames."""

from __future__ import annotations

import logging
import re
import sysconfig
import traceback
from pathlib import Path

from jaxinspect.jaxapi import CALLBACK_LOGGER

#: Most frames of the user's code a failure lists (the first and the last ones).
MAX_FRAMES = 20

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)  # the jaxinspect package
_LIBRARY_DIRS = tuple(
    str(Path(p).resolve())
    for p in {
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        sysconfig.get_paths()["scripts"],  # the console script that started the run
    }
)


_FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]*)", line \d+, in ')
_TRACEBACK_HEAD = "Traceback (most recent call last):"


def show_callback_tracebacks(show: bool) -> None:
    """Let JAX log a failing host callback's traceback (``--debug``), or not.

    The failure itself reaches the user as the execute stage's error, with the user's frames
    (``format_user_failure``); the log repeats it with every JAX frame.
    """
    logging.getLogger(CALLBACK_LOGGER).disabled = not show


def callback_tracebacks_shown() -> bool:
    """Whether JAX logs a failing host callback's traceback now."""
    return not logging.getLogger(CALLBACK_LOGGER).disabled


def is_user_frame(filename: str) -> bool:
    """Whether a frame belongs to the user's code rather than jaxinspect, JAX or the stdlib."""
    if filename.startswith("<"):
        return False
    resolved = str(Path(filename).resolve())
    if resolved.startswith(_PACKAGE_DIR):
        return False
    return (
        not any(resolved.startswith(d) for d in _LIBRARY_DIRS) and "site-packages" not in resolved
    )


def user_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The traceback entries of ``exc`` that are in the user's own files."""
    return [f for f in traceback.extract_tb(exc.__traceback__) if is_user_frame(f.filename)]


def format_user_failure(stage: str, target: str, exc: BaseException) -> str:
    """Describe a failure of the user's code in ``stage`` for humans, without a full traceback."""
    text = _first_paragraph(exc)
    lines = [f"{target}: {stage} failed: {type(exc).__name__}" + (f": {text}" if text else "")]
    frames = user_frames(exc)
    if frames:
        lines.append("In your code (most recent call last):")
        head, tail = frames, []
        if len(frames) > MAX_FRAMES:  # a runaway recursion repeats one frame a thousand times
            head, tail = frames[: MAX_FRAMES // 2], frames[-(MAX_FRAMES // 2) :]
        lines += _frame_lines(head)
        if tail:
            lines.append(f"  ... {len(frames) - len(head) - len(tail)} more frames ...")
            lines += _frame_lines(tail)
    return "\n".join(lines)


def _frame_lines(frames: list[traceback.FrameSummary]) -> list[str]:
    lines = []
    for frame in frames:
        lines.append(f"  {frame.filename}:{frame.lineno} in {frame.name}")
        if frame.line:
            lines.append(f"    {frame.line.strip()}")
    return lines


def _first_paragraph(exc: BaseException) -> str:
    # JAX messages run to many paragraphs of advice and links; the first says what happened.
    text = user_frames_only(str(exc).strip())
    first = text.split("\n\n", 1)[0]
    return first if len(first) < 2000 else first[:2000] + " ..."


def user_frames_only(text: str) -> str:
    """A message with a Python traceback inside (a failed host callback's), minus the frames
    of jaxinspect, JAX, the CLI framework and the standard library, code lines included."""
    if _TRACEBACK_HEAD not in text:
        return text
    kept: list[str] = []
    keep_frame = True
    for line in text.split("\n"):
        match = _FRAME_LINE.match(line)
        if match is not None:
            keep_frame = is_user_frame(match.group("file"))
        elif not line.startswith("    ") and line.strip() != "...":
            keep_frame = True  # past the frame: the exception line, or other text
        if keep_frame:
            kept.append(line.replace(_TRACEBACK_HEAD, "In your code (most recent call last):"))
    return "\n".join(kept)
