"""The cold-run processes ``bench`` has running, so that SIGTERM and ``--timeout`` stop them.

The registry is module state on purpose: signal handlers belong to the process, and so do the
children they must stop. No jax import here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from jaxinspect.pipeline.timing.deadline import abort_run

#: Seconds a child gets to end after SIGTERM before it is killed.
GRACE_S = 2.0
#: Exit status after SIGTERM, as a shell reports a process it ended: 128 + 15.
TERMINATED = 128 + signal.SIGTERM

_live: set[subprocess.Popen[str]] = set()


def run_child(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to completion with its output captured, registered while it runs."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    _live.add(process)
    try:
        stdout, stderr = process.communicate()
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        _live.discard(process)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def stop_children(grace_s: float = GRACE_S) -> int:
    """SIGTERM every running child, SIGKILL those still running after ``grace_s``; reap all.

    Safe from a signal handler or another thread: it never takes the lock ``Popen.wait``
    holds while the main thread waits on the same child, and reaps with ``os.waitpid``.

    Returns:
        How many children were running.
    """
    pids = [p.pid for p in list(_live) if p.returncode is None]
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    running = set(pids)
    end = time.monotonic() + grace_s
    while running and time.monotonic() < end:
        running = {pid for pid in running if not _reaped(pid)}
        if running:
            time.sleep(0.02)
    for pid in running:
        _signal(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    return len(pids)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _reaped(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # reaped by the thread that waits on it
        return True
    return done == pid


@contextmanager
def forward_sigterm() -> Iterator[None]:
    """While inside, SIGTERM stops the children too and ends the process with status 143.

    Without it the default action ends this process alone and a cold-run child keeps running.
    Only the main thread can install a handler; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    stopped = stop_children()
    detail = f"; stopped {stopped} cold-run process(es)" if stopped else ""
    abort_run(f"terminated by SIGTERM{detail}", hint=None, code=TERMINATED)
