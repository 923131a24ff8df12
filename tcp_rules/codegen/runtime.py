"""Compiled funcs: validation, buffers, kernel calls, threads.

``compile_func(func)`` lowers a func to kernels, compiles each (or loads it from the cache) and
returns a :class:`CompiledFunc`, callable on NumPy arrays like ``interpret.evaluate``. Inputs are
checked before any native code runs: count, dtype, rank, shape and symbol consistency by the
reference interpreter's ``bind_symbols``, then C-contiguity and alignment here; shapes that only
the run-time sizes decide are re-checked by every op's shape rule and by interval bounds checks
of every kernel access (plan.instantiate). Large kernels are split across threads: ctypes
releases the GIL during the call.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from tcp_rules.codegen import jit
from tcp_rules.codegen.emit import emit_kernel
from tcp_rules.codegen.kernel import AnyKernel, Kernel, MatmulKernel, kernel_text
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.matmul import emit_matmul, run_matmul
from tcp_rules.codegen.plan import Instance, Plan, PlanBuffer, Step, StepInstance, instantiate
from tcp_rules.diagnostics import TcpError
from tcp_rules.interpret import bind_symbols, concretize
from tcp_rules.ir import Apply, Func
from tcp_rules.ops import ShapeError
from tcp_rules.types import TensorType

SPLIT_WORK = 1 << 19  # below this many element-steps a kernel runs on the calling thread
CHUNKS_PER_THREAD = 8
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def default_threads() -> int:
    """Threads for large kernels: $TCPR_THREADS, else the CPUs this process may use (max 8)."""
    env = os.environ.get("TCPR_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(8, len(os.sched_getaffinity(0))))


def _executor(n: int) -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers < n:
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="tcpr")
        return _pool


def module_ir(k: AnyKernel, symbol: str) -> str:
    """The LLVM IR text of one kernel's module."""
    module = ir.Module(name=symbol)
    module.triple = jit.target().triple
    if isinstance(k, MatmulKernel):
        emit_matmul(module, k, symbol)
    else:
        emit_kernel(module, k, symbol)
    return str(module)


def kernel_symbols(k: AnyKernel) -> tuple[str, list[str]]:
    """The cache key of a kernel and the symbols its object defines."""
    key = jit.cache_key(kernel_text(k))
    sym = f"tcpk_{key[:24]}"
    return key, [sym, f"{sym}_pack"] if isinstance(k, MatmulKernel) else [sym]


def load_kernel(k: AnyKernel, use_disk: bool = True) -> dict[str, int]:
    """Compile ``k`` (or load it from a cache); addresses of its functions by symbol."""
    key, syms = kernel_symbols(k)
    return jit.load(key, syms, lambda: module_ir(k, syms[0]), use_disk=use_disk,
                    vectorize=not isinstance(k, MatmulKernel))


KernelFn = Callable[..., None]


def _cfunc(addr: int, nargs: int) -> KernelFn:
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * nargs), ctypes.c_int64, ctypes.c_int64)
    fn: KernelFn = proto(addr)
    return fn


@dataclass
class _Compiled:
    step: Step
    fn: KernelFn
    pack: KernelFn | None


class CompiledFunc:
    """A func compiled to native kernels; call it with one NumPy array per parameter."""

    def __init__(self, func: Func, plan: Plan, threads: int | None = None,
                 use_disk_cache: bool = True):
        self.func, self.plan = func, plan
        self.threads = default_threads() if threads is None else max(1, threads)
        self.target = jit.target()  # the kernels' (their matmul tiles' shapes depend on it)
        self.steps: list[_Compiled] = []
        for st in plan.steps:
            addrs = load_kernel(st.kernel, use_disk_cache)
            _, syms = kernel_symbols(st.kernel)
            st.symbol = syms[0]
            nbuf = len(st.kernel.buffers) + (2 if isinstance(st.kernel, MatmulKernel) else 0)
            fn = _cfunc(addrs[syms[0]], nbuf + 1)
            pack = _cfunc(addrs[syms[1]], 3) if len(syms) > 1 else None
            self.steps.append(_Compiled(st, fn, pack))
        self._instances: dict[tuple[tuple[str, int], ...], Instance] = {}
        self._seen: dict[tuple[tuple[np.dtype, tuple[int, ...]], ...], Instance] = {}
        self._lock = threading.Lock()

    def __call__(self, *arrays: np.ndarray, out: Sequence[np.ndarray] | None = None
                 ) -> tuple[np.ndarray, ...]:
        """Run on ``arrays``; results go to ``out`` (preallocated arrays) when given."""
        inst = self._validated(arrays)
        for p, a in zip(self.func.params, arrays, strict=True):
            if not (a.flags.c_contiguous and a.flags.aligned):
                raise TcpError.at(f"input '{p.param}' is not a C-contiguous aligned array "
                                  f"(pass np.ascontiguousarray(x))", p.span, stage="run")
        bufs = self._buffers(arrays, inst, out)
        for c, si in zip(self.steps, inst.steps, strict=True):
            self._run(c, si, [bufs[i] for i in c.step.buffers])
        return tuple(bufs[i] for i in self.plan.results)

    def profile(self, *arrays: np.ndarray, repeats: int = 5) -> list[float]:
        """Median seconds of each kernel step over ``repeats`` runs (after one warm-up run)."""
        inst = self._validated(arrays)
        bufs = self._buffers(arrays, inst, None)
        times: list[list[float]] = [[] for _ in self.steps]
        for r in range(repeats + 1):
            for k, (c, si) in enumerate(zip(self.steps, inst.steps, strict=True)):
                t0 = time.perf_counter()
                self._run(c, si, [bufs[i] for i in c.step.buffers])
                if r:
                    times[k].append(time.perf_counter() - t0)
        return [statistics.median(ts) for ts in times]

    def _validated(self, arrays: Sequence[np.ndarray]) -> Instance:
        """bind_symbols' verdict depends only on the inputs' types, dtypes and shapes: inputs
        seen before (and accepted) skip it."""
        try:
            sig = tuple((a.dtype, a.shape) for a in arrays if type(a) is np.ndarray)
        except AttributeError:
            sig = ()
        if len(sig) == len(arrays) == len(self.func.params):
            got = self._seen.get(sig)
            if got is not None:
                return got
        inst = self.instance(bind_symbols(self.func, arrays))
        if len(sig) == len(arrays):
            with self._lock:
                if len(self._seen) > 256:
                    self._seen.clear()
                self._seen[sig] = inst
        return inst

    def instance(self, env: dict[str, int]) -> Instance:
        """Shapes, kernel sizes and bounds checks for one binding of the symbols (cached)."""
        key = tuple(sorted(env.items()))
        with self._lock:
            got = self._instances.get(key)
        if got is None:
            _check_shapes(self.func, env)
            got = instantiate(self.plan, env)
            with self._lock:
                if len(self._instances) > 64:
                    self._instances.clear()
                self._instances[key] = got
        return got

    def _buffers(self, arrays: Sequence[np.ndarray], inst: Instance,
                 out: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        plan = self.plan
        given = _check_out(self.func, plan, inst, arrays, out) if out is not None else {}
        bufs: list[np.ndarray] = []
        for i, (b, shape) in enumerate(zip(plan.buffers, inst.shapes, strict=True)):
            bufs.append(self._buffer(i, b, shape, arrays, bufs, given))
        return bufs

    @staticmethod
    def _buffer(i: int, b: PlanBuffer, shape: tuple[int, ...], arrays: Sequence[np.ndarray],
                bufs: list[np.ndarray], given: dict[int, np.ndarray]) -> np.ndarray:
        if b.kind == "param":
            assert b.param is not None
            return arrays[b.param]
        if b.kind == "const":
            assert b.data is not None
            return b.data
        if b.kind == "view":
            assert b.base is not None
            return bufs[b.base].reshape(shape)
        if i in given:
            return given[i]
        return np.empty(shape, dtype=b.dtype.np_dtype)

    def _run(self, c: _Compiled, si: StepInstance, arrs: list[np.ndarray]) -> None:
        ptrs = [a.ctypes.data for a in arrs]
        sizes = si.sizes.ctypes.data
        if si.matmul is not None:
            assert isinstance(c.step.kernel, MatmulKernel)
            run_matmul(c.step.kernel, c.fn, c.pack, ptrs, sizes, si, self._split,
                       self.target)
            return
        self._split(lambda lo, hi: c.fn(*ptrs, sizes, lo, hi), si.extent, si.work, 1)

    def _split(self, call: Callable[[int, int], None], extent: int, work: int,
               align: int) -> None:
        """Run ``call(lo, hi)`` over [0, extent), on several threads if large.

        The range is cut into CHUNKS_PER_THREAD chunks per thread, which the threads take in
        turn: on a shared machine one core may be slowed by other processes, and equal halves
        would wait for it.
        """
        n = min(self.threads, extent // max(align, 1))
        if n <= 1 or work < SPLIT_WORK:
            call(0, extent)
            return
        k = min(n * CHUNKS_PER_THREAD, extent // align)
        bounds = [min(extent, -(-extent * t // k // align) * align) for t in range(k + 1)]
        bounds[-1] = extent
        chunks = iter(range(k))
        lock = threading.Lock()

        def worker() -> None:
            while True:
                with lock:
                    i = next(chunks, None)
                if i is None:
                    return
                call(bounds[i], bounds[i + 1])

        futs = [_executor(n).submit(worker) for _ in range(1, n)]
        worker()
        for f in futs:
            f.result()


def _check_shapes(func: Func, env: dict[str, int]) -> None:
    """Re-check every op's shape rule with the concrete sizes (as the interpreter does)."""
    types: dict[int, TensorType] = {}
    for v in func.values():
        if not isinstance(v, Apply):
            types[id(v)] = concretize(v.type, env, v.span)
            continue
        attrs = {k: tuple(d.subst(env) for d in a) if isinstance(a, tuple) and a and
                 hasattr(a[0], "subst") else a for k, a in v.attrs}
        try:
            t = v.op.infer([types[id(o)] for o in v.operands], attrs)
        except ShapeError as e:
            raise TcpError.at(f"{v.op.name}: {e.message}", v.span, stage="run") from None
        if t.shape is None or any(n < 0 for n in t.shape):
            raise TcpError.at(f"{v.op.name}: result type {t} has a negative or unknown dim",
                              v.span, stage="run")
        types[id(v)] = t


def _check_out(func: Func, plan: Plan, inst: Instance, arrays: Sequence[np.ndarray],
               out: Sequence[np.ndarray]) -> dict[int, np.ndarray]:
    if len(out) != len(plan.results):
        raise TcpError.at(f"func {func.name} has {len(plan.results)} result(s), out= has "
                          f"{len(out)} array(s)", stage="run")
    given: dict[int, np.ndarray] = {}
    for n, (pid, o) in enumerate(zip(plan.results, out, strict=True)):
        b, shape = plan.buffers[pid], inst.shapes[pid]
        if not isinstance(o, np.ndarray) or o.dtype != b.dtype.np_dtype or o.shape != shape:
            what = f"{o.dtype}{list(o.shape)}" if isinstance(o, np.ndarray) else type(o).__name__
            raise TcpError.at(f"out[{n}] must be a {b.dtype.np_dtype} array of shape "
                              f"{list(shape)}, got {what}", stage="run")
        if not (o.flags.c_contiguous and o.flags.aligned and o.flags.writeable):
            raise TcpError.at(f"out[{n}] must be a writeable C-contiguous aligned array",
                              stage="run")
        others = [*arrays, *given.values()]
        if any(o.size and np.may_share_memory(o, a) for a in others):
            raise TcpError.at(f"out[{n}] overlaps an input or another output", stage="run")
        given[pid] = o
    return given


def compile_func(func: Func, *, threads: int | None = None,
                 use_disk_cache: bool = True) -> CompiledFunc:
    """Compile ``func`` to native kernels (cached in process and on disk)."""
    return CompiledFunc(func, lower_func(func), threads, use_disk_cache)


def compile_kernel_func(func: Func, kernel: Kernel | MatmulKernel, *, threads: int | None = None,
                        use_disk_cache: bool = True) -> CompiledFunc:
    """Run a hand-built ``kernel`` as the implementation of ``func``.

    The kernel's buffers are the func's parameters in order, then its one result; its size
    parameters are named after the func's symbols (``N``, ``D``), bound from the inputs.
    """
    from tcp_rules.types import Dim

    if len(func.results) != 1 or len(kernel.buffers) != len(func.params) + 1:
        raise TcpError.at(f"kernel {kernel.name} needs {len(func.params)} inputs and one output "
                          f"to implement func {func.name}")
    plan = Plan(func)
    for p in func.params:
        plan.add_buffer(PlanBuffer(p.type.dtype, p.type.dims, "param", param=p.index))
    out = plan.add_buffer(PlanBuffer(func.results[0].type.dtype, func.results[0].type.dims,
                                     "result"))
    plan.steps.append(Step(kernel, (*range(len(func.params)), out),
                           tuple(Dim.of(s) for s in kernel.sizes)))
    plan.results.append(out)
    return CompiledFunc(func, plan, threads, use_disk_cache)


_compiled: weakref.WeakKeyDictionary[Func, CompiledFunc] = weakref.WeakKeyDictionary()
_plans: weakref.WeakKeyDictionary[Func, Plan] = weakref.WeakKeyDictionary()


def plan_of(func: Func) -> Plan:
    """The plan ``func`` lowers to, lowered once per func (run_compiled, memory checks)."""
    plan = _plans.get(func)
    if plan is None:
        plan = _plans[func] = lower_func(func)
    return plan


def run_compiled(func: Func, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Compile ``func`` (cached) and run it on ``inputs``: the CLI's ``--engine compiled``.

    Inputs are validated like the reference interpreter's (TcpError on a wrong count, dtype,
    shape, symbol binding or a non-contiguous array); results are fresh arrays.
    """
    cf = _compiled.get(func)
    if cf is None:
        cf = _compiled[func] = CompiledFunc(func, plan_of(func))
    return cf(*inputs)


def emit_llvm(func: Func, *, optimized: bool = False) -> str:
    """The LLVM IR of every kernel of ``func``, each after a comment with its kernel text.

    ``optimized`` shows the IR after the O3 pipeline (vectorized) instead of as generated.
    """
    parts = []
    for st in lower_func(func).steps:
        _, syms = kernel_symbols(st.kernel)
        head = "".join(f"; {line}\n" for line in kernel_text(st.kernel).splitlines())
        text = module_ir(st.kernel, syms[0])
        if optimized:
            text = jit.optimized_ir(text, not isinstance(st.kernel, MatmulKernel))
        parts.append(f"; kernel {st.kernel.name}\n{head}{text}")
    return "\n".join(parts)
