"""The epilogue of a matmul (bias, activation...: the kernel's scalar body with ``Acc`` = the
product) evaluated on one VF-wide vector of the register tile, with masked loads for the columns
that exist."""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from tcp_rules.codegen.emit import BodyEmitter, KernelError
from tcp_rules.codegen.irbase import I32, I64, IR, PTR, mem_type, reg_type
from tcp_rules.codegen.kernel import Acc, Affine, Load, MatmulKernel, Size
from tcp_rules.codegen.storage import const_value, load_value, quantize
from tcp_rules.types import DType


class Epilogue(BodyEmitter):
    """Evaluates the epilogue on one VF-wide vector of the output tile."""

    def __init__(self, e: IR, k: MatmulKernel, args: list[ir.Value],
                 size: Callable[[Size], ir.Value], vf: int):
        super().__init__(e)
        self.k, self.args, self._size, self.vf = k, args, size, vf
        self.strides = []
        for buf in k.buffers:
            acc: ir.Value = ir.Constant(I64, 1)
            st: list[ir.Value] = []
            for s in reversed(buf.shape):
                st.append(acc)
                acc = e.b.mul(acc, size(s))
            self.strides.append(st[::-1])
        self.at: dict[str, ir.Value] = {}
        self.acc_value: ir.Value | None = None
        self.mask: ir.Value | None = None
        self.jvar = "d2" if k.batched else "d1"
        self.n: ir.Value = size(k.n)

    def size(self, s: Size) -> ir.Value:
        return self._size(s)

    def const(self, dt: DType, v: float | int | bool) -> ir.Value:
        return self.e.const(ir.VectorType(reg_type(dt), self.vf), const_value(dt, v))

    def acc(self, n: Acc) -> ir.Value:
        """The product, rounded to its dtype (an f16 product's f32 sum rounds once to f16, as
        the reference's does, before the epilogue's ops use it)."""
        assert self.acc_value is not None
        return quantize(self.e, self.acc_value, n.dtype)

    def _offset(self, buf: int, index: tuple[Affine, ...], j: ir.Value) -> ir.Value:
        b = self.e.b
        off: ir.Value = ir.Constant(I64, 0)
        for ix, st in zip(index, self.strides[buf], strict=True):
            v: ir.Value = ir.Constant(I64, ix.const)
            for name, c in (*ix.vars, *ix.sizes):
                term = j if name == self.jvar else (
                    self.at[name] if name in self.at else self.size(name))
                v = b.add(v, b.mul(term, ir.Constant(I64, c)))
            off = b.add(off, b.mul(v, st))
        return off

    def load(self, n: Load) -> ir.Value:
        b, e = self.e.b, self.e
        buf = self.k.buffers[n.buf]
        if not all(isinstance(i, Affine) for i in n.index):
            raise KernelError("data-dependent loads are not supported in a matmul epilogue")
        index = tuple(i for i in n.index if isinstance(i, Affine))
        ty, arg = mem_type(buf.dtype), self.args[n.buf]
        j0 = self.at[self.jvar]
        uses_j = [i for i, ix in enumerate(index) if ix.coeff(self.jvar)]
        if not uses_j:  # the same value for every lane
            v = e.splat(e.load(ty, e.gep(ty, arg, self._offset(n.buf, index, j0))), self.vf)
        elif uses_j == [buf.rank - 1] and index[-1].coeff(self.jvar) == 1:
            vt = ir.VectorType(ty, self.vf)
            ptr = e.gep(ty, arg, self._offset(n.buf, index, j0))
            align = ir.Constant(I32, buf.dtype.itemsize)
            v = e.intrinsic("masked.load", [ptr, align, self.mask, ir.Constant(vt, None)],
                            ret=vt, tys=[vt, PTR])
        else:  # a strided pattern: lane by lane, columns clamped into range
            vt = ir.VectorType(ty, self.vf)
            v = ir.Constant(vt, ir.Undefined)
            last = b.sub(self.n, ir.Constant(I64, 1))
            for lane in range(self.vf):
                j = f_min(e, b.add(j0, ir.Constant(I64, lane)), last)
                x = e.load(ty, e.gep(ty, arg, self._offset(n.buf, index, j)))
                v = b.insert_element(v, x, ir.Constant(I32, lane))
        return load_value(e, v, buf.dtype)


def f_min(e: IR, a: ir.Value, b: ir.Value) -> ir.Value:
    """Signed minimum of two i64 values."""
    return e.intrinsic("smin", [a, b])
