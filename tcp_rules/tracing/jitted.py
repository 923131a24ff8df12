"""``@tcp_rules.jit``: trace a NumPy-style function per signature, optimize, compile, cache.

A call's *signature* is, for each positional argument, its dtype and shape when it is an array
(``numpy.ndarray`` or a NumPy scalar: traced, a parameter of the program), or its type and value
otherwise (a Python number, a string, a tuple: static, passed to the function as it is), plus
every keyword argument by value (keywords are always static). The first call with a signature
traces the function into a TCP program (tcp_rules.numpy records the ops), optimizes it with the
standard rules (the pipeline's optimize stage) and compiles it to one native call
(codegen.runtime.CompiledFunc); later calls with that signature look the compiled program up and
call it.

Dims are concrete (the call's sizes) unless ``symbolic`` names some: ``symbolic={"x": ("N",
None)}`` makes axis 0 of parameter ``x`` the symbolic dim ``N``, so one program serves every
size of that axis (dims that name the same symbol must be equal at run time).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcp_rules.diagnostics import TcpError
from tcp_rules.ir import Func, Value
from tcp_rules.tracing.array import TracedArray, as_traced
from tcp_rules.tracing.context import Trace, current, tracing, user_span
from tcp_rules.types import Dim, DType, TensorType

if TYPE_CHECKING:  # loaded on the first call: importing tcp_rules stays cheap
    from tcp_rules.codegen.runtime import CompiledFunc
    from tcp_rules.egraph.report import RunReport
    from tcp_rules.optimize import OptOptions

_ARRAYS = (np.ndarray, np.generic)  # traced arguments (a tuple: isinstance's fastest form)
_KEYWORDS = frozenset({"inf", "nan", "true", "false", "func", "return"})


@dataclass
class Specialization:
    """One signature's program: as traced, as optimized, the optimizer's report, the compiled
    program, and the seconds each step took."""

    traced: Func
    program: Func
    report: RunReport | None
    compiled: CompiledFunc
    arrays: tuple[int, ...]  # positions of the traced arguments
    single: bool  # the function returned one array, not a tuple
    all_arrays: bool  # every argument is traced (the call passes them on as they are)
    seconds: dict[str, float] = field(default_factory=dict)


class Jitted:
    """A function traced, optimized and compiled per signature (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], *, threads: int | None = None,
                 allow: Sequence[str] = ("exact", "approx"), optimize: bool = True,
                 rules: Sequence[str | Path] = (),
                 symbolic: Mapping[str, Sequence[str | None]] | None = None,
                 options: OptOptions | None = None):
        self.fn, self.threads, self.allow = fn, threads, tuple(allow)
        self.options = options
        self.optimize, self.rules = optimize, tuple(rules)
        self.symbolic = dict(symbolic or {})
        self.name: str = getattr(fn, "__name__", "f")
        self.names = _param_names(fn)
        unknown = set(self.symbolic) - set(self.names)
        if unknown:
            raise TcpError.at(f"symbolic names no parameter of {fn.__name__}: "
                              f"{', '.join(sorted(unknown))}")
        self.report: RunReport | None = None  # the optimizer's report of the last compile
        self._specs: dict[Any, Specialization] = {}
        self._traced: dict[Any, tuple[Func, tuple[int, ...], bool]] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The hot path of every later call: the signature, one dict lookup, the native call.
        key = self._signature(args, kwargs)
        try:
            spec = self._specs.get(key)
        except TypeError:  # an unhashable static argument
            spec = None
        if spec is None:
            if current() is not None and any(isinstance(a, TracedArray) for a in args):
                return self.fn(*args, **kwargs)  # called while tracing another: inlined
            spec = self._specialize(self._checked(key), args, kwargs)
        arrays = args if spec.all_arrays else [args[i] for i in spec.arrays]
        for a in arrays:
            if not a.flags.c_contiguous or type(a) is not np.ndarray:
                arrays = [_contiguous(b) for b in arrays]
                break
        out = spec.compiled(*arrays)
        return out[0] if spec.single else out

    def lower(self, *args: Any, optimized: bool = False, **kwargs: Any) -> Func:
        """The program the function traces to with these arguments (printable with
        tcp_rules.printer.print_func); ``optimized``: the program that runs."""
        key = self._checked(self._signature(args, kwargs))
        if optimized:
            return self.specialization(*args, **kwargs).program
        return self._trace(key, args, kwargs)[0]

    def specialization(self, *args: Any, **kwargs: Any) -> Specialization:
        """The traced, optimized and compiled program of these arguments' signature."""
        key = self._checked(self._signature(args, kwargs))
        return self._specs.get(key) or self._specialize(key, args, kwargs)

    @property
    def signatures(self) -> int:
        """How many signatures have been compiled."""
        return len(self._specs)

    # signatures --------------------------------------------------------------------------

    def _signature(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        parts: list[Any]
        if self.symbolic:
            parts = [(a.dtype, self._dims(i, a.shape)) if isinstance(a, _ARRAYS)
                     else (type(a), a) for i, a in enumerate(args)]
        else:
            parts = [(a.dtype, a.shape) if isinstance(a, _ARRAYS) else (type(a), a)
                     for a in args]
        if kwargs:
            parts.append(tuple(sorted(kwargs.items())))
        return tuple(parts)

    def _checked(self, key: Any) -> Any:
        try:
            hash(key)
        except TypeError:
            raise TcpError.at(f"{self.name}: a static argument is not hashable (arrays "
                              f"are traced only as NumPy arrays in positional arguments)",
                              stage="trace") from None
        return key

    def _dims(self, i: int, shape: tuple[int, ...]) -> tuple[int | str, ...]:
        sym = self.symbolic.get(self.names[i]) if i < len(self.names) else None
        if sym is None:
            return shape
        if len(sym) != len(shape):
            raise TcpError.at(f"symbolic gives {len(sym)} dims for parameter "
                              f"'{self.names[i]}', which has {len(shape)}", stage="trace")
        return tuple(s if s is not None else n for s, n in zip(sym, shape, strict=True))

    # tracing, optimizing, compiling ----------------------------------------------------

    def _trace(self, key: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
               ) -> tuple[Func, tuple[int, ...], bool]:
        got = self._traced.get(key)
        if got is not None:
            return got
        trace = Trace(_identifier(self.name, ()))
        taken: set[str] = set()
        call_args: list[Any] = []
        arrays: list[int] = []
        for i, (a, part) in enumerate(zip(args, key, strict=False)):
            if not isinstance(a, np.ndarray | np.generic):
                call_args.append(a)
                continue
            dt = DType.from_numpy(a.dtype)
            name = _identifier(self.names[i] if i < len(self.names) else f"arg{i}", taken)
            if dt is None:
                raise TcpError.at(f"argument '{name}' has dtype {a.dtype}, which TCP does not "
                                  f"support", user_span(), stage="trace")
            taken.add(name)
            p = trace.builder.param(name, TensorType(dt, tuple(Dim.of(d) for d in part[1])))
            call_args.append(TracedArray(p))
            arrays.append(i)
        with tracing(trace):
            out = self.fn(*call_args, **kwargs)
            single = not isinstance(out, tuple | list)
            results = [_result(r) for r in ([out] if single else out)]
        if not results:
            raise TcpError.at(f"{self.name} returned no arrays", stage="trace")
        trace.builder.ret(*results)
        got = (trace.builder.finish(), tuple(arrays), single)
        self._traced[key] = got
        return got

    def _specialize(self, key: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
                    ) -> Specialization:
        with self._lock:
            spec = self._specs.get(key)
            if spec is not None:
                return spec
            t0 = time.perf_counter()
            traced, arrays, single = self._trace(key, args, kwargs)
            t1 = time.perf_counter()
            program, report = self._optimized(traced)
            t2 = time.perf_counter()
            from tcp_rules.codegen.runtime import compile_func

            compiled = compile_func(program, threads=self.threads)
            t3 = time.perf_counter()
            spec = Specialization(traced, program, report, compiled, arrays, single,
                                  len(arrays) == len(args),
                                  {"trace": t1 - t0, "optimize": t2 - t1, "compile": t3 - t2})
            self._specs[key] = spec
            self.report = report
            return spec

    def _optimized(self, func: Func) -> tuple[Func, RunReport | None]:
        if not self.optimize:
            return func, None
        from tcp_rules.optimize import OptOptions
        from tcp_rules.pipeline import optimize_func
        from tcp_rules.rules.library import load_standard_library, load_with_standard_library

        rules = (load_with_standard_library(self.rules)[0] if self.rules
                 else load_standard_library()).rules
        options = OptOptions(allow=self.allow) if self.options is None else \
            dataclasses.replace(self.options, allow=self.allow)
        result = optimize_func(func, rules, options)
        return result.func, result.report


def jit(fn: Callable[..., Any] | None = None, *, threads: int | None = None,
        allow: Sequence[str] = ("exact", "approx"), optimize: bool = True,
        rules: Sequence[str | Path] = (),
        symbolic: Mapping[str, Sequence[str | None]] | None = None,
        options: OptOptions | None = None) -> Any:
    """Trace ``fn`` (written with tcp_rules.numpy) per signature, optimize and compile it.

    ``threads``: native threads for large kernels (default: $TCPR_THREADS or the CPUs);
    ``allow``: the rules' soundness classes the optimizer may use; ``optimize=False`` compiles
    the program as traced; ``rules``: rule files used beside the standard library;
    ``symbolic``: per parameter, a symbol name (or None) for each axis; ``options``: the
    optimizer's other options (limits, extractor, schedule; ``allow`` replaces its classes).
    Use as ``@jit`` or ``@jit(threads=2)``. A jitted function called while another is traced
    is inlined into it.
    """
    def wrap(f: Callable[..., Any]) -> Jitted:
        return Jitted(f, threads=threads, allow=allow, optimize=optimize, rules=rules,
                      symbolic=symbolic, options=options)

    return wrap if fn is None else wrap(fn)


def _contiguous(a: np.ndarray | np.generic) -> np.ndarray:
    """``a`` as a C-contiguous ndarray of its own shape (NumPy scalars as 0-d arrays)."""
    arr = np.asarray(a)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _param_names(fn: Callable[..., Any]) -> list[str]:
    """The names of ``fn``'s positional parameters (arrays take them as parameter names)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _identifier(name: str, taken: set[str] | tuple[()]) -> str:
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "f"
    if not (base[0].isalpha() or base[0] == "_") or base in _KEYWORDS:
        base = "f_" + base
    out, n = base, 1
    while out in taken:
        n += 1
        out = f"{base}_{n}"
    return out


def _result(r: Any) -> Value:
    if isinstance(r, TracedArray):
        return r.value
    if isinstance(r, bool | int | float):
        raise TcpError.at(f"the function returned the Python number {r!r}, which has no dtype "
                          f"(return an array)", stage="trace")
    if isinstance(r, np.ndarray | np.generic):
        return as_traced(np.asarray(r)).value
    raise TcpError.at(f"the function returned a {type(r).__name__}; a jitted function returns "
                      f"arrays or a tuple of arrays", stage="trace")
