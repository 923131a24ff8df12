"""The checked entry: one native call that checks a call's inputs and runs the program.

A Python-level check costs little when warm, but a program's kernels stream megabytes through
the caches and the TLB between two calls, and each Python operation afterwards pays for that:
measured on an Emerald Rapids VM, checking and passing a 1-kernel program's inputs took ~40 us
of a call's ~75 us of host time (validation, contiguity flags, the slots array, the arena),
where the same work run warm takes a few. So a call whose inputs have the shapes and dtypes of
the call before takes one native call, ``tcpr_call(sig, objs, times)``: ``objs`` is the tuple
(inputs..., results..., arena), read as NumPy lays its arrays out; ``sig`` holds what the inputs
must be (exact ndarray type, dtype object, rank, dims, C-contiguous and aligned), with ``out=``
what the caller's result arrays must be too (the same, writeable, and sharing no byte with an
input or another result), and what ``tcpr_run`` needs (program.py). A mismatch returns the
index of the first object that differs (counting from 1) before any kernel runs, and the caller
takes the checked Python path, which accepts new shapes or raises the error a user should see.

The object layout (PyObject head, PyArrayObject_fields, PyTupleObject items) is NumPy's and
CPython's public C-level layout; :func:`abi` reads it back from live objects at start-up and
turns the entry off if anything is not where it should be.
"""

from __future__ import annotations

import ctypes
import math
import sys
from collections.abc import Sequence
from functools import cache

import numpy as np

from tcp_rules.codegen.program import ALIGN

# NumPy's flags and its PyArrayObject_fields, as offsets after the object head (ndarraytypes.h)
C_CONTIGUOUS, ALIGNED, WRITEABLE = 0x1, 0x100, 0x400
DATA, NDIM, DIMS, DESCR, FLAGS = 0, 8, 16, 40, 48
# The sig table's header (int64 words); each checked object's expectations follow: dtype,
# rank, bytes, written, dims.
POOL, PROG, THREADS, NSTEPS, CLOCK, NCHECK, NOBJ, ITEMS, HEAD, NDARRAY = range(10)
HEADER = 10

CallFn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)


@cache
def abi() -> tuple[int, int] | None:
    """(object head bytes, offset of a tuple's first item) when live objects show the layout
    the entry reads, else None (the entry is not used). Each address is read only after the
    fields before it matched, so a different layout is never followed as a pointer."""
    if sys.implementation.name != "cpython":  # elsewhere id() need not be an address
        return None
    head, items = object.__basicsize__, tuple.__basicsize__
    a = np.zeros((2, 3), np.float32)
    v = a[:, ::2]
    t = (a, v)

    def word(addr: int, ty: type = ctypes.c_void_p) -> int:
        return ty.from_address(addr).value or 0  # type: ignore[attr-defined]

    try:
        return (head, items) if (
            word(id(t) + items) == id(a) and word(id(t) + items + 8) == id(v)
            and word(id(a) + head - 8) == id(np.ndarray)
            and word(id(a) + head + DATA) == a.ctypes.data
            and word(id(a) + head + NDIM, ctypes.c_int32) == 2
            and [word(word(id(a) + head + DIMS) + 8 * j, ctypes.c_int64) for j in (0, 1)]
            == [2, 3]
            and word(id(a) + head + DESCR) == id(a.dtype)
            and word(id(a) + head + FLAGS, ctypes.c_int32) & (C_CONTIGUOUS | ALIGNED)
            == C_CONTIGUOUS | ALIGNED
            and not word(id(v) + head + FLAGS, ctypes.c_int32) & C_CONTIGUOUS) else None
    except (ValueError, OverflowError):
        return None


Spec = tuple[np.dtype, tuple[int, ...], bool]  # dtype, shape, and whether the call writes it


def specs(arrays: Sequence[object]) -> list[Spec] | None:
    """What the entry must find for inputs like ``arrays``; None where one is not a plain
    C-contiguous aligned ndarray."""
    out: list[Spec] = []
    for a in arrays:
        if type(a) is not np.ndarray or not (a.flags.c_contiguous and a.flags.aligned):
            return None
        out.append((a.dtype, a.shape, False))
    return out


def signature(checked: Sequence[Spec], run: Sequence[int], nobj: int) -> np.ndarray | None:
    """The sig table for a call whose first objects are as ``checked`` says (None where the
    layout is unknown or a dtype is not NumPy's own object: the entry compares their ids);
    ``run`` is tcpr_run's (pool, prog, threads, nsteps, clock). A written object must also be
    writeable and share no byte with any object before it."""
    layout = abi()
    if layout is None:
        return None
    words = [*run, len(checked), nobj, layout[1], layout[0], id(np.ndarray)]
    for dt, shape, written in checked:
        if dt is not np.dtype(dt.type):
            return None
        words += [id(dt), len(shape), math.prod(shape) * dt.itemsize, int(written), *shape]
    return np.array(words, dtype=np.int64)


def call_ir() -> str:
    """``tcpr_call``: the text goes in the runtime's module, after program.runner_ir."""

    def word(name: str, index: int | str) -> str:
        return (f"  %{name}.p = getelementptr i64, ptr %sig, i64 {index}\n"
                f"  %{name} = load i64, ptr %{name}.p")

    def field(name: str, at: int, ty: str) -> str:
        return (f"  %{name}.o = add i64 %head, {at}\n"
                f"  %{name}.p = getelementptr i8, ptr %o, i64 %{name}.o\n"
                f"  %{name} = load {ty}, ptr %{name}.p")

    return f"""
define i64 @tcpr_call(ptr %sig, ptr %objs, ptr %times) nounwind {{
entry:
{word("pool", POOL)}
{word("prog", PROG)}
{word("threads", THREADS)}
{word("nsteps", NSTEPS)}
{word("clock", CLOCK)}
{word("nin", NCHECK)}
{word("nobj", NOBJ)}
{word("items", ITEMS)}
{word("head", HEAD)}
{word("ndarray", NDARRAY)}
  %slots = alloca i64, i64 %nobj
  %nbs = alloca i64, i64 %nobj
  %typeoff = sub i64 %head, 8
  br label %obj
obj:                                      ; every object's data pointer; the first nin checked
  %i = phi i64 [0, %entry], [%i1, %stored]
  %w = phi i64 [{HEADER}, %entry], [%wnext, %stored]
  %odone = icmp sge i64 %i, %nobj
  br i1 %odone, label %run, label %obj.body
obj.body:
  %ioff = mul i64 %i, 8
  %ioff1 = add i64 %items, %ioff
  %ip = getelementptr i8, ptr %objs, i64 %ioff1
  %o = load ptr, ptr %ip
{field("data", DATA, "i64")}
  %isin = icmp slt i64 %i, %nin
  br i1 %isin, label %check, label %notin
check:
  %tp = getelementptr i8, ptr %o, i64 %typeoff
  %t = load i64, ptr %tp
  %tok = icmp eq i64 %t, %ndarray
{field("descr", DESCR, "i64")}
{field("nd32", NDIM, "i32")}
  %nd = sext i32 %nd32 to i64
{field("flags", FLAGS, "i32")}
{word("wdt", "%w")}
  %w1 = add i64 %w, 1
{word("wnd", "%w1")}
  %w2 = add i64 %w, 2
{word("nb", "%w2")}
  %w3 = add i64 %w, 3
{word("wr", "%w3")}
  %dok = icmp eq i64 %descr, %wdt
  %nok = icmp eq i64 %nd, %wnd
  %fl = and i32 %flags, {C_CONTIGUOUS | ALIGNED}
  %fok = icmp eq i32 %fl, {C_CONTIGUOUS | ALIGNED}
  %ok1 = and i1 %tok, %dok
  %ok2 = and i1 %ok1, %nok
  %ok3 = and i1 %ok2, %fok
  %w4 = add i64 %w, 4
  br i1 %ok3, label %dims, label %fail
dims:
{field("dimsp", DIMS, "ptr")}
  br label %dim
dim:
  %j = phi i64 [0, %dims], [%j1, %dim.body]
  %jdone = icmp sge i64 %j, %nd
  br i1 %jdone, label %shaped, label %dim.body
dim.body:
  %dp = getelementptr i64, ptr %dimsp, i64 %j
  %d = load i64, ptr %dp
  %wj = add i64 %w4, %j
{word("want", "%wj")}
  %j1 = add i64 %j, 1
  %dimok = icmp eq i64 %d, %want
  br i1 %dimok, label %dim, label %fail
shaped:                                   ; a written object: writeable, overlapping nothing
  %nbp = getelementptr i64, ptr %nbs, i64 %i
  store i64 %nb, ptr %nbp
  %written = icmp ne i64 %wr, 0
  br i1 %written, label %writable, label %checked
writable:
  %wf = and i32 %flags, {WRITEABLE}
  %wok = icmp ne i32 %wf, 0
  %end = add i64 %data, %nb
  br i1 %wok, label %apart, label %fail
apart:
  %k = phi i64 [0, %writable], [%k1, %apart.next]
  %kdone = icmp sge i64 %k, %i
  br i1 %kdone, label %checked, label %apart.body
apart.body:
  %skp = getelementptr i64, ptr %slots, i64 %k
  %sk = load i64, ptr %skp
  %nkp = getelementptr i64, ptr %nbs, i64 %k
  %nk = load i64, ptr %nkp
  %ek = add i64 %sk, %nk
  %lo = icmp ult i64 %data, %ek
  %hi = icmp ult i64 %sk, %end
  %both = and i1 %lo, %hi
  %some = icmp ne i64 %nb, 0
  %somek = icmp ne i64 %nk, 0
  %sizes = and i1 %some, %somek
  %overlap = and i1 %both, %sizes
  %k1 = add i64 %k, 1
  br i1 %overlap, label %fail, label %apart.next
apart.next:
  br label %apart
checked:
  %wnext.in = add i64 %w4, %nd
  br label %stored
notin:                                    ; results, then the arena (aligned as layout wants)
  %last = sub i64 %nobj, 1
  %isarena = icmp eq i64 %i, %last
  %neg = sub i64 0, %data
  %pad = and i64 %neg, {ALIGN - 1}
  %aligned = add i64 %data, %pad
  %addr.out = select i1 %isarena, i64 %aligned, i64 %data
  br label %stored
stored:
  %addr = phi i64 [%data, %checked], [%addr.out, %notin]
  %wnext = phi i64 [%wnext.in, %checked], [%w, %notin]
  %sp = getelementptr i64, ptr %slots, i64 %i
  store i64 %addr, ptr %sp
  %i1 = add i64 %i, 1
  br label %obj
fail:
  %bad = add i64 %i, 1
  ret i64 %bad
run:
  %pp = inttoptr i64 %pool to ptr
  %gp = inttoptr i64 %prog to ptr
  %clk = trunc i64 %clock to i32
  call void @tcpr_run(ptr %pp, ptr %gp, ptr %slots, i64 %threads, i64 0, i64 %nsteps,
                      ptr %times, i32 %clk)
  ret i64 0
}}
"""
