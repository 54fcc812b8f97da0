"""Keep what native libraries write to file descriptor 2 out of the user's terminal.

libtpu, once installed, writes initialization warnings straight to fd 2 when JAX starts its
backends on a machine without a TPU (``TPU_ACCELERATOR_TYPE``, ``TPU_WORKER_HOSTNAMES``, a
"Source Location Trace"), and again when a topology is described. Python's ``sys.stderr``
cannot catch them; redirecting the descriptor does. What was caught is shown with ``--debug``
and attached to an error raised in the block.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
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


def native_logs_shown() -> bool:
    """Whether caught native output is written back to stderr now."""
    return _show


@contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Catch everything written to fd 2 in the block.

    It is written back under ``--debug``; a ``JaxInspectError`` leaving the block carries it
    in its message so a failure still shows what the library said.
    """
    # Imported here: tempfile pulls in shutil, bz2, lzma and random, about a fifth of the
    # start-up of a ``diff``, which never gets here (every command imports this module).
    import tempfile

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


def cuda_plugin_installed() -> bool:
    """Whether JAX's CUDA plugin (the ``cuda`` extra, or ``jax[cuda12]``) is installed."""
    import importlib.util

    try:
        return importlib.util.find_spec("jax_plugins.xla_cuda12") is not None
    except ModuleNotFoundError:  # no jax_plugins package at all
        return False


def start_libtpu_quietly() -> None:
    """Initialize libtpu now, its start-up warnings caught, where JAX would initialize it anyway.

    With libtpu installed, JAX initializes it the first time it starts its backends, even on a
    machine with no TPU: at ``jax.devices()``, or in a user's module that builds a mesh at
    import, outside any block of jaxinspect's. Doing it first, inside ``quiet_native_stderr``,
    keeps the warnings off the terminal wherever the backends start. No backend starts here,
    so the CPU device count can still be set; JAX later finds the plugin ready. Nothing is done
    without libtpu, when ``JAX_PLATFORMS`` leaves TPU out, or once the backends are up.
    """
    from jaxinspect import jaxapi

    if cuda_plugin_installed() and not jaxapi.backends_started():
        # Importing JAX's CUDA plugin writes "Could not find cuda drivers" lines to fd 2 on a
        # host without a driver, and JAX's failed start of it a traceback: found now, quietly.
        with contextlib.suppress(Exception), quiet_native_stderr():
            jaxapi.discover_plugins()
    if not libtpu_installed() or not _tpu_platform_allowed():
        return
    if jaxapi.backends_started():
        return
    # A failure (a TPU held by another process) is JAX's to meet and report when it starts
    # the TPU backend, as it would without jaxinspect; what libtpu said shows with --debug.
    with contextlib.suppress(Exception), quiet_native_stderr():
        jaxapi.initialize_tpu_plugin()


def _tpu_platform_allowed() -> bool:
    """Whether JAX may start a TPU backend: ``JAX_PLATFORMS`` unset or naming ``tpu``."""
    import jax

    platforms = jax.config.jax_platforms
    return not platforms or "tpu" in [p.strip() for p in str(platforms).split(",")]


#: The jaxlib modules ``import jax`` loads that open the CUDA plugin's libraries, each of
#: which logs "Could not find cuda drivers on your machine" to fd 2 on a host without one.
_CUDA_LOADERS = (
    "jaxlib.gpu_solver",
    "jaxlib.gpu_sparse",
    "jaxlib.gpu_prng",
    "jaxlib.gpu_linalg",
    "jaxlib.gpu_rnn",
    "jaxlib.gpu_triton",
)


class _QuietCudaLoad:
    """At the first ``import jax``, load the modules that log about CUDA first, caught.

    Installed by the CLI where the CUDA plugin is: the lines would otherwise reach the
    terminal from every command, GPU target or not. Lazy, so commands that never import JAX
    (``--help``, ``diff``) load nothing; it removes itself after the first time. A finder
    needs only ``find_spec``: no ``importlib.abc`` base, whose import (importlib.resources,
    tempfile, shutil) would cost every command's start-up.
    """

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname == "jax" and self in sys.meta_path:
            sys.meta_path.remove(self)
            with contextlib.suppress(Exception), quiet_native_stderr():
                for module in _CUDA_LOADERS:
                    importlib.import_module(module)
        return None  # the normal import goes on


def quiet_cuda_import() -> None:
    """Have the first ``import jax`` of this process keep the CUDA plugin's lines off fd 2."""
    if "jax" not in sys.modules and cuda_plugin_installed():
        sys.meta_path.insert(0, _QuietCudaLoad())
        # The plugin's libraries start absl logging, after which XLA's INFO lines ("HloModule
        # dump enabled", "PjRt-IFRT device count") reach stderr on every dump (passes,
        # memory): warnings and errors only, as without the plugin. A value set is kept.
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
