"""Keep what native libraries write to file descriptor 2 out of the user's terminal.

libtpu, once installed, writes initialization warnings straight to fd 2 when JAX starts its
backends on a machine without a TPU (``TPU_ACCELERATOR_TYPE``, ``TPU_WORKER_HOSTNAMES``, a
"Source Location Trace"), and again when a topology is described. Python's ``sys.stderr``
cannot catch them; redirecting the descriptor does. What was caught is shown with ``--debug``
and attached to an error raised in the block.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from jaxinspect.errors import JaxInspectError

_lock = threading.Lock()
#: Set by the CLI for ``--debug``: caught output is written back to stderr.
_show = False


def show_native_logs(show: bool) -> None:
    """Whether caught native output is written back to stderr (``--debug``)."""
    global _show
    _show = show


@contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Catch everything written to fd 2 in the block.

    It is written back under ``--debug``; a ``JaxInspectError`` leaving the block carries it
    in its message so a failure still shows what the library said.
    """
    with _lock, tempfile.TemporaryFile() as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        except JaxInspectError as exc:
            text = _read(sink)
            if text and not _show:
                exc.message = f"{exc.message}\n{text.rstrip()}"
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            text = _read(sink)
            if _show and text:
                sys.stderr.write(text)


def _read(sink: IO[bytes]) -> str:
    sink.seek(0)
    return sink.read().decode("utf-8", "replace")


def libtpu_installed() -> bool:
    """Whether the ``libtpu`` package (the ``tpu`` extra) is importable."""
    import importlib.util

    return importlib.util.find_spec("libtpu") is not None
