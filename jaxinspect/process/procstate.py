"""Put the working folder, ``sys.path`` and jaxinspect's dependencies back after user code.

Research scripts ``os.chdir`` and ``sys.path.insert(0, here)`` at import. Left in place, the
first moves every relative path jaxinspect resolves afterwards (a spec, a baseline, the
target a benchmark's fresh process loads) and the second lets a neighbour named ``rich.py``
or ``yaml.py`` shadow a module jaxinspect imports later. So around every block of user code
(``usercode.user_code``) the folder and the path are restored, and a module the block
imported from a folder it added to the path, under the name of a module found elsewhere on
the restored path, is dropped from ``sys.modules`` (the user's module keeps its reference).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def process_state_kept() -> Iterator[None]:
    """Restore the working folder, ``sys.path`` and shadowed modules when the block ends."""
    folder = _cwd()
    path = list(sys.path)
    modules = set(sys.modules)
    try:
        yield
    finally:
        if folder is not None and _cwd() != folder:
            with contextlib.suppress(OSError):  # the folder was removed: nothing to go back to
                os.chdir(folder)
        if sys.path != path:
            sys.path[:] = path
            _drop_shadowing_modules(set(sys.modules) - modules)


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the working folder was deleted under us
        return None


def _drop_shadowing_modules(new: set[str]) -> None:
    """Forget new modules that the restored ``sys.path`` would import from another file.

    Only runs when the block changed ``sys.path`` (rare), since it looks each new top-level
    module up again.
    """
    tops: dict[str, str] = {}  # top-level name -> the file the block loaded it from
    for name in new:
        top = name.partition(".")[0]
        origin = getattr(sys.modules.get(top), "__file__", None)
        if isinstance(origin, str):
            tops[top] = origin
    shadowing = {top for top, origin in tops.items() if _found_elsewhere(top, origin)}
    for name in new:
        if name.partition(".")[0] in shadowing:
            sys.modules.pop(name, None)


def _found_elsewhere(top: str, origin: str) -> bool:
    """Whether ``top`` imports from another file than ``origin`` on the restored path."""
    loaded = sys.modules.pop(top, None)  # find_spec answers with the loaded module otherwise
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        found = None
    finally:
        if loaded is not None:
            sys.modules[top] = loaded
    return found is not None and found.origin is not None and found.origin != origin
