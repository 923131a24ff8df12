"""The process's native runtime: the thread pool and the step runner, compiled once.

:func:`runner` returns the ctypes entry of ``tcpr_run``, and :func:`caller` that of its checked
front ``tcpr_call`` (fastcall.py), for kernels of up to ``max_args`` pointer arguments (a module
per power of two from 16, compiled and cached like a kernel), all sharing one pool state. The C
library's pthread and clock functions are looked up in this process and handed to the JIT by
name. After ``fork`` the child re-initializes the state: the parent's threads do not exist there.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from functools import cache

import llvmlite.binding as llvm
import numpy as np

from tcp_rules.codegen import jit
from tcp_rules.codegen.fastcall import CallFn, call_ir
from tcp_rules.codegen.pool import PTHREAD_SYMBOLS, STATE_BYTES, pool_ir
from tcp_rules.codegen.program import runner_ir

RunFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                         ctypes.c_int32)
CLOCK = time.CLOCK_MONOTONIC  # the clock id the runner times steps with (differs by OS)
_lock = threading.Lock()
_state: np.ndarray | None = None
_init_fn: Callable[[int], None] | None = None


@cache
def _symbols() -> None:
    libc = ctypes.CDLL(None)  # the process's own symbols: the C library Python runs on
    for name in PTHREAD_SYMBOLS:
        llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)


def _bucket(max_args: int) -> int:
    n = 16
    while n < max_args:
        n *= 2
    return n


@cache
def _entry(bucket: int) -> tuple[int, int, int]:
    """Addresses of tcpr_pool_init, tcpr_run and tcpr_call in the module for ``bucket``
    arguments."""
    _symbols()
    text = pool_ir(jit.target().arch) + runner_ir(bucket) + call_ir()
    key = jit.cache_key(f"native runtime {bucket}\n{text}")
    names = ("tcpr_pool_init", "tcpr_run", "tcpr_call")
    syms = [f"{n}_{key[:16]}" for n in names]
    # Symbols carry the key: modules for other buckets or versions may be loaded beside it.
    body = text
    for n, sym in zip(names, syms, strict=True):
        body = body.replace(f"@{n}(", f"@{sym}(")
    got = jit.load(key, syms, lambda: body, vectorize=False)
    return got[syms[0]], got[syms[1]], got[syms[2]]


def _reset() -> None:
    """Initialize the pool state (once, and again in a forked child)."""
    assert _state is not None and _init_fn is not None
    _state[:] = 0
    _init_fn(_state.ctypes.data)


def state() -> int:
    """The address of the process's pool state, initialized on first use."""
    global _state, _init_fn
    with _lock:
        if _state is None:
            init_addr, _, _ = _entry(16)
            _init_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(init_addr)
            _state = np.zeros(STATE_BYTES, dtype=np.uint8)
            _reset()
            os.register_at_fork(after_in_child=_reset)
        return int(_state.ctypes.data)


def runner(max_args: int) -> Callable[..., None]:
    """``tcpr_run`` for kernels of up to ``max_args`` pointer arguments (ctypes releases the
    GIL while it runs)."""
    _, run_addr, _ = _entry(_bucket(max_args))
    return RunFn(run_addr)


def caller(max_args: int) -> Callable[..., int]:
    """``tcpr_call`` (fastcall.py) for kernels of up to ``max_args`` pointer arguments."""
    _, _, call_addr = _entry(_bucket(max_args))
    return CallFn(call_addr)
