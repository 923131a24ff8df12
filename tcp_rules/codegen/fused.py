"""Hand-built fused kernels: what fusion (a later issue) will produce, built here by hand.

Each kernel computes a whole func in one loop nest and runs through the same emitter, JIT,
cache and runtime as lowered programs (``runtime.compile_kernel_func``):

- ``fma_relu_kernel``: relu(a * b + c), one pass over memory;
- ``softmax_kernel``: per row, a max reduction, an exp-sum reduction and the normalized output,
  the two reductions hoisted out of the column loop so each runs once per row;
- ``layernorm_kernel``: per row, the mean, the variance of the centered row and the scaled,
  shifted output, in the operation order of ``benchmarks/programs/layernorm.tcp``.
"""

from __future__ import annotations

from tcp_rules.codegen.kernel import Affine, Buffer, Const, Kernel, Load, Node, Op, Reduce
from tcp_rules.types import DType

F32 = DType.F32


def _op(name: str, *args: Node) -> Op:
    return Op(args[0].dtype, name, args)


def fma_relu_kernel(rank: int = 1) -> Kernel:
    """max(a * b + c, 0) over tensors of one shape (``N`` for rank 1, ``N, M`` for rank 2)."""
    shape = ("N", "M")[:rank]
    idx = tuple(Affine.var(f"d{i}") for i in range(rank))
    a, b, c = (Load(F32, i, idx) for i in range(3))
    value = _op("max", _op("add", _op("mul", a, b), c), Const(F32, 0.0))
    bufs = tuple(Buffer(n, F32, shape) for n in ("a", "b", "c", "out"))
    return Kernel("fma_relu", bufs, shape, shape, value)


def softmax_kernel() -> Kernel:
    """Row softmax of x: f32[N, D], max-subtracted (as examples/softmax.tcp)."""
    d0, d1 = Affine.var("d0"), Affine.var("d1")

    def x(col: Affine) -> Load:
        return Load(F32, 0, (d0, col))
    m = Reduce(F32, "max", (("r0", "D"),), x(Affine.var("r0")))
    total = Reduce(F32, "sum", (("r1", "D"),), _op("exp", _op("sub", x(Affine.var("r1")), m)))
    value = _op("div", _op("exp", _op("sub", x(d1), m)), total)
    bufs = (Buffer("x", F32, ("N", "D")), Buffer("out", F32, ("N", "D")))
    return Kernel("softmax", bufs, ("N", "D"), ("N", "D"), value)


def layernorm_kernel(width: int, eps: float = 1e-5) -> Kernel:
    """Layer normalization of x: f32[N, width] with gamma, beta: f32[width]."""
    d0, d1 = Affine.var("d0"), Affine.var("d1")
    n = Const(F32, float(width))

    def x(col: Affine) -> Load:
        return Load(F32, 0, (d0, col))
    mu = _op("div", Reduce(F32, "sum", (("r0", width),), x(Affine.var("r0"))), n)
    xc_r = _op("sub", x(Affine.var("r1")), mu)
    var = _op("div", Reduce(F32, "sum", (("r1", width),), _op("mul", xc_r, xc_r)), n)
    inv = _op("rsqrt", _op("add", var, Const(F32, eps)))
    y = _op("mul", _op("sub", x(d1), mu), inv)
    value = _op("add", _op("mul", y, Load(F32, 1, (d1,))), Load(F32, 2, (d1,)))
    bufs = (Buffer("x", F32, ("N", width)), Buffer("gamma", F32, (width,)),
            Buffer("beta", F32, (width,)), Buffer("out", F32, ("N", width)))
    return Kernel("layernorm", bufs, ("N",), ("N", width), value)
