"""``check --shard I/N``: a deterministic share of a manifest's targets for one CI job.

Targets are dealt round-robin in name order, so shards differ in size by at most one and every
target is in exactly one shard whatever order the manifest lists them in. A stored folder that
no target produces (stale) belongs to the shard its name's hash picks, so each shard reports
and removes only its own. No jax import here.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from jaxinspect.errors import UsageError

_SHARD = re.compile(r"^\s*([0-9]+)\s*/\s*([0-9]+)\s*$", re.ASCII)
#: The most shards a run may be split into; a larger N is a typo (and huge digits cost).
MAX_SHARDS = 10_000


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def targets(self, names: list[str]) -> set[str]:
        """The target names of this shard."""
        ordered = sorted(set(names))
        return {name for i, name in enumerate(ordered) if i % self.count == self.index - 1}

    def owns_stale(self, folder_name: str) -> bool:
        """Whether this shard reports (and with --update removes) a stale folder."""
        digest = hashlib.sha256(folder_name.encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"2/4"`` -> ``Shard(2, 4)``.

    Raises:
        UsageError: Not ``I/N`` with 1 <= I <= N.
    """
    match = _SHARD.match(text)
    if match is None:
        raise UsageError(f"--shard {text!r}: expected I/N, e.g. 1/4 (shards count from 1)")
    if max(len(match.group(1)), len(match.group(2))) > len(str(MAX_SHARDS)):
        raise UsageError(f"--shard {text[:40]!r}: N must be at most {MAX_SHARDS:,}")
    index, count = int(match.group(1)), int(match.group(2))
    if count > MAX_SHARDS:
        raise UsageError(f"--shard {text!r}: N must be at most {MAX_SHARDS:,}")
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"--shard {text!r}: I must be between 1 and N (N >= 1)")
    return Shard(index, count)
