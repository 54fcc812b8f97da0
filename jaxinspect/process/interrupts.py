"""Tell a real Ctrl-C (SIGINT delivered to jaxinspect) from a ``KeyboardInterrupt`` the user raised.

Both arrive as ``KeyboardInterrupt``. A real one ends the run (exit 130); one raised by the
user's code is that code failing (exit 3). The console script installs ``on_sigint``, which
records that the signal came and then raises as Python's own handler does.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

# Process-wide by nature: signals are delivered to the process, not to one call.
_received = threading.Event()


def install_sigint_handler() -> None:
    """Record real SIGINTs from now on, if Python's default handler is the one installed."""
    if threading.current_thread() is not threading.main_thread():
        return  # signal.signal works in the main thread only
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_sigint)


def on_sigint(signum: int, frame: FrameType | None) -> None:
    """Note the signal, then raise ``KeyboardInterrupt`` like ``signal.default_int_handler``."""
    _received.set()
    raise KeyboardInterrupt


def sigint_received() -> bool:
    """Whether a real SIGINT reached this process since the handler was installed."""
    return _received.is_set()
