"""Programs as MLIR text in mlir-tcp's op names and assembly formats (``tcpr opt --emit mlir``).

Each func is a ``func.func``; a symbolic dim is ``?`` in types, named by ``tcp.symbolic_int`` and
bound to the parameters by ``tcp.bind_symbolic_shape`` (as mlir-tcp records symbolic shapes),
and read where an op needs it with ``tensor.dim`` (arithmetic on dims with ``arith``). A fused
kernel, ``kernel(...)`` with its tensors read by ``load``, is a ``tcp.isolated_group`` whose block
arguments are those tensors, so fusion decisions are visible. Ops mlir-tcp has are written as it
writes them; the ops of our table it lacks (exp, max, reduce_sum, matmul, ...) as ``tcpr.<op>``
in the same style, their dims attributes as index operand groups (``shape(%d0, %c4)``).
Reading the text back (importer.py, tcp.py) gives the same program.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tcp_rules.diagnostics import TcpError
from tcp_rules.frontends.mlir.attrs import MLIR_ELEMENT
from tcp_rules.frontends.mlir.tcp import BINARY, UNARY
from tcp_rules.ir import Apply, Func, Module, Param, Value
from tcp_rules.ops import AttrKind
from tcp_rules.types import DenseData, Dim, DType, TensorType


def mlir_type(t: TensorType) -> str:
    """``f32[N, 4]`` as ``tensor<?x4xf32>``."""
    dims = "".join(f"{d.const if d.const is not None else '?'}x" for d in t.dims)
    return f"tensor<{dims}{MLIR_ELEMENT[t.dtype]}>"


def scalar_text(v: Any, dtype: DType) -> str:
    """A scalar as an MLIR literal of ``dtype`` (non-finite floats as bit patterns)."""
    if dtype is DType.I1 or isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    if dtype.is_float:
        f = float(v)
        if not math.isfinite(f):
            store = DType.F64 if dtype is DType.F64 else DType.F32
            bits = np.array([f], dtype=store.np_dtype).view(f"u{store.itemsize}")[0]
            return f"0x{int(bits):0{2 * store.itemsize}X}"
        text = repr(f)
        mant, _, exp = text.partition("e")
        return (mant if "." in mant else mant + ".0") + (f"e{exp}" if exp else "")
    return str(int(v))


def _dense_text(arr: np.ndarray, dtype: DType) -> str:
    if arr.ndim == 0:  # written as raw data: a bare dense<v> would read back as a splat
        raw = np.ascontiguousarray(arr.astype(dtype.np_dtype)).tobytes()
        return f'dense<"0x{raw.hex().upper()}">'

    def nest(a: np.ndarray) -> str:
        if a.ndim == 0:
            return scalar_text(a.item(), dtype)
        return "[" + ", ".join(nest(x) for x in a) + "]"
    return f"dense<{nest(arr)}>"


class _Scope:
    """The values one region can name: its tensors, and the index values made in it."""

    def __init__(self, printer: _Printer, indent: str) -> None:
        self.p, self.indent = printer, indent
        self.names: dict[int, str] = {}  # id(value) -> SSA name
        self.index: dict[Dim, str] = {}
        # symbol -> (tensor name, axis, its MLIR type, k): the axis is k * symbol
        self.sources: dict[str, tuple[str, int, str, int]] = {}

    def add_source(self, name: str, t: TensorType) -> None:
        """Where this scope reads its symbols: ``t``'s axes of size s or k * s (k > 0)."""
        for axis, d in enumerate(t.dims):
            if len(d.terms) == 1 and len(d.terms[0][0]) == 1 and d.terms[0][1] > 0:
                (sym,), k = d.terms[0]
                old = self.sources.get(sym)
                if old is None or old[3] > k:  # a plain s rather than k * s
                    self.sources[sym] = (name, axis, mlir_type(t), k)

    def line(self, text: str) -> None:
        self.p.lines.append(self.indent + text)

    def dim(self, d: Dim) -> str:
        """An index value holding ``d`` (made here on first use)."""
        if d in self.index:
            return self.index[d]
        c, s = d.const, d.symbol
        if c is not None:
            name = self.p.fresh(f"c{c}" if c >= 0 else f"c_neg{-c}")
            self.line(f"%{name} = arith.constant {c} : index")
        elif s is not None:
            if s not in self.sources:
                raise TcpError.at(f"cannot write dim {s} in MLIR: no argument has an axis of "
                                  f"size {s} or k*{s}", stage="export")
            tensor, axis, typ, k = self.sources[s]
            name = self.p.fresh(f"dim_{s}")
            self.line(f"%{name} = tensor.dim %{tensor}, %{self.dim(Dim.of(axis))} : {typ}")
            if k != 1:  # the axis is k * s
                whole, name = name, self.p.fresh(f"dim_{s}")
                self.line(f"%{name} = arith.divui %{whole}, %{self.dim(Dim.of(k))} : index")
        else:
            total: str | None = None
            for mono, coeff in d.terms:
                term = self.dim(Dim.of(coeff)) if coeff != 1 or not mono else None
                for sym in mono:
                    factor = self.dim(Dim.of(sym))
                    term = factor if term is None else self._op("muli", term, factor)
                assert term is not None
                total = term if total is None else self._op("addi", total, term)
            assert total is not None
            name = total
        self.index[d] = name
        return name

    def _op(self, op: str, a: str, b: str) -> str:
        name = self.p.fresh("idx")
        self.line(f"%{name} = arith.{op} %{a}, %{b} : index")
        return name


class _Printer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.used: set[str] = set()
        self.count = 0

    def number(self) -> str:
        """The next numbered SSA name (%0, %1, ...)."""
        while str(self.count) in self.used:
            self.count += 1
        self.used.add(str(self.count))
        return str(self.count)

    def fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name

    # values ------------------------------------------------------------------------------

    def value(self, v: Value, scope: _Scope) -> str:
        """The SSA name of ``v`` in ``scope``, printing the ops it needs first (iteratively:
        long chains never reach Python's recursion limit)."""
        stack: list[tuple[Value, bool]] = [(v, False)]
        while stack:
            u, ready = stack.pop()
            if id(u) in scope.names:
                continue
            if ready:
                scope.names[id(u)] = self._op(u, scope)
                continue
            stack.append((u, True))
            stack.extend((d, False) for d in reversed(_deps(u)) if id(d) not in scope.names)
        return scope.names[id(v)]

    def _op(self, v: Value, scope: _Scope) -> str:
        assert isinstance(v, Apply), "parameters are named before ops are printed"
        a, name = v.attr_map, v.op.name
        if name == "kernel":
            return self._group(v, scope)
        ins = [scope.names[id(o)] for o in v.operands]
        types = [mlir_type(o.type) for o in v.operands]
        out = mlir_type(v.type)
        res = self.number()
        sig = f"{', '.join(types)} -> {out}"
        args = ", ".join(f"%{x}" for x in ins)
        dt = v.operands[0].type.dtype if v.operands else v.type.dtype
        if name == "splat":
            return self._splat(v, scope, res)
        if name == "dense":
            data: DenseData = a["value"]
            lit = _dense_text(data.array.reshape(tuple(int(d.const or 0) for d in v.type.dims)),
                              v.type.dtype)
            scope.line(f"%{res} = tcp.const {{value = {lit} : {out}}} : {out}")
        elif name in UNARY or name in BINARY:
            scope.line(f"%{res} = tcp.{name} {args} : {sig}")
        elif name == "div":
            op = "divf" if dt.is_float else "divui" if dt.is_unsigned else "divsi"
            mode = "" if dt.is_float else " {rounding_mode = #tcp<roundingMode Trunc>}"
            scope.line(f"%{res} = tcp.{op} {args}{mode} : {sig}")
        elif name == "clamp":
            kind, typ = ("float", "f32") if dt.is_float else ("int", "i64")
            bounds = [f"{k}_{kind} = {scalar_text(a[k], DType.F32 if dt.is_float else dt)}"
                      f" : {typ}" for k in ("min", "max") if a.get(k) is not None]
            scope.line(f"%{res} = tcp.clamp {args} {{{', '.join(bounds)}}} : {sig}")
        elif name == "cast":
            attrs = [f"{side}_int_signedness = #tcp<signedness {_signedness(t)}>"
                     for side, t in (("in", dt), ("out", v.type.dtype)) if not t.is_float]
            attr_text = f" {{{', '.join(attrs)}}}" if attrs else ""
            scope.line(f"%{res} = tcp.cast {args}{attr_text} : {sig}")
        elif name == "slice":
            groups = [f"{k}({', '.join('%' + scope.dim(Dim.of(d)) for d in a[ours])})"
                      for k, ours in (("starts", "start"), ("sizes", "size"),
                                      ("strides", "stride"))]
            scope.line(f"%{res} = tcp.slice {args} {' '.join(groups)} : {sig}")
        elif name == "gather" and v.operands[0].type.rank == 1:
            scope.line(f"%{res} = tcp.gather {args} {{dim = {a['axis']} : index}} : {sig}")
        elif name == "concat":  # as mlir-tcp writes it since it removed tcp.concat
            scope.line(f"%{res} = tensor.concat dim({a['axis']}) {args} : "
                       f"({', '.join(types)}) -> {out}")
        elif name == "broadcast" and _tcp_broadcast(v):
            src, dst = v.operands[0].type.dims, v.type.dims
            axes = [i for i, (x, y) in enumerate(zip(src, dst, strict=True)) if x != y]
            sizes = "".join(f", %{scope.dim(dst[i])}" for i in axes)
            scope.line(f"%{res} = tcp.broadcast {args}{sizes} {{axes = {list(axes)}}} : "
                       f"{types[0]}{', index' * len(axes)} -> {out}")
        else:
            self._extension(v, scope, res, args, sig)
        return res

    def _splat(self, v: Apply, scope: _Scope, res: str) -> str:
        """A static splat is a tcp.const; a symbolic one, a size-1 const broadcast."""
        a, t = v.attr_map, v.type
        lit = scalar_text(a["value"], t.dtype)
        if all(d.const is not None for d in t.dims):
            scope.line(f"%{res} = tcp.const {{value = dense<{lit}> : {mlir_type(t)}}} : "
                       f"{mlir_type(t)}")
            return res
        ones = TensorType(t.dtype, tuple(Dim.of(1) for _ in t.dims))
        one = self.fresh("splat")
        scope.line(f"%{one} = tcp.const {{value = dense<{lit}> : {mlir_type(ones)}}} : "
                   f"{mlir_type(ones)}")
        axes = [i for i, d in enumerate(t.dims) if d != Dim.of(1)]
        sizes = "".join(f", %{scope.dim(t.dims[i])}" for i in axes)
        scope.line(f"%{res} = tcp.broadcast %{one}{sizes} {{axes = {axes}}} : "
                   f"{mlir_type(ones)}{', index' * len(axes)} -> {mlir_type(t)}")
        return res

    def _extension(self, v: Apply, scope: _Scope, res: str, args: str, sig: str) -> None:
        """An op mlir-tcp lacks: tcpr.<op>, dims attributes as index groups."""
        groups, attrs = [], []
        dt = v.operands[0].type.dtype if v.operands else v.type.dtype
        for spec in v.op.attrs:
            val = v.attr_map.get(spec.name)
            if val is None:
                continue
            match spec.kind:
                case AttrKind.DIMS:
                    groups.append(f"{spec.name}({', '.join('%' + scope.dim(d) for d in val)})")
                case AttrKind.INTS:
                    attrs.append(f"{spec.name} = {list(val)}")
                case AttrKind.BOOL:
                    attrs.append(f"{spec.name} = {'true' if val else 'false'}")
                case AttrKind.SCALAR:
                    typ = dt if not dt.is_storage_float else DType.F32
                    attrs.append(f"{spec.name} = {scalar_text(val, typ)} : {MLIR_ELEMENT[typ]}")
                case AttrKind.NAME:
                    attrs.append(f'{spec.name} = "{val}"')
                case AttrKind.DTYPE:
                    attrs.append(f"{spec.name} = {MLIR_ELEMENT[val]}")
                case _:
                    attrs.append(f"{spec.name} = {val}")
        head = " ".join(x for x in (args, " ".join(groups)) if x)
        attr_text = f" {{{', '.join(attrs)}}}" if attrs else ""
        scope.line(f"%{res} = tcpr.{v.op.name} {head}{attr_text} : {sig}")

    def _group(self, k: Apply, scope: _Scope) -> str:
        """``kernel(body)`` as a tcp.isolated_group over the tensors the body loads."""
        body = k.operands[0]
        inside = _body_values(body)
        loaded = _loaded(inside)
        need = {s for u in inside for s in u.type.symbols} | {
            s for u in inside if isinstance(u, Apply) for _, val in u.attrs
            if isinstance(val, tuple) for d in val if isinstance(d, Dim) for s in d.symbols}
        have = {s for t in loaded for s in t.type.symbols}
        for s in sorted(need - have):  # a dim no loaded tensor has: read from a parameter
            loaded.extend(p for p in self.params if s in p.type.symbols and p not in loaded)
        res = self.number()
        inner = _Scope(self, scope.indent + "  ")
        args: list[str] = []
        for t in loaded:
            b = self.fresh(f"b{len(args)}")
            inner.names[id(t)] = b
            args.append(f"%{b}: {mlir_type(t.type)}")
            inner.add_source(b, t.type)
        for u in inside:
            if isinstance(u, Apply) and u.op.name == "load":
                inner.names[id(u)] = inner.names[id(u.operands[0])]
        start = len(self.lines)
        outer_in = ", ".join(f"%{scope.names[id(t)]}" for t in loaded)
        types = ", ".join(mlir_type(t.type) for t in loaded)
        inner.line(f"^bb0({', '.join(args)}):")
        inner.indent += "  "
        out = self.value(body, inner)
        inner.line(f"tcp.yield %{out} : {mlir_type(body.type)}")
        group = self.lines[start:]
        del self.lines[start:]
        scope.line(f"%{res} = tcp.isolated_group {outer_in} {{")
        self.lines.extend(group)
        scope.line(f"}} : {types} -> {mlir_type(k.type)}")
        return res

    # funcs -------------------------------------------------------------------------------

    def func(self, f: Func) -> None:
        self.params: Sequence[Param] = f.params
        self.used = {p.param for p in f.params}
        sig = ", ".join(f"%{p.param}: {mlir_type(p.type)}" for p in f.params)
        rt = [mlir_type(t) for t in f.result_types]
        results = rt[0] if len(rt) == 1 else f"({', '.join(rt)})"
        self.lines.append(f"func.func @{f.name}({sig}) -> {results} {{")
        scope = _Scope(self, "  ")
        for p in f.params:
            scope.names[id(p)] = p.param
            scope.add_source(p.param, p.type)
        self._bind_symbols(f, scope)
        outs = [self.value(r, scope) for r in f.results]
        scope.line(f"return {', '.join('%' + o for o in outs)} : {', '.join(rt)}")
        self.lines.append("}")

    def _bind_symbols(self, f: Func, scope: _Scope) -> None:
        """Name the symbolic dims (tcp.symbolic_int) and bind them to the parameters (affine
        dims: sums of multiples of symbols; a parameter with a product of symbols is not
        bound)."""
        syms: dict[str, str] = {}
        for p in f.params:
            for s in sorted(p.type.symbols):
                if s not in syms:
                    syms[s] = self.fresh(f"sym_{s}")
                    scope.line(f'%{syms[s]} = tcp.symbolic_int "{s}" '
                               f"{{min_val = 0, max_val = 9223372036854775807}} : i64")
        for p in f.params:
            named = sorted(p.type.symbols, key=list(syms).index)
            if not named or any(len(m) > 1 for d in p.type.dims for m, _ in d.terms):
                continue
            local = {s: f"s{i}" for i, s in enumerate(named)}
            exprs = ", ".join(_affine(d, local) for d in p.type.dims)
            scope.line(f"tcp.bind_symbolic_shape %{p.param}, "
                       f"[{', '.join('%' + syms[s] for s in named)}], "
                       f"affine_map<()[{', '.join(local.values())}] -> ({exprs})> : "
                       f"{mlir_type(p.type)}")


def _affine(d: Dim, local: dict[str, str]) -> str:
    """An affine dim as MLIR writes it: ``s0``, ``s0 * 2 + 1``, ``4``."""
    parts = []
    for mono, coeff in d.terms:
        if not mono:
            parts.append(str(coeff))
        else:
            parts.append(local[mono[0]] if coeff == 1 else f"{local[mono[0]]} * {coeff}")
    return " + ".join(parts) if parts else "0"


def _body_values(body: Value) -> list[Value]:
    """The values of a kernel body: down to its loads, not past them."""
    seen: dict[int, Value] = {}
    stack = [body]
    while stack:
        u = stack.pop()
        if id(u) in seen:
            continue
        seen[id(u)] = u
        if isinstance(u, Apply) and u.op.name not in ("load", "load_matmul"):
            stack.extend(u.operands[:1] if u.op.name == "load_matmul_rows" else u.operands)
    return list(seen.values())


def _loaded(inside: Sequence[Value]) -> list[Value]:
    """The tensors a kernel body reads, in a stable order (first read first)."""
    out: list[Value] = []
    for u in reversed(inside):
        if isinstance(u, Apply) and u.op.name in ("load", "load_matmul", "load_matmul_rows"):
            read = u.operands[1:] if u.op.name == "load_matmul_rows" else u.operands  # B only
            out.extend(o for o in read if all(o is not x for x in out))
    return out


def _deps(v: Value) -> list[Value]:
    """What must be named before ``v`` is printed: a kernel needs the tensors it loads."""
    if not isinstance(v, Apply):
        return []
    if v.op.name == "kernel":
        return _loaded(_body_values(v.operands[0]))
    if v.op.name in ("load", "load_matmul"):
        return []  # inside a group: its operands are the group's block arguments
    if v.op.name == "load_matmul_rows":
        return [v.operands[0]]  # its A is in the group, its B a block argument
    return list(v.operands)


def _signedness(t: DType) -> str:
    return "Signless" if t is DType.I1 else "Unsigned" if t.is_unsigned else "Signed"


def _tcp_broadcast(v: Apply) -> bool:
    """The broadcasts mlir-tcp's tcp.broadcast writes: same rank, size-1 axes expanded."""
    src, dst = v.operands[0].type.dims, v.type.dims
    a = v.attr_map
    return (len(src) == len(dst) and tuple(a["dims"]) == tuple(range(len(dst)))
            and any(x != y for x, y in zip(src, dst, strict=True))
            and all(x == y or x == Dim.of(1) for x, y in zip(src, dst, strict=True)))


def export_func(f: Func) -> str:
    """One func as a ``func.func``."""
    p = _Printer()
    p.func(f)
    return "\n".join(p.lines) + "\n"


def export_module(m: Module) -> str:
    """Every func of the module, one ``func.func`` after another."""
    return "\n".join(export_func(f) for f in m.funcs)
