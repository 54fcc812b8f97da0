"""Tell whether a snapshot that changed depends on Python's hash seed (the pytest fixture).

pytest runs the tests in its own process, under whatever ``PYTHONHASHSEED`` the shell gave it,
and the seed cannot change once Python runs. A function that iterates a set of strings then
traces in another order in every session, and its snapshot "changes" at random. When the
fixture's comparison fails, it re-traces the function in fresh processes under two fixed seeds
(``python -m jaxinspect.snapshot.seedprobe``) and, if their texts differ from each other, names
the hash seed as the cause instead of leaving a bare diff. Only on failure: each probe imports
jax (seconds). A function the probe cannot reach (defined inside a test) or a spec it cannot
pickle is not probed.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from typing import Any

#: Seeds of the two probes, run side by side.
PROBE_SEEDS = ("1", "2")
_PROBE_TIMEOUT_S = 300.0


def seed_dependence(module: str, qualname: str, spec: Any, backend: str | None) -> str | None:
    """A sentence naming the hash seed as the cause, or ``None`` when the probes agree.

    ``None`` too when the function cannot be probed (see the module docstring). The probes are
    compared with each other, not with this process's snapshot: the session may have changed
    JAX's configuration in ways a fresh process does not repeat.
    """
    try:
        payload = pickle.dumps((module, qualname, spec, backend))
    except Exception:  # a spec holding a lambda or an open handle: nothing to probe with
        return None
    probes = [_start_probe(payload, seed) for seed in PROBE_SEEDS]
    texts = [_texts_of(probe) for probe in probes]
    if texts[0] is None or texts[1] is None:
        return None
    changed = [name for name in texts[0] if texts[0][name] != texts[1].get(name)]
    return _sentence(changed) if changed else None


def _sentence(changed: list[str]) -> str:
    value = os.environ.get("PYTHONHASHSEED", "")
    this_run = f"PYTHONHASHSEED={value}" if value and value != "random" else "a random hash seed"
    first, second = PROBE_SEEDS
    return (
        f"the compiled form depends on Python's hash seed: traced in fresh processes under "
        f"PYTHONHASHSEED={first} and {second}, its {', '.join(changed)} differ. The function "
        f"iterates a set (or something else ordered by hash values); iterate sorted(...) "
        f"instead, or run pytest with PYTHONHASHSEED fixed (this run: {this_run})"
    )


def _start_probe(payload: bytes, seed: str) -> subprocess.Popen[bytes] | None:
    """A fresh process snapshotting the function under ``seed``."""
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = seed
    # The test modules pytest imported sit on this process's path, not on the environment's.
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "jaxinspect.snapshot.seedprobe"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None
    assert process.stdin is not None  # stdin=PIPE
    with process.stdin:  # the probe reads it first thing, so both probes start at once
        process.stdin.write(payload)
    process.stdin = None  # closed: communicate() must not flush it
    return process


def _texts_of(process: subprocess.Popen[bytes] | None) -> dict[str, str] | None:
    """The texts ``process`` printed, or ``None`` if it failed."""
    if process is None:
        return None
    try:
        stdout, _ = process.communicate(timeout=_PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None
    if process.returncode != 0:
        return None
    try:
        texts = json.loads(stdout)
    except ValueError:
        return None
    return texts if isinstance(texts, dict) else None


def _resolve(module: str, qualname: str) -> Callable[..., Any]:
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target  # type: ignore[no-any-return]


def main() -> int:
    """The probe process: read the pickled request on stdin, print the texts as JSON."""
    request = sys.stdin.buffer.read()  # first: the parent's write waits for it
    from jaxinspect.inputs.target import function_target
    from jaxinspect.pipeline.jaxconfig import session_config
    from jaxinspect.snapshot.capture import capture_snapshot

    module, qualname, spec, backend = pickle.loads(request)
    try:
        function = _resolve(module, qualname)
    except (ImportError, AttributeError):  # defined inside a test: not reachable by name
        return 2
    with contextlib.redirect_stdout(sys.stderr), session_config():  # the user's prints
        taken = capture_snapshot(function_target(function), spec, backend)
    sys.stdout.write(json.dumps(dict(taken.texts)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
