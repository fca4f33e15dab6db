"""glibc malloc settings for the ``riverbed broker`` process: reuse big freed buffers.

Fetch reads each partition's batches into a fresh ``bytes`` of up to the partition's
fetch limit (``max.partition.fetch.bytes``, 1 MiB by default) and hands it to the socket.
With glibc's defaults such a block is either ``mmap``-ed and ``munmap``-ed on its own
(above the dynamic mmap threshold) or carved from the heap top, which ``free`` trims back
to the kernel once more than the (dynamic) trim threshold is free.  Either way every
response's pages were faulted in and zeroed again: ``perf`` on the broker while
consumers read 1 KiB records showed page faults, ``unmap_page_range`` and page zeroing
as the largest part of its CPU time, and the broker spent ~0.9 CPU s per GB served
against ~0.5 with the settings below (``bench/bench_consume_scale.py``, docs/benchmarks.md).

:func:`tune` sets ``M_MMAP_THRESHOLD`` to :data:`MMAP_THRESHOLD` (which also stops
glibc adjusting the thresholds) and ``M_TRIM_THRESHOLD`` to :data:`TRIM_THRESHOLD`, so
those blocks stay in the heap and are reused.  The price: up to ``TRIM_THRESHOLD`` bytes
of freed heap are kept instead of returned, so the RSS stays near its peak rather than
growing (a bounded, one-off amount).  Only the broker command calls it, never a library
user's process (:class:`~riverbed.testing.embedded.EmbeddedBroker` leaves malloc alone).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import platform

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic mmap threshold on 64-bit
TRIM_THRESHOLD = 64 << 20
ENV_OVERRIDES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def tune() -> bool:
    """Apply the settings above; True when applied.  Does nothing (False) on a C library
    other than glibc, or when the environment sets either threshold itself (glibc's
    ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``: the operator's choice wins).
    Never raises: a failure is logged at DEBUG and the defaults stay."""
    if any(name in os.environ for name in ENV_OVERRIDES):
        return False
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        mallopt.restype = ctypes.c_int
        applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
            mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        )
    except (OSError, AttributeError) as exc:
        log.debug("malloc settings left at glibc's defaults: %s", exc)
        return False
    return applied
