"""Result arrays in recycled memory.

A compiled program returns fresh NumPy arrays. A fresh array of a few megabytes pays a page
fault per 4 KiB page on its first write: glibc maps allocations above its mmap threshold (at
most 32 MiB) anew each time, and hands a smaller freed chunk back only while nothing else took
it. Measured on a 4096x4096 f32 relu, the faults took as long as the kernel (13.7 ms with
``out=``, 25.7 ms fresh). A caller in a loop drops the previous call's result, so this pool
keeps that memory, already faulted in, and gives it to the next result of the same size, as
onnxruntime's arena and PyTorch's caching allocator do.

A block is free when nothing but the pool refers to it: every view of a result array refers to
the block (NumPy points a view's ``base`` at the array that owns the memory), so a block is
never handed out while any array over it is alive. Only blocks of at least MIN_BYTES are
pooled (malloc reuses smaller ones well); at most PER_SIZE blocks of one size are kept, and at
most ``$TCPR_RESULT_POOL_MB`` MiB in all (default 512; 0 turns the pool off).
"""

from __future__ import annotations

import math
import os
import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20
PER_SIZE = 4
# sys.getrefcount of a block nothing outside the pool holds, read in a loop over a block list:
# the list's reference, the loop variable's and the call's argument
_UNHELD = 3


def _limit() -> int:
    try:
        return max(0, int(os.environ.get("TCPR_RESULT_POOL_MB", "512"))) << 20
    except ValueError:
        return 512 << 20


class ResultPool:
    """Blocks of memory for result arrays, reused once every array over them is gone."""

    def __init__(self, limit: int | None = None):
        self.limit = _limit() if limit is None else limit
        self._blocks: dict[int, list[np.ndarray]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialized C-contiguous array, in a free pooled block where there is one (a
        new block while the size has fewer than PER_SIZE and the limit allows; else NumPy's)."""
        dt = np.dtype(dtype)
        nbytes = math.prod(shape) * dt.itemsize  # (np.prod costs microseconds per call)
        if nbytes < MIN_BYTES or nbytes > self.limit:
            return np.empty(shape, dtype=dt)
        with self._lock:
            block = self._take(nbytes)
        if block is None:
            return np.empty(shape, dtype=dt)
        # Where NumPy put the block, as it puts any large array (16 bytes into a page): a
        # result 64-byte aligned, 48 bytes past its inputs within a 4 KiB page, made a
        # streaming kernel 20% slower (4K aliasing: loads running ahead of the stores look
        # like they depend on them).
        return block.view(dt).reshape(shape)

    def _take(self, size: int) -> np.ndarray | None:
        blocks = self._blocks.setdefault(size, [])
        for b in blocks:
            if sys.getrefcount(b) == _UNHELD:
                return b
        if len(blocks) >= PER_SIZE:
            return None
        if self._bytes + size > self.limit:
            self._drop_free(size)
            if self._bytes + size > self.limit:
                return None
        b = np.empty(size, dtype=np.uint8)
        blocks.append(b)
        self._bytes += size
        return b

    def _drop_free(self, keep: int) -> None:
        """Let go of the free blocks of other sizes (their memory goes back to malloc)."""
        for size, blocks in self._blocks.items():
            if size == keep:
                continue
            # (not list.remove: it compares blocks with ==, which NumPy does elementwise)
            held = [b for b in blocks if sys.getrefcount(b) > _UNHELD]
            self._bytes -= size * (len(blocks) - len(held))
            blocks[:] = held

    @property
    def pooled_bytes(self) -> int:
        """Bytes of the blocks the pool holds, in use or free."""
        return self._bytes


POOL = ResultPool()
