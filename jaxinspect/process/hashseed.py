"""Run the user's code under a fixed ``PYTHONHASHSEED``, so its compiled forms do not vary.

Python salts ``str`` hashes per process, so a program that iterates a set of names (numpyro
orders its ELBO terms that way) traces its equations in another order in every process, and a
snapshot taken in one process never matches ``check`` in the next. The seed is read once, when
the interpreter starts, so the only way to fix it for the CLI is to start again: a command that
runs the user's code re-executes itself with ``PYTHONHASHSEED`` set, before it imports jax
(one interpreter start, about 20 ms). ``JAXINSPECT_HASH_SEED`` picks another seed (any value
``PYTHONHASHSEED`` takes, ``random`` included). No jax import here.
"""

from __future__ import annotations

import os
import sys

#: The seed the user's code runs under unless ``JAXINSPECT_HASH_SEED`` says otherwise.
DEFAULT_SEED = "0"
SEED_VARIABLE = "JAXINSPECT_HASH_SEED"
#: Commands that import the user's code; the others (help, ``topologies``, a ``diff`` of stored
#: files, which ``entry`` runs before this) do not pay for a second start.
_USER_CODE_COMMANDS = frozenset(
    {"bench", "check", "cost", "diff", "ir", "memory", "passes", "recompile", "report"}
    | {"snapshot", "spec", "stages"}
)
_HELP = frozenset({"--help", "-h"})


def hash_seed() -> str:
    """The ``PYTHONHASHSEED`` value the user's code runs under."""
    return os.environ.get(SEED_VARIABLE, "").strip() or DEFAULT_SEED


def needs_reexec(argv: list[str]) -> bool:
    """Whether this invocation runs the user's code under another seed than ``hash_seed()``."""
    if not argv or argv[0] not in _USER_CODE_COMMANDS or _HELP.intersection(argv):
        return False
    return os.environ.get("PYTHONHASHSEED") != hash_seed()


def reexec_with_fixed_seed(argv: list[str]) -> None:
    """Replace this process by the same command line under the fixed seed; return if not needed.

    ``sys.orig_argv`` is the interpreter's own command line (``python -m jaxinspect …`` or the
    console script's path), so interpreter options survive. Where ``exec`` is not available the
    command runs under the caller's seed rather than failing.
    """
    if not needs_reexec(argv) or not hasattr(os, "execv"):
        return
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = hash_seed()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, list(sys.orig_argv), env)
    except OSError:  # e.g. the interpreter moved; the run still works, under the caller's seed
        return
