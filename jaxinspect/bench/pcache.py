"""Cold starts with the persistent compilation cache: an empty cache, then a populated one."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from jaxinspect.bench.cold import ColdConfig, run_cold_round, run_cold_sample
from jaxinspect.bench.report import ColdRound, PersistentCacheReport
from jaxinspect.errors import UsageError

#: The cache thresholds the cold processes set, so that small programs are cached too.
MIN_COMPILE_TIME_SECS = 0.0
MIN_ENTRY_SIZE_BYTES = 0
_SCRATCH_PREFIX = ".jaxinspect-empty-"


def run_cache_rounds(
    config: ColdConfig, runs: int, directory: str, on_sample: Callable[[], None]
) -> tuple[ColdRound, PersistentCacheReport]:
    """The empty-cache round and the report of the populated-cache round.

    Each empty-cache process gets its own new, empty scratch folder inside ``directory``
    (removed afterwards). Then one untimed process primes ``directory`` itself, and every
    process of the populated round uses it. Entries are not moved from a scratch folder into
    ``directory``: JAX's cache key includes the folder's path (through the XLA autotune-cache
    option it derives from it), so a moved entry would miss. Nothing outside ``directory``
    is touched.

    Raises:
        UsageError: ``directory`` cannot be created or is not a folder.
        JaxInspectError: A cold process failed.
    """
    root = _ensure_folder(directory)
    scratches: list[Path] = []

    def empty_dir(_: int) -> str:
        scratches.append(Path(tempfile.mkdtemp(prefix=_SCRATCH_PREFIX, dir=root)))
        return str(scratches[-1])

    try:
        empty = run_cold_round(config, runs, "empty", empty_dir, on_sample)
        written = [e.stat().st_size for e in scratches[-1].iterdir() if e.is_file()]
    finally:
        for scratch in scratches:
            shutil.rmtree(scratch, ignore_errors=True)
    priming = run_cold_sample(config, str(root))
    on_sample()
    populated = run_cold_round(config, runs, "populated", lambda _: str(root), on_sample)
    saved = tuple(
        (name, empty.phase(name).median_s - populated.phase(name).median_s)
        for name in CACHED_PHASES
    )
    return empty, PersistentCacheReport(
        directory=str(root),
        min_compile_time_secs=MIN_COMPILE_TIME_SECS,
        min_entry_size_bytes=MIN_ENTRY_SIZE_BYTES,
        entries_written=len(written),
        entry_bytes=sum(written),
        already_populated=priming.cache_requests > 0 and priming.cache_misses == 0,
        populated=populated,
        saved_s=saved,
        unexpected_misses=unexpected_misses(empty, populated),
    )


#: The phases a persistent compilation cache can shorten: a hit skips XLA's compile, while
#: import, tracing, lowering and the calls run as before (their differences are noise).
CACHED_PHASES = ("compile",)


def unexpected_misses(empty: ColdRound, populated: ColdRound) -> tuple[str, ...]:
    """Lines describing every process whose cache behaviour was not the expected one."""
    out = []
    for i, sample in enumerate(empty.samples, 1):
        if sample.cache_requests == 0:
            out.append(f"empty-cache process {i}: the compile did not consult the cache")
        elif sample.cache_hits:
            out.append(f"empty-cache process {i}: hit an empty cache (another writer?)")
    for i, sample in enumerate(populated.samples, 1):
        if sample.cache_requests == 0:
            out.append(f"populated-cache process {i}: the compile did not consult the cache")
        elif sample.cache_misses:
            out.append(
                f"populated-cache process {i}: {sample.cache_misses} of "
                f"{sample.cache_requests} compile requests missed where a hit was expected"
            )
    return tuple(out)


def _ensure_folder(directory: str) -> Path:
    root = Path(directory).resolve()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--compilation-cache {directory}: cannot create it: {exc}") from exc
    if not root.is_dir():
        raise UsageError(f"--compilation-cache {directory}: not a folder")
    return root
