"""Text made from the user's values, safe to print: no terminal control codes, no crash.

A static argument's ``repr`` is the user's code: it may raise, be huge (a Python int over
4,300 digits cannot be turned into a string at all), or hold terminal escape sequences that
would recolour, retitle or clear the user's terminal. Everything shown from such values goes
through ``safe_repr``; error messages, which quote option values and names, through
``escape_controls``. No jax import.
"""

from __future__ import annotations

import math
import re

#: C0 and C1 control characters (ESC, BEL, backspace...), DEL, and the bidirectional
#: overrides that reorder what a terminal shows; newline and tab are kept where text allows.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROLS_AND_LINES = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str, *, keep_lines: bool = True) -> str:
    r"""``text`` with control characters written as escapes (``\x1b``, ``\u202e``).

    Args:
        text: Any text that came from the user.
        keep_lines: Keep newlines and tabs (multi-line messages); otherwise escape them too.
    """
    pattern = _CONTROLS if keep_lines else _CONTROLS_AND_LINES
    return pattern.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_repr(value: object) -> str:
    """``repr(value)`` on one line with control characters escaped; a description if it fails.

    Never raises: a ``repr`` that raises, or an int too large to print, is described instead.
    """
    try:
        text = repr(value)
    except Exception as exc:  # the user's __repr__, or int's digit limit
        if isinstance(value, int):
            digits = math.floor(abs(value).bit_length() * math.log10(2)) + 1
            return f"<int of about {digits:,} digits>"
        return f"<{type(value).__qualname__} object; its repr raised {type(exc).__name__}>"
    return escape_controls(text, keep_lines=False)
