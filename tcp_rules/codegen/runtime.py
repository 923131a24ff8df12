"""Compiled funcs: validation, buffers, kernel calls, threads.

``compile_func(func)`` lowers a func to kernels, compiles each (or loads it from the cache) and
returns a :class:`CompiledFunc`, callable on NumPy arrays like ``interpret.evaluate``. Inputs are
checked before any native code runs: count, dtype, rank, shape and symbol consistency by the
reference interpreter's ``bind_symbols``, then C-contiguity and alignment here; shapes that only
the run-time sizes decide are re-checked by every op's shape rule and by interval bounds checks
of every kernel access (plan.instantiate). Then one native call runs every kernel in order
(program.py), large kernels split across the native thread pool (pool.py); ctypes releases the
GIL during the call.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from tcp_rules.codegen import columns, fastcall, jit, native, results
from tcp_rules.codegen.emit import emit_kernel
from tcp_rules.codegen.kernel import AnyKernel, Kernel, MatmulKernel, kernel_text
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.matmul import emit_matmul
from tcp_rules.codegen.plan import Instance, Plan, PlanBuffer, Step, instantiate
from tcp_rules.codegen.program import Layout, layout
from tcp_rules.diagnostics import TcpError
from tcp_rules.interpret import bind_symbols, concretize, shape_message
from tcp_rules.ir import Apply, Func
from tcp_rules.ops import ShapeError
from tcp_rules.types import TensorType


def default_threads() -> int:
    """Threads for large kernels: $TCPR_THREADS, else the CPUs this process may use."""
    env = os.environ.get("TCPR_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS has no affinity masks
        return max(1, os.cpu_count() or 1)


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
    # The column block decides a kernel's code and the scratch the runner gives it (program.py),
    # so it is part of the key: tests vary it, and a kernel compiled for one block must not
    # serve another.
    key = jit.cache_key(f"{kernel_text(k)}\ncolumn block {columns.COLUMN_BLOCK}")
    sym = f"tcpk_{key[:24]}"
    return key, [sym, f"{sym}_pack"] if isinstance(k, MatmulKernel) else [sym]


def load_kernel(k: AnyKernel, use_disk: bool = True) -> dict[str, int]:
    """Compile ``k`` (or load it from a cache); addresses of its functions by symbol."""
    key, syms = kernel_symbols(k)
    return jit.load(key, syms, lambda: module_ir(k, syms[0]), use_disk=use_disk,
                    vectorize=vectorized(k))


def vectorized(k: AnyKernel) -> bool:
    """Whether ``k``'s module is compiled with the loop vectorizer: not a matmul's alone, which
    is written with vectors (its row pass is not)."""
    return not isinstance(k, MatmulKernel) or k.post is not None


@dataclass(frozen=True)
class _Fast:
    """The checked entry's tables for inputs like an accepted call's (fastcall.py)."""

    sig: np.ndarray  # kept alive: the entry reads it at ``address``
    address: int
    out_sig: np.ndarray  # the same with out= arrays checked too
    out_address: int
    inputs: int
    layout: Layout
    results: list[tuple[tuple[int, ...], np.dtype]]  # shape and dtype per result, in order


class CompiledFunc:
    """A func compiled to native kernels; call it with one NumPy array per parameter.

    A call checks the inputs, allocates the results (or takes ``out``) and makes one native
    call, which runs every kernel in order on the thread pool (program.py, pool.py). A call
    whose inputs are shaped as the last accepted call's is checked inside that native call
    instead, its ``out`` arrays too (fastcall.py).
    """

    def __init__(self, func: Func, plan: Plan, threads: int | None = None,
                 use_disk_cache: bool = True):
        self.func, self.plan = func, plan
        self.threads = default_threads() if threads is None else max(1, threads)
        self.target = jit.target()  # the kernels' (their matmul tiles' shapes depend on it)
        self.steps = plan.steps
        self.addrs: list[tuple[int, int]] = []
        for st in plan.steps:
            addrs = load_kernel(st.kernel, use_disk_cache)
            _, syms = kernel_symbols(st.kernel)
            st.symbol = syms[0]
            self.addrs.append((addrs[syms[0]], addrs[syms[1]] if len(syms) > 1 else 0))
        self.results = list(dict.fromkeys(plan.results))  # each result buffer once
        most = max((len(st.buffers) + (2 if isinstance(st.kernel, MatmulKernel)
                                        else columns.column_scratch(st.kernel) > 0)
                    for st in plan.steps), default=1)
        self._entry = native.runner(most)
        self._checked = native.caller(most)
        self._fast: _Fast | None = None  # the last accepted inputs' checked entry
        self._pool = native.state()
        self._instances: dict[tuple[tuple[str, int], ...], Instance] = {}
        self._seen: dict[tuple[tuple[np.dtype, tuple[int, ...]], ...], Instance] = {}
        self._layouts: dict[int, tuple[Instance, Layout]] = {}
        self._lock = threading.Lock()

    def __call__(self, *arrays: np.ndarray, out: Sequence[np.ndarray] | None = None
                 ) -> tuple[np.ndarray, ...]:
        """Run on ``arrays``; results go to ``out`` (preallocated arrays) when given."""
        return self._call(arrays, out, 0)

    def _call(self, arrays: Sequence[np.ndarray], out: Sequence[np.ndarray] | None,
              ticks: int) -> tuple[np.ndarray, ...]:
        fast = self._fast
        if fast is not None and len(arrays) == fast.inputs:
            got = self._fast_call(fast, arrays, out, ticks)
            if got is not None:
                return got
        inst = self._validated(arrays)
        for p, a in zip(self.func.params, arrays, strict=True):
            if not (a.flags.c_contiguous and a.flags.aligned):
                raise TcpError.at(f"input '{p.param}' is not a C-contiguous aligned array "
                                  f"(pass np.ascontiguousarray(x))", p.span, stage="run")
        res = self._results(arrays, inst, out)
        lay = self._layout(inst)
        self._launch(lay, arrays, res, ticks)
        self._fast = self._fast_for(arrays, inst, lay)
        return tuple(res[i] for i in self.plan.results)

    def _fast_for(self, arrays: Sequence[np.ndarray], inst: Instance, lay: Layout
                  ) -> _Fast | None:
        """What the checked entry needs to run calls whose inputs are like ``arrays``."""
        run = (self._pool, lay.address, self.threads, lay.nsteps, native.CLOCK)
        ins = fastcall.specs(arrays)
        sig = None if ins is None else fastcall.signature(ins, run, lay.nslots)
        if ins is None or sig is None:
            return None
        # (the lowering gives every result a buffer of its own: plan.results has no repeats)
        specs = [(inst.shapes[i], np.dtype(self.plan.buffers[i].dtype.np_dtype))
                 for i in self.plan.results]
        out_sig = fastcall.signature([*ins, *[(dt, shape, True) for shape, dt in specs]], run,
                                     lay.nslots)
        if out_sig is None:
            return None
        return _Fast(sig, int(sig.ctypes.data), out_sig, int(out_sig.ctypes.data), len(arrays),
                     lay, specs)

    def _fast_call(self, fast: _Fast, arrays: Sequence[np.ndarray],
                   out: Sequence[np.ndarray] | None, ticks: int) -> tuple[np.ndarray, ...] | None:
        """Run through the checked entry; None (nothing run) when an input or out= array is
        not as the entry expects. Written for few Python operations: each costs microseconds
        after kernels have flushed the caches and the TLB."""
        if out is None:
            res = [results.POOL.empty(shape, dt) for shape, dt in fast.results]
            address = fast.address
        elif len(out) == len(fast.results):
            res, address = list(out), fast.out_address
        else:
            return None
        raw = fast.layout.take_raw()
        bad = self._checked(address, (*arrays, *res, raw), ticks)
        fast.layout.give_arena(raw)
        return None if bad else tuple(res)

    def timed(self, *arrays: np.ndarray, out: Sequence[np.ndarray] | None = None
              ) -> tuple[tuple[np.ndarray, ...], float, list[float]]:
        """A call's results, its wall seconds and each kernel's seconds within it: the host's
        cost (checks, allocation, the native call's entry, between kernels) is the difference,
        free of the noise two separate timings would add."""
        ticks = np.zeros(max(1, len(self.steps)), dtype=np.int64)
        t0 = time.perf_counter()
        got = self._call(arrays, out, ticks.ctypes.data)
        wall = time.perf_counter() - t0
        return got, wall, [1e-9 * int(t) for t in ticks[:len(self.steps)]]

    def profile(self, *arrays: np.ndarray, repeats: int = 5) -> list[float]:
        """Median seconds of each kernel step over ``repeats`` runs (after one warm-up run),
        timed inside the native entry."""
        self.timed(*arrays)
        runs = [self.timed(*arrays)[2] for _ in range(repeats)]
        return [statistics.median(ts) for ts in zip(*runs, strict=True)]

    def _launch(self, lay: Layout, arrays: Sequence[np.ndarray], res: dict[int, np.ndarray],
                times: int) -> None:
        raw, arena = lay.take_arena()
        try:
            slots = (ctypes.c_int64 * lay.nslots)(*[_address(a) for a in arrays],
                                                   *[res[i].ctypes.data for i in self.results],
                                                   arena)
            self._entry(self._pool, lay.address, slots, self.threads, 0, lay.nsteps, times,
                        native.CLOCK)
        finally:
            lay.give_arena(raw)

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

    def _layout(self, inst: Instance) -> Layout:
        got = self._layouts.get(id(inst))
        if got is None or got[0] is not inst:
            lay = layout(self.plan, inst, self.addrs, self.threads, self.target)
            with self._lock:
                if len(self._layouts) > 64:
                    self._layouts.clear()
                self._layouts[id(inst)] = got = (inst, lay)
        return got[1]

    def _results(self, arrays: Sequence[np.ndarray], inst: Instance,
                 out: Sequence[np.ndarray] | None) -> dict[int, np.ndarray]:
        given = _check_out(self.func, self.plan, inst, arrays, out) if out is not None else {}
        return {i: given[i] if i in given else
                results.POOL.empty(inst.shapes[i], self.plan.buffers[i].dtype.np_dtype)
                for i in self.results}


# Data addresses of arrays seen before, by id: ``a.ctypes.data`` costs ~1-2 us, a third of a
# many-input call's host time, and weights come back call after call. The weak reference says
# the array is the same object, and while it exists NumPy refuses to resize the array in place
# (``resize`` checks for weak references); only ``resize(refcheck=False)`` gets past that, and
# then the shape changes, which is compared too.
_addresses: dict[int, tuple[weakref.ref[np.ndarray], tuple[int, ...], int]] = {}


def _address(a: np.ndarray) -> int:
    got = _addresses.get(id(a))
    if got is not None and got[0]() is a and got[1] == a.shape:
        return got[2]
    addr = int(a.ctypes.data)
    if len(_addresses) > 4096:
        _addresses.clear()
    _addresses[id(a)] = (weakref.ref(a), a.shape, addr)
    return addr


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
            raise TcpError.at(shape_message(v.op.name, e.message, env), v.span,
                              stage="run") from None
        if t.shape is None or any(n < 0 for n in t.shape):
            raise TcpError.at(shape_message(v.op.name, f"result type {t} has a negative or "
                                            f"unknown dim", env), v.span, stage="run")
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
            text = jit.optimized_ir(text, vectorized(st.kernel))
        parts.append(f"; kernel {st.kernel.name}\n{head}{text}")
    return "\n".join(parts)
