"""Run the user's code so that it can neither end the run nor write into the report.

Every place jaxinspect calls the user's code (importing the target file, ``jax.jit``, tracing,
lowering, compiling, executing) does so inside ``user_code``. There:

- anything the code raises, ``SystemExit``, ``KeyboardInterrupt`` and other ``BaseException``
  included, becomes a ``StageError`` naming the target and the stage (exit 3); only a real
  Ctrl-C delivered to jaxinspect (``jaxinspect.process.interrupts``) still ends the run;
- its writes to stdout go to stderr, at the Python level (``sys.stdout``) and at the
  file-descriptor level (fd 1, which C code, ``os.write(1, ...)`` and child processes use), so
  stdout carries the report alone and ``--format json`` stays parseable;
- ``sys.stdout`` and ``sys.stderr`` are put back even if the code replaced or closed them;
- the working folder and ``sys.path`` are put back, and a module that shadows one of
  jaxinspect's dependencies is forgotten (``procstate.process_state_kept``).

No jax import here: the module is on the path of ``load_target``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from jaxinspect.errors import JaxInspectError, StageError
from jaxinspect.process.errtrace import format_user_failure
from jaxinspect.process.interrupts import sigint_received
from jaxinspect.process.procstate import process_state_kept
from jaxinspect.process.streams import stdout_to_stderr


@contextmanager
def user_code(
    stage: str, target: str, *, step: str | None = None, hint: str | None = None
) -> Iterator[None]:
    """Run the block as the user's code: stdout to stderr, every exception to ``StageError``.

    Args:
        stage: The stage reported with a failure (``import``, ``trace``, ``execute``...).
        target: The target as the user wrote it, named in the message.
        step: The step named in the message when it differs from ``stage`` (e.g. ``jit``).
        hint: Advice shown with a failure (default: run with --debug for the traceback).

    Raises:
        StageError: The block raised anything but a ``JaxInspectError`` or a real Ctrl-C.
    """
    with stdout_to_stderr(), process_state_kept():
        try:
            yield
            _wait_for_effects()
        except JaxInspectError:
            raise  # jaxinspect's own errors, from code it runs inside the block
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt) and sigint_received():
                raise  # a real Ctrl-C ends the run (exit 130)
            message = format_user_failure(step or stage, target, exc)
            raise StageError(stage, message, hint=hint) from exc


def _wait_for_effects() -> None:
    """Let host callbacks (``jax.debug.print``) finish while their output goes to stderr."""
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.effects_barrier()
