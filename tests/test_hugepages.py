"""A large ``diff``'s heap on transparent huge pages (process.hugepages), where Linux and glibc
give them to advised memory; nothing changes anywhere else."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import fork_free_python
from jaxinspect.process import hugepages


def _huge_pages_for_advised_memory() -> bool:
    try:
        return hugepages._advised_memory_gets_huge_pages() and hugepages._glibc()
    except (OSError, ValueError, AttributeError):
        return False


# The console script's first step for a diff, then how much of the old text it read lies in
# memory advised for huge pages (VmFlags "hg"): the heap before the advice was grown may
# hold its first bytes.
_ADVISED = r"""
import re, sys
from jaxinspect.cli import entry
from jaxinspect.snapshot import loosefile

entry._prestart_diff_count(["diff", *sys.argv[1:]])
early = loosefile._prestarted
text = early.text if early is not None else open(sys.argv[1]).read()
lo, hi = id(text), id(text) + len(text)
advised = 0
for mapping in re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", open("/proc/self/smaps").read()):
    start, end = (int(x, 16) for x in mapping.split(" ", 1)[0].split("-"))
    if "hg" in re.search(r"^VmFlags:(.*)$", mapping, re.M).group(1).split():
        advised += max(0, min(end, hi) - max(start, lo))
print(round(advised / len(text), 1))
if early is not None:
    early.parts.close()
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _huge_pages_for_advised_memory(),
    reason="Linux with glibc, giving huge pages to advised memory (transparent_hugepage: madvise)",
)
def test_a_large_old_file_is_read_into_memory_advised_for_huge_pages(tmp_path: Path) -> None:
    line = "  %add.1 = f32[] add(f32[] %p, f32[] %p)\n"
    big, small, new = tmp_path / "big.txt", tmp_path / "small.txt", tmp_path / "new.txt"
    big.write_text("HloModule m\n\nENTRY %main (p: f32[]) -> f32[] {\n" + line * 200_000 + "}\n")
    small.write_text("HloModule m\n" + line * 10)
    new.write_text("HloModule m\n")
    done = fork_free_python(_ADVISED, big, new)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) >= 0.7  # all of it but what the heap held before
    done = fork_free_python(_ADVISED, small, new)  # too small to gain: the heap as it was
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0.0\n"


@pytest.mark.parametrize(
    ("setting", "read"),
    [
        ("always [madvise] never\n", True),
        ("[always] madvise never\n", False),
        ("always madvise [never]\n", False),
    ],
)
def test_the_heap_is_changed_only_where_the_kernel_reads_the_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, read: bool
) -> None:
    # Where the kernel reads no advice (always, never) or its setting is unreadable, the C
    # library is never reached (pytest's own process must keep its allocator as it is).
    grown: list[bool] = []
    monkeypatch.setattr(hugepages, "_grow_advised", lambda: grown.append(True) or True)
    (tmp_path / "enabled").write_text(setting)
    monkeypatch.setattr(hugepages, "_SETTING", str(tmp_path / "enabled"))
    glibc = hugepages._glibc()
    assert hugepages.advise_heap() is (read and glibc)
    assert grown == ([True] if read and glibc else [])
    monkeypatch.setattr(hugepages, "_SETTING", str(tmp_path / "missing"))
    assert hugepages.advise_heap() is False
    assert len(grown) <= 1
