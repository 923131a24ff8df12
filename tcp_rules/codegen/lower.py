"""Lowering a typed func to a plan of kernels.

Every value is either *materialized* (written to a buffer by a kernel) or *inline* (a template that
rebuilds its scalar expression at whatever index its consumer reads it). Which ops share a loop
nest is decided by the program, not here: the e-graph's fusion rules and cost model choose
``kernel(body)`` terms (ops/fusion.py), and each ``kernel`` becomes one loop nest in which its
body is inline (``load`` reads a materialized tensor). Every op outside a kernel body gets a
kernel of its own, except the views: broadcasts, transposes and slices are indexing maps, never
copies, and reshapes reinterpret a materialized buffer. A matmul whose body consumers are
elementwise becomes a matmul kernel with those ops as its epilogue (bias, activation). Constants
are constants of the loop nests that read them, views and exactly rounded ops of constants too
(FOLDED): a scale computed in the graph never runs as a kernel.

Inside a body, a broadcast of a computed value is inline when the loops it adds are nested inside
the operand's own (its value is hoisted, computed once per outer point, as a row softmax's sum);
otherwise the operand is materialized rather than recomputed per element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tcp_rules.codegen.chain import fuse_row_products
from tcp_rules.codegen.kernel import (
    MATMUL_DTYPES,
    Acc,
    Affine,
    Buffer,
    ClampIndex,
    Const,
    Kernel,
    Load,
    MatmulKernel,
    Node,
    Op,
    PadIndex,
    Reduce,
    Size,
    Strided,
)
from tcp_rules.codegen.padding import pad_reader
from tcp_rules.codegen.plan import Plan, PlanBuffer, Step
from tcp_rules.codegen.rowpass import fuse_row_passes
from tcp_rules.codegen.siblings import fuse_siblings
from tcp_rules.codegen.strides import has_view, operand_layout, write_through_copies
from tcp_rules.ir import Apply, Func, Value
from tcp_rules.ops.fusion import MATMULS, broadcast_hoists
from tcp_rules.ops.movement import literal_array
from tcp_rules.sorts import Sort
from tcp_rules.types import Dim, DType, dims_product

MAX_FUSED_OPS = 48  # bounds kernel size (and recursion in node hashing)
Index = tuple[Affine | Node, ...]
Template = Callable[["KB", Index], Node]
REDUCE_KIND = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max",
               "reduce_min": "min"}


class _Refuse(Exception):
    """An inline value cannot be used where it was read; materialize it and rebuild."""

    def __init__(self, value: Value):
        super().__init__(value)
        self.value = value


# Ops folded where every operand is a constant: IEEE's correctly rounded ones (rsqrt is 1 /
# sqrt(x) in both), which NumPy's reference and the compiled code compute alike (algebra's
# div-const leaves div(1.0, c), rsqrt-def rsqrt(c)).
FOLDED = frozenset({"add", "sub", "mul", "div", "neg", "abs", "sqrt", "rsqrt"})


@dataclass
class Src:
    """How a value is read: from buffer ``buf`` or, when None, inline via ``template``; the
    value of a constant (a splat, and views and folded ops of splats) in ``const``."""

    buf: int | None
    template: Template
    ops: int = 0
    const: Const | None = None
    # A value that becomes a buffer only when one is asked for (buf_of): a reshape, so that a
    # reshape only a matmul reads through never makes its operand materialize (matmul_bufs).
    lazy: Callable[[], Src] | None = None


class KB:
    """Collects one kernel's buffers, size parameters and reduction variables."""

    def __init__(self, plan: Plan, domain: tuple[Dim, ...], allow_acc: bool = True):
        self.plan = plan
        self.bufs: list[int] = []
        self.sizes: dict[Dim, str] = {}
        self.nvars = 0
        self.domain = domain
        self.identity = tuple(Affine.var(f"d{i}") for i in range(len(domain)))
        self.matmul: Apply | None = None
        self.allow_acc = allow_acc
        self.reducing = 0
        self.memo: dict[tuple[int, Index], Node] = {}  # a value read twice at one index: once
        # Whether some load has computed indices (gather, pad), which a matmul epilogue
        # cannot vectorize: such a kernel materializes its matmul instead.
        self.computed_index = False

    def buf(self, pid: int) -> int:
        if pid not in self.bufs:
            self.bufs.append(pid)
        return self.bufs.index(pid)

    def size(self, d: Dim) -> Size:
        if d.const is not None:
            return d.const
        return self.sizes.setdefault(d, f"s{len(self.sizes)}")

    def var(self) -> str:
        self.nvars += 1
        return f"r{self.nvars - 1}"

    def buffer(self, pid: int, name: str) -> Buffer:
        pb = self.plan.buffers[pid]
        return Buffer(name, pb.dtype, tuple(self.size(d) for d in pb.dims))

    def step(self, name: str, value: Node, out: int, out_index: tuple[Affine, ...] | None,
             operand_bufs: Callable[[Apply], OperandBufs]) -> Step:
        """The step running this kernel; a matmul's operands become its first buffers."""
        if self.matmul is not None:
            a, b = self.matmul.operands
            m, kk, n = (self.size(d) for d in (a.type.dims[-2], a.type.dims[-1],
                                                b.type.dims[-1]))
            ob = operand_bufs(self.matmul)
            pids = list(dict.fromkeys([ob.a, ob.b, *self.bufs]))
            value = _rebuffer(value, {i: pids.index(p) for i, p in enumerate(self.bufs)})
            self.bufs = pids
        bufs = (*(self.buffer(p, f"in{i}") for i, p in enumerate(self.bufs)),
                self.buffer(out, "out"))
        k: Kernel | MatmulKernel
        if self.matmul is not None:
            k = MatmulKernel(name, bufs, tuple(self.sizes.values()),
                             self.matmul.type.rank == 3, m, kk, n, value, ob.b_t, ob.a_at,
                             ob.b_at)
        else:
            dom = tuple(self.size(d) for d in self.domain)
            units = next((i for i, d in enumerate(dom[:-1]) if d != 1), max(len(dom) - 1, 0))
            k = Kernel(name, bufs, tuple(self.sizes.values()), dom, value, out_index, units)
        return Step(k, (*self.bufs, out), tuple(self.sizes))


def _swaps_last_two(v: Value) -> bool:
    """Whether ``v`` is a transpose of its operand's last two axes."""
    r = v.type.rank
    return (isinstance(v, Apply) and v.op.name == "transpose"
            and list(v.attr_map["perm"]) == [*range(r - 2), r - 1, r - 2])


@dataclass(frozen=True)
class Sources:
    """What a matmul kernel reads for its operands (:func:`matmul_sources`)."""

    a: Value
    b: Value
    b_t: bool = False  # B read transposed from b, stored [batch,] n, k
    b_shape: tuple[Dim, ...] | None = None  # the shape b is read as (None: its own)
    a_at: Strided | None = None  # where a strided operand lies in the tensor given
    b_at: Strided | None = None


@dataclass(frozen=True)
class OperandBufs:
    """The buffers of a matmul kernel's operands and how it reads them."""

    a: int
    b: int
    b_t: bool
    a_at: Strided | None
    b_at: Strided | None


def matmul_sources(v: Apply) -> Sources:
    """The tensors a matmul kernel reads for ``v``'s operands. A transpose of B's last two axes
    is folded into packing B (attention's QK^T, ONNX's Gemm with transB), so it never runs as a
    kernel of its own; so is one under a reshape that keeps those two axes (ONNX's multi-head
    K^T, its heads folded into the batch), B's source then read reshaped. Other reshapes and
    transposes of a stored tensor (heads split out of a projection) are read in place with
    strides (strides.operand_layout)."""
    a, b = (Lowerer.tensor_of(o) for o in v.operands)
    a_at = None
    if (got := operand_layout(a)) is not None:
        a, a_at = got

    def strided() -> Sources | None:
        for b_t in (False, True):
            if (got := operand_layout(b, transposed=b_t)) is not None:
                return Sources(a, got[0], b_t, a_at=a_at, b_at=got[1])
        return None
    # K or V shared by heads (grouped-query attention): a broadcast read at stride 0
    if has_view(b, ("broadcast",)) and (found := strided()) is not None:
        return found
    if _swaps_last_two(b):
        assert isinstance(b, Apply)
        return Sources(a, Lowerer.tensor_of(b.operands[0]), True, a_at=a_at)
    if isinstance(b, Apply) and b.op.name == "reshape":
        t = Lowerer.tensor_of(b.operands[0])
        if _swaps_last_two(t) and t.type.dims[-2:] == b.type.dims[-2:]:
            assert isinstance(t, Apply)
            return Sources(a, Lowerer.tensor_of(t.operands[0]), True, (
                *b.type.dims[:-2], b.type.dims[-1], b.type.dims[-2]), a_at)
    return strided() or Sources(a, b, a_at=a_at)


def _rebuffer(n: Node, remap: dict[int, int]) -> Node:
    """``n`` with load buffer indices renumbered (the matmul operands come first)."""
    memo: dict[int, Node] = {}

    def go(x: Node) -> Node:
        if id(x) in memo:
            return memo[id(x)]
        match x:
            case Load(buf=b, index=idx, mask=m, other=o):
                r: Node = Load(x.dtype, remap[b], tuple(go(i) if isinstance(i, Node) else i
                                                         for i in idx),
                               None if m is None else go(m), None if o is None else go(o))
            case Op(op=op, args=args, attrs=attrs):
                r = Op(x.dtype, op, tuple(go(a) for a in args), attrs)
            case ClampIndex(value=v, extent=e):
                r = ClampIndex(x.dtype, go(v), e)
            case Reduce(kind=k, vars=vs, body=body):
                r = Reduce(x.dtype, k, vs, go(body))
            case _:
                r = x
        memo[id(x)] = r
        return r
    return go(n)


class Lowerer:
    """Builds the plan of one func."""

    def __init__(self, func: Func):
        self.func = func
        self.plan = Plan(func)
        self.src: dict[int, Src] = {}
        self.values: dict[int, Value] = {}
        self.count = 0
        self.reshaped: dict[tuple[int, tuple[Dim, ...]], int] = {}  # views made for matmuls

    def run(self) -> Plan:
        for p in self.func.params:
            pid = self.plan.add_buffer(PlanBuffer(p.type.dtype, p.type.dims, "param",
                                                  param=p.index))
            self.src[id(p)] = self._buffer_src(pid, p.type.dtype)
        # a load_matmul_rows' A is written where the program computes it, as a kernel term
        # would be: its step right after what it reads, so that rowpass.py can fuse it into
        # the product before it and chain.py the load_matmul_rows into both
        rows_a = {id(v.operands[0]) for v in self.func.values()
                  if isinstance(v, Apply) and v.op.name == "load_matmul_rows"}
        for v in self.func.values():
            self.values[id(v)] = v
            if isinstance(v, Apply):
                self.src[id(v)] = self.lower(v)
                if id(v) in rows_a:
                    self.buf_of(v)
        claimed: set[int] = set()  # buffers that are results' storage
        for r in self.func.results:
            if self.src[id(r)].lazy is not None:
                self.buf_of(r)
            s = self.src[id(r)]
            root = self._temp_root(s)
            if s.buf is not None and root is not None and root not in claimed:
                pid = s.buf
            else:
                root = pid = self.plan.add_buffer(PlanBuffer(r.type.dtype, r.type.dims, "temp"))
                self.emit(r, s, pid, "copy")
            claimed.add(root)
            self.plan.results.append(pid)
        for pid in claimed:
            self.plan.buffers[pid].kind = "result"
        return self.plan

    def _temp_root(self, s: Src) -> int | None:
        """The temporary holding a result's value: its own buffer, or the base of a reshape of
        one (an imported graph's last Reshape), which is then written straight into the result
        array. None where the value must be copied there (a param, a constant, inline)."""
        if s.buf is None:
            return None
        root = self.plan.root(s.buf)
        return root if self.plan.buffers[root].kind == "temp" else None

    # Sources -----------------------------------------------------------------------------------

    def _buffer_src(self, pid: int, dtype: DType) -> Src:
        return Src(pid, lambda kb, idx: Load(dtype, kb.buf(pid), idx))

    def buf_of(self, v: Value) -> int:
        """The buffer holding ``v``, materializing it first if it is inline."""
        s = self.src[id(v)]
        if s.buf is None:
            s = s.lazy() if s.lazy is not None else self.materialize(v, s)
            self.src[id(v)] = s
        assert s.buf is not None
        return s.buf

    def materialize(self, v: Value, s: Src) -> Src:
        pid = self.plan.add_buffer(PlanBuffer(v.type.dtype, v.type.dims, "temp"))
        op = v.op.name if isinstance(v, Apply) else "copy"
        self.emit(v, s, pid, op)
        return self._buffer_src(pid, v.type.dtype)

    def emit(self, v: Value, s: Src, out: int, label: str,
             shift: Sequence[tuple[int, Dim]] = ()) -> None:
        """Append a step writing ``s`` over v's shape into buffer ``out``.

        ``shift`` (axis, offset) pairs write at an offset along those axes (concat, pad).
        """
        for _ in range(len(self.values) + 2):  # each retry materializes one more value
            kb = KB(self.plan, v.type.dims, allow_acc=not shift)
            try:
                value = s.template(kb, kb.identity)
            except _Refuse as r:
                if self.src[id(r.value)].buf is not None:
                    raise AssertionError(f"{r.value} refused although materialized") from None
                self.buf_of(r.value)
                continue
            break
        else:
            raise AssertionError("lowering did not converge")
        out_index = None
        if shift:
            offsets = dict(shift)
            out_index = tuple(a + Affine.of(kb.size(offsets[i])) if i in offsets else a
                              for i, a in enumerate(kb.identity))
        self.count += 1
        step = kb.step(f"{self.func.name}_{label}{self.count}", value, out, out_index,
                       self.matmul_bufs)
        step.value = v if label != "copy" else None
        self.plan.steps.append(step)

    def inline_ok(self, v: Apply, ops: int) -> bool:
        """A body value is inline in its kernel; a tensor op runs as a kernel of its own."""
        return v.sort is not Sort.TENSOR and ops <= MAX_FUSED_OPS

    # Ops ---------------------------------------------------------------------------------------

    def lower(self, v: Apply) -> Src:
        name, at, dt = v.op.name, v.attr_map, v.type.dtype
        srcs = [self.src[id(o)] for o in v.operands]
        if name == "splat":
            return _const_src(Const(dt, _scalar(at["value"], dt)))
        consts = [s.const for s in srcs if s.const is not None]
        if srcs and len(consts) == len(srcs) and (
                name in ("broadcast", "transpose", "slice", "reshape")
                or (name in FOLDED and dt in (DType.F32, DType.F64))):
            return _const_src(self.fold(v, consts))
        if name == "dense":
            data = np.ascontiguousarray(literal_array(at["value"].array, dt))
            pid = self.plan.add_buffer(PlanBuffer(dt, v.type.dims, "const", data=data))
            return self._buffer_src(pid, dt)
        if name == "load":
            return Src(None, self._reader(v.operands[0]))
        if name == "kernel":
            body = self.src[id(v.operands[0])]
            if _from_indices(v.operands[0]):
                # computed from the loop indices alone (a gather's window positions): inline
                # where it is read, affine there, where a buffer would be streamed from memory
                # (materialized on demand: buf_of)
                return Src(None, body.template, body.ops)
            return self.materialize(v, body)
        if name in ("broadcast", "transpose", "slice"):
            return self.view(v)
        if name == "reshape":
            def view() -> Src:
                base = self.plan.root(self.buf_of(v.operands[0]))
                return self._buffer_src(self.plan.add_buffer(PlanBuffer(
                    dt, v.type.dims, "view", base=base)), dt)

            def tmpl(kb: KB, idx: Index) -> Node:
                made = self.src[id(v)]  # (this Src may be a stale copy: read the current one)
                if made.buf is None:
                    raise _Refuse(v)  # read: make the view (lazy), then read it
                return made.template(kb, idx)
            return Src(None, tmpl, lazy=view)
        if name == "concat":
            return self.concat(v)
        if name == "gather":
            return self.gather(v)
        if name == "iota":
            return self.iota(v)
        if name == "pad":
            return self.pad(v)
        if name in REDUCE_KIND:
            s = Src(None, lambda kb, idx: self.reduce(kb, v, idx), 1 + srcs[0].ops)
            return s if self.inline_ok(v, s.ops) else self.materialize(v, s)
        if name in MATMULS and (dt not in MATMUL_DTYPES or _vector_product(v)):
            ops = 2 + sum(s.ops for s in srcs)
            s = Src(None, lambda kb, idx: self.matmul_loop(kb, v, idx), ops)
            return s if self.inline_ok(v, ops) else self.materialize(v, s)
        if name in MATMULS:
            bufs = self.matmul_bufs(v)
            if name == "load_matmul_rows":  # A's step: chain.py runs this one inside it
                self.plan.by_rows.add(self.plan.root(bufs.a))
            s = Src(None, lambda kb, idx: self.acc(kb, v, idx), ops=1)
            return s if self.inline_ok(v, 1) else self.materialize(v, s)
        ops = 1 + sum(s.ops for s in srcs)
        attrs = tuple((k, a) for k, a in v.attrs)
        args = v.operands
        s = Src(None, lambda kb, idx: Op(dt, name, tuple(self.read(o, kb, idx) for o in args),
                                         attrs), ops)
        return s if self.inline_ok(v, ops) else self.materialize(v, s)

    @staticmethod
    def fold(v: Apply, args: list[Const]) -> Const:
        """``v`` on constant operands, by the op table's reference (views keep the value)."""
        if v.op.name not in FOLDED:
            return args[0]
        arrays = [np.array(a.value, dtype=o.type.dtype.np_dtype)
                  for a, o in zip(args, v.operands, strict=True)]
        with np.errstate(all="ignore"):  # inf and NaN fold as IEEE gives them
            got = v.op.reference(arrays, v.attr_map, v.type)
        return Const(v.type.dtype, _scalar(np.asarray(got).reshape(-1)[0].item(), v.type.dtype))

    def matmul_bufs(self, v: Apply) -> OperandBufs:
        """The buffers a matmul kernel for ``v`` reads (matmul_sources); a source read
        reshaped gets a view of its buffer (made once)."""
        src = matmul_sources(v)
        pa = self._regrouped_a(v)
        pa = self.buf_of(src.a) if pa is None else pa  # (A first: steps keep the program's order)
        pb = self.buf_of(src.b)
        if src.b_shape is not None:
            pb = self._view(pb, src.b.type.dtype, src.b_shape)
        return OperandBufs(pa, pb, src.b_t, src.a_at, src.b_at)

    def _regrouped_a(self, v: Apply) -> int | None:
        """A load_matmul_rows' A regrouped to its ``shape``: a view of A's buffer (None where
        the shape is A's own, or ``v`` is another matmul)."""
        a, shape = v.operands[0], v.attr_map.get("shape")
        if shape is None or tuple(shape) == a.type.dims:
            return None
        return self._view(self.buf_of(a), a.type.dtype, tuple(shape))

    def _view(self, pid: int, dtype: DType, shape: tuple[Dim, ...]) -> int:
        """A view of buffer ``pid``'s storage with ``shape`` (made once)."""
        key = (pid, shape)
        if key not in self.reshaped:
            self.reshaped[key] = self.plan.add_buffer(PlanBuffer(
                dtype, shape, "view", base=self.plan.root(pid)))
        return self.reshaped[key]

    @staticmethod
    def tensor_of(v: Value) -> Value:
        """The tensor a body reads when ``v`` is a plain load of it (matmul operands)."""
        if isinstance(v, Apply) and v.op.name == "load":
            return v.operands[0]
        return v

    def _reader(self, v: Value) -> Template:
        return lambda kb, idx: self.read(v, kb, idx)

    def read(self, v: Value, kb: KB, idx: Index) -> Node:
        """v's scalar at ``idx``, however v is currently available (built once per kernel, so
        a row reduction used twice, as a softmax's max, is computed once)."""
        key = (id(v), idx)
        if key not in kb.memo:
            kb.memo[key] = self.src[id(v)].template(kb, idx)
        return kb.memo[key]

    def view(self, v: Apply) -> Src:
        x, at = v.operands[0], v.attr_map
        ops = self.src[id(x)].ops
        if v.op.name == "broadcast":
            dims, shape = at["dims"], at["shape"]
            expands = dims_product(x.type.dims) != dims_product(shape)
            hoisted = v.sort is Sort.BODY and broadcast_hoists(x.type.dims, shape, dims)
            if expands and ops > 0 and not hoisted:  # never recompute per broadcast element
                self.buf_of(x)
                ops = 0
            keep = [x.type.dims[i] == shape[d] for i, d in enumerate(dims)]

            def tmpl(kb: KB, idx: Index) -> Node:
                return self.read(x, kb, tuple(idx[d] if keep[i] else Affine()
                                              for i, d in enumerate(dims)))
        elif v.op.name == "transpose":
            perm = list(at["perm"])

            def tmpl(kb: KB, idx: Index) -> Node:
                return self.read(x, kb, tuple(idx[perm.index(a)] for a in range(len(perm))))
        else:
            start, stride = at["start"], at["stride"]

            def tmpl(kb: KB, idx: Index) -> Node:
                out: list[Affine | Node] = []
                for i, st, sd in zip(idx, start, stride, strict=True):
                    assert isinstance(i, Affine)
                    out.append(i.scale(sd) + st)
                return self.read(x, kb, tuple(out))
        return Src(None, tmpl, ops)

    def reduce(self, kb: KB, v: Apply, idx: Index) -> Node:
        x, at = v.operands[0], v.attr_map
        axes, keep = sorted(at["axes"]), at["keepdims"]
        rvars = {a: kb.var() for a in axes}
        op_idx: list[Affine | Node] = []
        kept = 0
        for a in range(x.type.rank):
            if a in rvars:
                op_idx.append(Affine.var(rvars[a]))
            else:
                op_idx.append(idx[a] if keep else idx[kept])
                kept += 1
        kb.reducing += 1
        body = self.read(x, kb, tuple(op_idx))
        kb.reducing -= 1
        return Reduce(v.type.dtype, REDUCE_KIND[v.op.name],
                      tuple((rvars[a], kb.size(x.type.dims[a])) for a in axes), body)

    def matmul_loop(self, kb: KB, v: Apply, idx: Index) -> Node:
        """A matmul the microkernel does not handle, as a sum over k of products. f16 and bf16
        multiply and sum in f32 and round once, as the reference does; integers wrap."""
        a, b = v.operands
        k = kb.var()
        batch, kv = idx[:-2], Affine.var(k)
        kb.reducing += 1
        pa = self._regrouped_a(v)  # (read materialized, through a view)
        x: Node = (self.read(a, kb, (*batch, idx[-2], kv)) if pa is None
                   else Load(a.type.dtype, kb.buf(pa), (*batch, idx[-2], kv)))
        y = self.read(b, kb, (*batch, kv, idx[-1]))
        kb.reducing -= 1
        dt = v.type.dtype
        ct = dt.compute
        if ct is not dt:
            x, y = (Op(ct, "cast", (t,), (("to", ct),)) for t in (x, y))
        r: Node = Reduce(ct, "sum", ((k, kb.size(a.type.dims[-1])),), Op(ct, "mul", (x, y), ()))
        return r if ct is dt else Op(dt, "cast", (r,), (("to", dt),))

    def acc(self, kb: KB, v: Apply, idx: Index) -> Node:
        if (kb.reducing or not kb.allow_acc or kb.matmul not in (None, v) or idx != kb.identity
                or kb.domain != v.type.dims or kb.computed_index):
            raise _Refuse(v)
        kb.matmul = v
        return Acc(v.type.dtype)

    def concat(self, v: Apply) -> Src:
        axis = v.attr_map["axis"]
        pid = self.plan.add_buffer(PlanBuffer(v.type.dtype, v.type.dims, "temp"))
        offset = Dim.of(0)
        for o in v.operands:
            self.emit(o, Src(None, self._reader(o)), pid, "concat", shift=[(axis, offset)])
            offset = offset + o.type.dims[axis]
        return self._buffer_src(pid, v.type.dtype)

    def gather(self, v: Apply) -> Src:
        x, ind = v.operands
        axis, r = v.attr_map["axis"], ind.type.rank
        xs = self._buffer_src(self.buf_of(x), x.type.dtype)
        ext = x.type.dims[axis]

        def tmpl(kb: KB, idx: Index) -> Node:
            computed_index(kb, v)
            i = ClampIndex(DType.I64, self.read(ind, kb, idx[axis:axis + r]), kb.size(ext))
            return xs.template(kb, (*idx[:axis], i, *idx[axis + r:]))
        return Src(None, tmpl, 1 + self.src[id(ind)].ops)

    def iota(self, v: Apply) -> Src:
        """Each element's index along the axis, converted to the dtype: the index clamped into
        the axis (a no-op, the index being in it), as pad reads with edge mode."""
        axis, dt = v.attr_map["axis"], v.type.dtype
        ext = v.type.dims[axis]

        def tmpl(kb: KB, idx: Index) -> Node:
            computed_index(kb, v)  # (a matmul epilogue has no loop indices to read)
            i = PadIndex(DType.I64, idx[axis], 0, kb.size(ext), "edge")
            return i if dt is DType.I64 else Op(dt, "cast", (i,), (("to", dt),))
        return Src(None, tmpl, 1)

    def pad(self, v: Apply) -> Src:
        """Pad reads its materialized operand through computed indices (codegen/padding.py);
        a shape only known at run time is checked then (reflect needs low, high < size)."""
        x, at, dt = v.operands[0], v.attr_map, v.type.dtype
        xs = self._buffer_src(self.buf_of(x), x.type.dtype)
        if any(d.const is None for d in x.type.dims) and at["mode"] != "constant":
            self.plan.checks.append(v)
        value = _scalar(at["value"], dt)

        def tmpl(kb: KB, idx: Index) -> Node:
            computed_index(kb, v)
            read = pad_reader(lambda i: xs.template(kb, i), x.type.dims, at["low"], at["high"],
                              at["mode"], value, dt, kb.size)
            return read(idx)

        def written() -> Src:
            """A constant pad materialized: the value everywhere, then x over the interior
            through a shifted output map, both vectorized stores (reading through the pad's
            masked, clamped loads wrote 5 GB/s: ResNet-18's pads)."""
            pid = self.plan.add_buffer(PlanBuffer(dt, v.type.dims, "temp"))
            self.emit(v, _const_src(Const(dt, value)), pid, "pad")
            self.emit(x, Src(None, self._reader(x)), pid, "pad",
                      shift=[(i, Dim.of(lo)) for i, lo in enumerate(at["low"]) if lo])
            return self._buffer_src(pid, dt)
        return Src(None, tmpl, 1, lazy=written if at["mode"] == "constant" else None)


def _from_indices(body: Value) -> bool:
    """Whether a kernel body is computed from iotas and constants alone, by elementwise ops."""
    seen: set[int] = set()
    todo = [body]
    while todo:
        u = todo.pop()
        if id(u) in seen:
            continue
        seen.add(id(u))
        if not isinstance(u, Apply):
            return False
        name = u.op.name
        if name in ("iota", "splat"):
            continue
        if name != "load" and u.op.category not in ("unary", "binary", "compare", "cast"):
            return False
        todo.extend(u.operands)
    return True


def _vector_product(v: Apply) -> bool:
    """Whether matmul ``v`` multiplies by a vector: one row of A (M = 1) or one column of B
    (N = 1). Then the microkernel's panels of B are all overhead, and the loop form streams
    the matrix once: down its columns for a row (codegen/columns.py), along its rows for a
    column. A [1, 1024] x [1024, 4096] product took 3.3 ms as a microkernel, 0.96 ms this way
    (one thread, Zen 4; benchmarks/README.md)."""
    if v.op.name == "load_matmul_rows":  # its A is computed inside the kernel (chain.py)
        return False
    a, b = v.operands
    return a.type.dims[-2].const == 1 or b.type.dims[-1].const == 1


def _const_src(c: Const) -> Src:
    return Src(None, lambda kb, idx: c, const=c)


def computed_index(kb: KB, v: Apply) -> None:
    """Note a load through computed indices; a matmul epilogue cannot take one."""
    if kb.matmul is not None:
        raise _Refuse(v)
    kb.computed_index = True


def _scalar(value: float | int | bool, dt: DType) -> float | int | bool:
    if dt.is_float:
        return float(value)
    if dt.is_bool:
        return bool(value)
    return int(value)


def lower_func(func: Func) -> Plan:
    """The plan of kernels that computes ``func``."""
    if not func.results:
        raise ValueError(f"func {func.name} has no results")
    plan = Lowerer(func).run()
    write_through_copies(plan)
    fuse_row_passes(plan)
    fuse_row_products(plan)
    fuse_siblings(plan)
    return plan
