"""A large ``diff``'s heap on transparent huge pages, where Linux and glibc allow it.

A 200,000-line ``diff`` touches about 60 MB of fresh memory (the two texts, the old one
rewritten, slices of them), and a first touch of each 4 KiB page is a fault: about 2 µs on a
virtual machine, a fifth of the run. Linux backs memory advised ``MADV_HUGEPAGE`` with 2 MiB
pages (one fault for 512) where ``transparent_hugepage/enabled`` is ``madvise``, its common
default. glibc advises its own memory only under a tunable read at start-up
(``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``), too late for a Python process to set. So the
heap is grown once, by a large pad that is then advised: allocations below 32 MiB come from
the heap (``M_MMAP_THRESHOLD``, not a fresh mapping each), and it is not given back
(``M_TRIM_THRESHOLD``) in the short life of a ``diff``.

Only the console script calls this, for a ``diff`` of large files: it changes how the whole
process allocates, which no caller of the Python API has asked for.
"""

from __future__ import annotations

import os

#: ``mallopt`` parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
_MADV_HUGEPAGE = 14  # Linux's asm-generic/mman-common.h
#: The largest mmap threshold glibc accepts on a 64-bit system (its ``HEAP_MAX_SIZE / 2``).
_MMAP_THRESHOLD = 32 << 20
#: Room for everything a 400,000-line ``diff`` allocates in large blocks, and the block
#: that grows the heap by it (below the threshold, so it comes from the heap).
_PAD = 256 << 20
_GROWTH = 30 << 20
_HUGE = 2 << 20
_SETTING = "/sys/kernel/mm/transparent_hugepage/enabled"


def advise_heap() -> bool:
    """Grow the heap by ``_PAD`` on huge pages (see above); whether it was done.

    Nothing is done where the kernel reads no advice (``never``: no huge pages at all;
    ``always``: huge pages without it), or the C library is not glibc. Never raises.
    """
    try:
        if not _advised_memory_gets_huge_pages() or not _glibc():
            return False
        return _grow_advised()
    except (OSError, ValueError, AttributeError):
        return False


def _advised_memory_gets_huge_pages() -> bool:
    with open(_SETTING) as setting:
        return "[madvise]" in setting.read()


def _glibc() -> bool:
    return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc ")


def _grow_advised() -> bool:
    import ctypes  # here: 2 ms, for a diff large enough to gain ten times that

    libc = ctypes.CDLL(None)
    libc.malloc.restype = libc.sbrk.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.sbrk.argtypes = [ctypes.c_ssize_t]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    settings = (
        (_M_MMAP_THRESHOLD, _MMAP_THRESHOLD),
        (_M_TRIM_THRESHOLD, 2 * _PAD),
        (_M_TOP_PAD, _PAD),
    )
    if not all(libc.mallopt(name, value) == 1 for name, value in settings):
        return False
    block = libc.malloc(_GROWTH)  # grows the heap by itself and the pad, all untouched
    if not block:
        return False
    try:
        end = libc.sbrk(0)
        start = -(-block // _HUGE) * _HUGE
        # Only where the block lies below the break: a heap that could not grow there (an
        # address taken) is a mapping of its own, and the range up to the break not ours.
        if end is None or not start < end <= block + _GROWTH + _PAD + _HUGE:
            return False
        return bool(libc.madvise(start, end - start, _MADV_HUGEPAGE) == 0)
    finally:
        libc.free(block)
